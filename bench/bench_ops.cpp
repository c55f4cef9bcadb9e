// Kernel benchmarks (Google Benchmark): element-wise, reductions, softmax, matmul, and a whole
// exported model imported and called. Run: build/bench/bench_ops [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <filesystem>

#include "kiln/kiln.h"

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
