// Element-wise fusion (src/core/fusion.*, src/backend/cpu/fusion.*): the bench suite's ewise_chain
// (bench/compare_child.py) unfused, fused through the members' kernels and fused through their tile
// functions, and a chain of cheap ops over tile sizes both ways, which shows the cost of one call per tile
// (the difference between tile sizes at equal work).
//   ./build/bench/bench_fusion --benchmark_filter=Chain
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backend/cpu/fusion.h"
#include "core/fusion.h"
#include "kiln/kiln.h"

namespace mx = kiln;

namespace {

mx::array normal(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return mx::array(v.data(), mx::Shape{n}, mx::float32);
}

// compare_child.py's ewise_chain: 32 element-wise ops, scalars included.
mx::array ewise_chain(const mx::array& x, const mx::array& y) {
  auto s = [](float v) { return mx::array(v); };
  mx::array a = mx::add(mx::multiply(x, s(1.5f)), y);
  mx::array b = mx::sin(a);
  mx::array c = mx::exp(mx::negative(mx::abs(b)));
  mx::array d = mx::subtract(mx::multiply(c, y), x);
  mx::array e = mx::tanh(d);
  mx::array f = mx::sqrt(mx::add(mx::abs(e), s(1.0f)));
  mx::array g = mx::multiply(mx::log(f), s(0.5f));
  mx::array h = mx::maximum(g, d);
  mx::array i = mx::add(mx::cos(h), mx::square(x));
  mx::array j = mx::sigmoid(i);
  mx::array k = mx::multiply(j, mx::subtract(s(1.0f), j));
  mx::array m = mx::where(mx::greater(x, s(0.0f)), k, mx::negative(k));
  mx::array n = mx::add(mx::minimum(m, s(0.25f)), mx::erf(y));
  mx::array o = mx::rsqrt(mx::add(mx::square(n), s(1.0f)));
  return mx::subtract(mx::multiply(o, a), b);
}

// range(0): 0 unfused, 1 fused through the kernels (KILN_FUSION_TILES=0), 2 fused through tile functions;
// range(1): elements.
void BM_FusionEwiseChain(benchmark::State& st) {
  const int mode = static_cast<int>(st.range(0));
  const int n = static_cast<int>(st.range(1));
  mx::array x = normal(n, 1), y = normal(n, 2);
  mx::eval({x, y});
  kiln::detail::fusion::set_enabled(mode != 0);
  kiln::cpu::set_tile_functions(mode == 2);
  for (auto _ : st) {
    mx::array r = ewise_chain(x, y);
    r.eval();
    benchmark::DoNotOptimize(r.data<float>());
  }
  kiln::cpu::set_tile_functions(true);
  kiln::detail::fusion::set_enabled(true);
  st.SetItemsProcessed(int64_t(st.iterations()) * n);
}
BENCHMARK(BM_FusionEwiseChain)
    ->ArgsProduct({{0, 1, 2}, {1 << 20, 1 << 24}})
    ->ArgNames({"mode", "n"})
    ->Unit(benchmark::kMillisecond);

// 30 cheap binary ops (add, multiply) on 4M floats, fused, per tile size (range(0); 0: unfused), through the
// kernels (range(1) 0) or through tile functions (1).
void BM_FusionCheapChainTile(benchmark::State& st) {
  const size_t tile = static_cast<size_t>(st.range(0));
  const int n = 1 << 22;
  mx::array x = normal(n, 3), y = normal(n, 4);
  mx::eval({x, y});
  kiln::detail::fusion::set_enabled(tile != 0);
  kiln::cpu::set_tile_elements(tile);
  kiln::cpu::set_tile_functions(st.range(1) != 0);
  for (auto _ : st) {
    mx::array a = x;
    for (int k = 0; k < 30; ++k) a = (k % 2) ? mx::add(a, y) : mx::multiply(a, y);
    a.eval();
    benchmark::DoNotOptimize(a.data<float>());
  }
  kiln::cpu::set_tile_functions(true);
  kiln::cpu::set_tile_elements(0);
  kiln::detail::fusion::set_enabled(true);
  st.SetItemsProcessed(int64_t(st.iterations()) * n * 30);
}
BENCHMARK(BM_FusionCheapChainTile)
    ->ArgsProduct({{0, 256, 1024, 4096, 16384}, {0, 1}})
    ->ArgNames({"tile", "fns"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
