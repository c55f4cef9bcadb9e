// Concurrency (issue 6): one imported function called from 8 threads at once gives the results of
// serial calls; importing and exporting from several threads at once is safe. Also built alone
// under ThreadSanitizer (kiln_concurrency_tests, scripts/test.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "test_export_util.h"

namespace mx = kiln;
using namespace kiln_test;

namespace {

constexpr int kThreads = 8;

// Starts every thread's body at the same moment, so that the calls really overlap.
void run_together(int n, const std::function<void(int)>& body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < n; ++t) {
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      body(t);
    });
  }
  for (auto& th : ts) th.join();
}

std::vector<float> floats(mx::array a) { return values<float>(a); }

// A small network with captured constants: matmul, bias, a nonlinearity, a reduction, and big enough
// element-wise work (64K elements) for the thread pool to be used.
std::vector<mx::array> net(const mx::Args& a, const mx::array& w, const mx::array& bias, const mx::array& big) {
  auto h = mx::add(mx::matmul(a[0], w), bias);
  h = mx::maximum(h, mx::zeros_like(h));
  auto s = mx::sum(mx::exp(mx::multiply(h, mx::array(0.01f))), std::vector<int>{1});
  auto e = mx::sum(mx::multiply(mx::add(big, a[1]), mx::array(0.5f)));
  return {s, e};
}

mx::array inputs0(int t) { return mx::astype(mx::reshape(mx::arange(t, t + 32 * 16), {32, 16}), mx::float32); }
mx::array inputs1(int t) { return mx::full({256, 256}, static_cast<float>(t)); }

std::string export_net(const std::string& stem, bool shapeless = false) {
  auto w = mx::astype(mx::reshape(mx::arange(16 * 8), {16, 8}), mx::float32) * mx::array(0.01f);
  auto bias = mx::astype(mx::arange(8), mx::float32);
  auto big = mx::astype(mx::reshape(mx::arange(256 * 256), {256, 256}), mx::float32) * mx::array(1e-4f);
  mx::eval(w, bias, big);
  auto path = temp_file(stem);
  mx::export_function(
      path, [=](const mx::Args& a) { return net(a, w, bias, big); }, {inputs0(0), inputs1(0)}, shapeless);
  return path;
}

}  // namespace

TEST(Concurrency, OneImportedFunctionFromEightThreads) {
  auto path = export_net("conc");
  // Expected results from serial calls of a separate import.
  std::vector<std::vector<float>> want0(kThreads), want1(kThreads);
  {
    auto ref = mx::import_function(path);
    for (int t = 0; t < kThreads; ++t) {
      auto o = ref({inputs0(t), inputs1(t)});
      want0[t] = floats(o[0]);
      want1[t] = floats(o[1]);
    }
  }
  // A fresh import: its constants are still on disk, so the first calls race to load them.
  auto f = mx::import_function(path);
  std::vector<int> bad(kThreads, 0);
  run_together(kThreads, [&](int t) {
    for (int it = 0; it < 6; ++it) {
      auto o = f({inputs0(t), inputs1(t)});
      if (it % 2) mx::eval(o);  // whole-call evaluation and per-output evaluation
      if (floats(o[0]) != want0[t] || floats(o[1]) != want1[t]) bad[t]++;
      (void)f.info().functions.size();
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  std::remove(path.c_str());
}

TEST(Concurrency, ShapelessFunctionFromEightThreads) {
  auto path = export_net("conc_sl", /*shapeless=*/true);
  auto f = mx::import_function(path);
  std::vector<int> bad(kThreads, 0);
  run_together(kThreads, [&](int t) {
    // Different batch sizes per thread: each call re-infers its own shapes.
    auto x = mx::astype(mx::reshape(mx::arange(0, (t + 1) * 16), {t + 1, 16}), mx::float32);
    auto o = f({x, inputs1(t)});
    auto s = floats(o[0]);
    if (static_cast<int>(s.size()) != t + 1) bad[t]++;
    if (floats(o[1]).size() != 1) bad[t]++;
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  std::remove(path.c_str());
}

TEST(Concurrency, ImportAndExportFromSeveralThreads) {
  auto shared_path = export_net("conc_shared");
  std::vector<float> want = floats(mx::import_function(shared_path)({inputs0(1), inputs1(1)})[1]);
  std::vector<int> bad(kThreads, 0);
  run_together(kThreads, [&](int t) {
    if (t % 2 == 0) {
      // Export a thread-specific function, import it back and run it.
      auto c = mx::full({4}, static_cast<float>(t));
      mx::eval(c);
      auto path = temp_file("conc_t" + std::to_string(t));
      mx::export_function(
          path, [c](const mx::Args& a) { return std::vector<mx::array>{mx::add(mx::multiply(a[0], c), c)}; },
          {mx::zeros({4})});
      auto g = mx::import_function(path);
      auto v = floats(g({mx::ones({4})})[0]);
      if (v != std::vector<float>(4, 2.0f * t)) bad[t]++;
      std::remove(path.c_str());
    } else {
      // Import the shared file (its own table) and run it.
      auto g = mx::import_function(shared_path);
      if (floats(g({inputs0(1), inputs1(1)})[1]) != want) bad[t]++;
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  std::remove(shared_path.c_str());
}
