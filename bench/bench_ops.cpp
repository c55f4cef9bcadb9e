// Kernel benchmarks (Google Benchmark): element-wise, reductions, softmax, matmul, and a whole
// exported model imported and called. Run: build/bench/bench_ops [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <filesystem>

#include "kiln/kiln.h"
#include "kiln/fast.h"

namespace mx = kiln;

namespace {

mx::array rand_like(mx::Shape shape, float phase = 0.0f) {
  int n = 1;
  for (int d : shape) n *= d;
  auto a = mx::reshape(mx::sin(mx::arange(0, n, mx::float32) * 0.731f + phase), shape);
  mx::eval(a);
  return a;
}

void BM_Add(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n}), b = rand_like({n}, 1.0f);
  for (auto _ : st) {
    auto c = a + b;
    c.eval();
    benchmark::DoNotOptimize(c.data<float>());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * n * 12);
}
BENCHMARK(BM_Add)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 24);

void BM_AddBroadcastRow(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n, n}), b = rand_like({n}, 1.0f);
  for (auto _ : st) {
    auto c = a + b;
    c.eval();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * n * n * 8);
}
BENCHMARK(BM_AddBroadcastRow)->Arg(1024)->Arg(4096);

void BM_AddTransposed(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n, n}), b = rand_like({n, n}, 1.0f);
  auto at = mx::transpose(a);
  for (auto _ : st) {
    auto c = at + b;
    c.eval();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * n * n * 12);
}
BENCHMARK(BM_AddTransposed)->Arg(1024)->Arg(4096);

void BM_Exp(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n});
  for (auto _ : st) {
    auto c = mx::exp(a);
    c.eval();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
}
BENCHMARK(BM_Exp)->Arg(1 << 20)->Arg(1 << 24);

void BM_SumLastAxis(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n, n});
  for (auto _ : st) {
    auto c = mx::sum(a, -1);
    c.eval();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * n * n * 4);
}
BENCHMARK(BM_SumLastAxis)->Arg(1024)->Arg(4096);

void BM_SumFirstAxis(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n, n});
  for (auto _ : st) {
    auto c = mx::sum(a, 0);
    c.eval();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * n * n * 4);
}
BENCHMARK(BM_SumFirstAxis)->Arg(1024)->Arg(4096);

void BM_Softmax(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n, n});
  for (auto _ : st) {
    auto c = mx::softmax(a, -1);
    c.eval();
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * n * n * 8);
}
BENCHMARK(BM_Softmax)->Arg(1024)->Arg(4096);

void BM_Matmul(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = rand_like({n, n}), b = rand_like({n, n}, 1.0f);
  for (auto _ : st) {
    auto c = mx::matmul(a, b);
    c.eval();
  }
  st.counters["GFLOPS"] = benchmark::Counter(2.0 * n * n * n * double(st.iterations()), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Matmul)->Arg(256)->Arg(1024)->Arg(2048);

// A 30-op element-wise chain, evaluated once per iteration: every op writes a fresh intermediate, so
// this measures the allocator as much as the kernels (issue 12, memory).
mx::array elementwise_chain(const mx::array& x, const mx::array& y) {
  auto a = mx::exp(x * 0.5f);                           // 1-2
  auto b = mx::log1p(mx::abs(y));                       // 3-4
  auto c = mx::tanh(a - b);                             // 5-6
  auto d = c * x + y;                                   // 7-8
  auto e = mx::sqrt(mx::abs(d));                        // 9-10
  auto f = 1.0f / (1.0f + mx::exp(mx::negative(e)));    // 11-14 (sigmoid-like)
  auto g = mx::maximum(f, c);                           // 15
  auto h = mx::minimum(g * 2.0f, a);                    // 16-17
  auto i = mx::sin(h) + mx::cos(b);                     // 18-20
  auto j = mx::square(i) - d;                           // 21-22
  auto k = mx::sigmoid(j);                              // 23
  auto l = mx::abs(k - 0.5f) * 3.0f;                    // 24-26
  auto m = mx::log1p(l) + mx::tanh(e);                  // 27-29
  return mx::maximum(m, mx::multiply(x, y));            // 30-31
}

void BM_ElementwiseChain(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto x = rand_like({n}), y = rand_like({n}, 1.0f);
  for (auto _ : st) {
    auto r = elementwise_chain(x, y);
    r.eval();
    benchmark::DoNotOptimize(r.data<float>());
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
}
BENCHMARK(BM_ElementwiseChain)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond);

void BM_ImportedMlp(benchmark::State& st) {
  auto w1 = rand_like({512, 2048}), w2 = rand_like({2048, 512}, 1.0f);
  auto f = [&](const mx::Args& a) {
    auto h = mx::maximum(mx::matmul(a[0], w1), mx::array(0.0f));
    return std::vector<mx::array>{mx::softmax(mx::matmul(h, w2), -1)};
  };
  auto x = rand_like({64, 512}, 2.0f);
  auto path = (std::filesystem::temp_directory_path() / "kiln_bench_mlp.mlxfn").string();
  mx::export_function(path, f, {x});
  auto g = mx::import_function(path);
  for (auto _ : st) {
    auto y = g({x});
    mx::eval(y);
  }
  std::filesystem::remove(path);
}
BENCHMARK(BM_ImportedMlp)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------- row kernels (issue 12, point 4)
// Rows of (rows, 4096) float32: Softmax, LogSumExp, RMSNorm, LayerNorm, and the decomposed RMSNorm and
// LayerNorm graphs MLX exports on the CPU (run as one fused node by the row pattern pass). bytes/s counts
// the input read once plus the output written once.

void BM_RowSoftmax(benchmark::State& st) {
  const int64_t r = st.range(0), d = 4096;
  auto x = rand_like({static_cast<int>(r), static_cast<int>(d)});
  for (auto _ : st) {
    auto y = mx::softmax(x, -1);
    y.eval();
    benchmark::DoNotOptimize(y.data<float>());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * r * d * 8);
}
BENCHMARK(BM_RowSoftmax)->Arg(256)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RowLogSumExp(benchmark::State& st) {
  const int64_t r = st.range(0), d = 4096;
  auto x = rand_like({static_cast<int>(r), static_cast<int>(d)});
  for (auto _ : st) {
    auto y = mx::logsumexp(x, -1);
    y.eval();
    benchmark::DoNotOptimize(y.data<float>());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * r * d * 4);
}
BENCHMARK(BM_RowLogSumExp)->Arg(256)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// range(1): 0 the fused op, 1 the decomposed graph.
void BM_RowRmsNorm(benchmark::State& st) {
  const int64_t r = st.range(0), d = 4096;
  auto x = rand_like({static_cast<int>(r), static_cast<int>(d)});
  auto w = rand_like({static_cast<int>(d)}, 1.0f);
  for (auto _ : st) {
    auto y = st.range(1) == 0
                 ? mx::fast::rms_norm(x, w, 1e-5f)
                 : mx::multiply(mx::multiply(x, mx::rsqrt(mx::add(mx::mean(mx::square(x), -1, true), mx::array(1e-5f)))), w);
    y.eval();
    benchmark::DoNotOptimize(y.data<float>());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * r * d * 8);
}
BENCHMARK(BM_RowRmsNorm)->Args({256, 0})->Args({4096, 0})->Args({4096, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RowLayerNorm(benchmark::State& st) {
  const int64_t r = st.range(0), d = 4096;
  auto x = rand_like({static_cast<int>(r), static_cast<int>(d)});
  auto w = rand_like({static_cast<int>(d)}, 1.0f), b = rand_like({static_cast<int>(d)}, 2.0f);
  for (auto _ : st) {
    mx::array y;
    if (st.range(1) == 0) {
      y = mx::fast::layer_norm(x, w, b, 1e-5f);
    } else {
      auto xc = mx::subtract(x, mx::mean(x, -1, true));
      y = mx::add(mx::multiply(mx::multiply(xc, mx::rsqrt(mx::add(mx::mean(mx::square(xc), -1, true), mx::array(1e-5f)))), w), b);
    }
    y.eval();
    benchmark::DoNotOptimize(y.data<float>());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * r * d * 8);
}
BENCHMARK(BM_RowLayerNorm)->Args({256, 0})->Args({4096, 0})->Args({4096, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RowAttention(benchmark::State& st) {
  const int T = static_cast<int>(st.range(0));
  auto q = rand_like({1, 8, T, 64}), k = rand_like({1, 8, T, 64}, 1.0f), v = rand_like({1, 8, T, 64}, 2.0f);
  for (auto _ : st) {
    auto o = mx::fast::scaled_dot_product_attention(q, k, v, 0.125f, "causal");
    o.eval();
    benchmark::DoNotOptimize(o.data<float>());
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * 8 * int64_t(T) * T);
}
BENCHMARK(BM_RowAttention)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- GEMM kernels (issue 12: decode / prefill matmuls) ----
// x (M×K) @ W.T with W (N×K) stored, the layout of nn.Linear in the llama files, in float32 and bfloat16.
// Args: M, K, N. Counters: GB/s of weights read (what bounds M = 1) and GFLOP/s (what bounds prefill).
void gemm_linear(benchmark::State& st, mx::Dtype t) {
  const int M = static_cast<int>(st.range(0)), K = static_cast<int>(st.range(1)), N = static_cast<int>(st.range(2));
  auto x = mx::astype(rand_like({M, K}), t);
  auto w = mx::astype(rand_like({N, K}, 0.5f), t);
  mx::eval(x);
  mx::eval(w);
  auto wt = mx::transpose(w);
  for (auto _ : st) {
    auto y = mx::matmul(x, wt);
    y.eval();
  }
  const double it = static_cast<double>(st.iterations());
  st.counters["GB/s"] = benchmark::Counter(it * N * K * static_cast<double>(mx::size_of(t)), benchmark::Counter::kIsRate,
                                           benchmark::Counter::kIs1000);
  st.counters["GFLOP/s"] = benchmark::Counter(it * 2.0 * M * N * K * 1e-9, benchmark::Counter::kIsRate);
}
void BM_GemvF32(benchmark::State& st) { gemm_linear(st, mx::float32); }
void BM_GemvBF16(benchmark::State& st) { gemm_linear(st, mx::bfloat16); }
void BM_SgemmF32(benchmark::State& st) { gemm_linear(st, mx::float32); }
void BM_SgemmBF16(benchmark::State& st) { gemm_linear(st, mx::bfloat16); }
void gemm_shapes(benchmark::internal::Benchmark* b, int M) {
  for (auto kn : {std::pair{1024, 1024}, {1024, 256}, {1024, 2816}, {2816, 1024}, {1024, 32000}}) {
    b->Args({M, kn.first, kn.second});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_GemvF32)->Apply([](benchmark::internal::Benchmark* b) { gemm_shapes(b, 1); });
BENCHMARK(BM_GemvBF16)->Apply([](benchmark::internal::Benchmark* b) { gemm_shapes(b, 1); });
BENCHMARK(BM_SgemmF32)->Apply([](benchmark::internal::Benchmark* b) { gemm_shapes(b, 128); });
BENCHMARK(BM_SgemmBF16)->Apply([](benchmark::internal::Benchmark* b) { gemm_shapes(b, 128); });
// Other row counts (small batches, the mlp case's 256 rows) against one weight shape.
BENCHMARK(BM_SgemmF32)->Args({16, 1024, 2816})->Args({32, 1024, 2816})->Args({64, 1024, 2816})->Args({256, 1024, 4096})->Args({256, 512, 512})->Args({256, 64, 256})->Args({128, 64, 128})->Args({128, 128, 64})->Args({128, 512, 512})->Args({64, 64, 128})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// x (M×K) @ W with W (K×N) stored (the other layout), float32, M = 1 and 4.
void BM_GemvF32KxN(benchmark::State& st) {
  const int M = static_cast<int>(st.range(0)), K = static_cast<int>(st.range(1)), N = static_cast<int>(st.range(2));
  auto x = rand_like({M, K}), w = rand_like({K, N}, 0.5f);
  for (auto _ : st) {
    auto y = mx::matmul(x, w);
    y.eval();
  }
  st.counters["GB/s"] = benchmark::Counter(static_cast<double>(st.iterations()) * N * K * 4.0,
                                           benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_GemvF32KxN)->Args({1, 1024, 2816})->Args({4, 2816, 1024})->Args({128, 1024, 1024})->Args({128, 1024, 2816})->Args({256, 256, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- Quantized matmul (issue 12, point 5) ----
// Decode-sized products x · Wᵀ with W quantized (4-bit affine, group 64 unless said), M rows of x.
// Bytes processed: the packed weights plus scales and biases, so bytes_per_second reads as the weight
// stream rate (compare with bench/machine_limits.c's read bandwidth).

struct QW {
  mx::array wq, s, b;
  int64_t bytes;
};

QW quantized_weight(int n, int k, mx::Dtype dt, int gs = 64, int bits = 4) {
  auto w = mx::astype(rand_like({n, k}, 0.3f) * 0.05f, dt);
  auto r = mx::quantize(w, gs, bits);
  mx::eval(r);
  return {r[0], r[1], r[2], int64_t(r[0].nbytes() + r[1].nbytes() + r[2].nbytes())};
}

void run_qmm(benchmark::State& st, mx::Dtype dt, int bits) {
  const int n = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1)), m = static_cast<int>(st.range(2));
  QW q = quantized_weight(n, k, dt, 64, bits);
  auto x = mx::astype(rand_like({m, k}, 1.0f), dt);
  mx::eval(x);
  for (auto _ : st) {
    auto y = mx::quantized_matmul(x, q.wq, q.s, q.b, true, 64, bits);
    y.eval();
    benchmark::DoNotOptimize(y.raw_data());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * q.bytes);
}

void BM_QuantizedMatmul(benchmark::State& st) { run_qmm(st, mx::float32, 4); }
void BM_QuantizedMatmulBf16(benchmark::State& st) { run_qmm(st, mx::bfloat16, 4); }
void BM_QuantizedMatmul8Bit(benchmark::State& st) { run_qmm(st, mx::float32, 8); }
// (N, K, M)
#define KILN_QMM_DECODE_SHAPES \
  Args({4096, 4096, 1})->Args({1024, 1024, 1})->Args({256, 1024, 1})->Args({2816, 1024, 1})->Args({1024, 2816, 1}) \
      ->Args({32000, 1024, 1})
BENCHMARK(BM_QuantizedMatmul)->KILN_QMM_DECODE_SHAPES->Args({4096, 4096, 4})->Args({4096, 4096, 8})
    ->Args({2816, 1024, 16})->Args({2816, 1024, 17})->Args({2816, 1024, 32})
    ->Args({2816, 1024, 128})->Args({1024, 2816, 128})->Args({32000, 1024, 128})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QuantizedMatmulBf16)->KILN_QMM_DECODE_SHAPES->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QuantizedMatmul8Bit)->Args({4096, 4096, 1})->Args({2816, 1024, 1})->UseRealTime()->Unit(benchmark::kMicrosecond);

// The float32 product of the same shape (x · Wᵀ, W dense): what a prefill-sized quantized product costs
// beyond its GEMM.
void BM_QuantizedMatmulFloatEquivalent(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1)), m = static_cast<int>(st.range(2));
  auto w = rand_like({n, k}, 0.3f), x = rand_like({m, k}, 1.0f);
  auto wt = mx::transpose(w);
  for (auto _ : st) {
    auto y = mx::matmul(x, wt);
    y.eval();
    benchmark::DoNotOptimize(y.raw_data());
  }
  st.counters["GFLOPS"] = benchmark::Counter(2.0 * n * k * m * double(st.iterations()), benchmark::Counter::kIsRate,
                                             benchmark::Counter::kIs1000);
}
BENCHMARK(BM_QuantizedMatmulFloatEquivalent)->Args({2816, 1024, 128})->Args({1024, 2816, 128})->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// The QuantizedMatmul calls of one llama decode step (the shapes of the llama_q4_decode case: 8 layers
// of q, k, v, o 1024/256 x 1024, gate and up 2816 x 1024, down 1024 x 2816, then the 32000 x 1024 head),
// each evaluated on its own as the graph does; float32 x, M = st.range(0).
void BM_QuantizedMatmulLlamaDecode(benchmark::State& st) {
  const int m = static_cast<int>(st.range(0));
  const int shapes[][2] = {{1024, 1024}, {256, 1024}, {256, 1024}, {1024, 1024}, {2816, 1024}, {2816, 1024},
                           {1024, 2816}};
  std::vector<QW> ws;
  for (int l = 0; l < 8; ++l) {
    for (auto& s : shapes) ws.push_back(quantized_weight(s[0], s[1], mx::float32));
  }
  ws.push_back(quantized_weight(32000, 1024, mx::float32));
  auto x1 = rand_like({m, 1024}, 1.0f), x2 = rand_like({m, 2816}, 2.0f);
  int64_t bytes = 0;
  for (auto& q : ws) bytes += q.bytes;
  for (auto _ : st) {
    for (auto& q : ws) {
      const auto& x = q.wq.shape()[1] * 8 == 1024 ? x1 : x2;
      auto y = mx::quantized_matmul(x, q.wq, q.s, q.b, true, 64, 4);
      y.eval();
      benchmark::DoNotOptimize(y.raw_data());
    }
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * bytes);
}
BENCHMARK(BM_QuantizedMatmulLlamaDecode)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Vector math (issue 12 point 3, src/backend/cpu/vmath.h): element-wise math on 1M and 16M float32
// elements, items/s = elements per second of wall time (UseRealTime: the kernels run on all cores).
// KILN_CPU_ISA=scalar|avx2 runs the lower levels.

mx::array positive_like(mx::Shape shape) { return mx::abs(rand_like(shape)) + 0.01f; }

#define KILN_BENCH_UNARY(Name, expr, input)                           \
  void Name(benchmark::State& st) {                                   \
    int n = static_cast<int>(st.range(0));                            \
    auto a = input;                                                   \
    mx::eval(a);                                                      \
    for (auto _ : st) {                                               \
      auto c = expr;                                                  \
      c.eval();                                                       \
    }                                                                 \
    st.SetItemsProcessed(int64_t(st.iterations()) * n);               \
  }                                                                   \
  BENCHMARK(Name)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();
KILN_BENCH_UNARY(BM_Log, mx::log(a), positive_like({n}))
KILN_BENCH_UNARY(BM_Tanh, mx::tanh(a), rand_like({n}) * 3.0f)
KILN_BENCH_UNARY(BM_Sin, mx::sin(a), rand_like({n}) * 10.0f)
KILN_BENCH_UNARY(BM_Erf, mx::erf(a), rand_like({n}))
KILN_BENCH_UNARY(BM_Sigmoid, mx::sigmoid(a), rand_like({n}))
KILN_BENCH_UNARY(BM_Log1p, mx::log1p(a), positive_like({n}))
#undef KILN_BENCH_UNARY

// BM_Pow: a tensor exponent; BM_PowScalar: x ** 1.5 (a one-element exponent).
void BM_Pow(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = positive_like({n}), b = rand_like({n}, 1.0f);
  mx::eval(a, b);
  for (auto _ : st) {
    auto c = mx::power(a, b);
    c.eval();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
}
BENCHMARK(BM_Pow)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PowScalar(benchmark::State& st) {
  int n = static_cast<int>(st.range(0));
  auto a = positive_like({n});
  mx::eval(a);
  for (auto _ : st) {
    auto c = mx::power(a, mx::array(1.5f));
    c.eval();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
}
BENCHMARK(BM_PowScalar)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
