// Memory bounds (issue 6) on files built to amplify: the heap that importing, inspecting and calling
// them takes stays within a fixed multiple of the file size (plus the outputs), as counted by
// alloc_counter.cpp. The densest structures per file byte are constant references (10 bytes),
// input references, node input lists (8 bytes an id) and sibling outputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sweep_util.h"

namespace mx = kiln;
using namespace kiln_test;

namespace {

constexpr uint64_t kFileFactor = 64;
constexpr uint64_t kFixedBytes = 4 << 20;

struct Measured {
  uint64_t import_peak = 0, info_peak = 0, call_peak = 0, output_bytes = 0;
  double seconds = 0;
};

// Import (parse + validate), build the FileInfo, then call with `args` and evaluate.
Measured measure(const std::vector<uint8_t>& bytes, const mx::Args& args, bool call = true) {
  Measured m;
  if (!alloc_counting()) return m;  // sanitizer builds: nothing to measure (expect_bounded skips)
  auto t0 = std::chrono::steady_clock::now();
  // An empty buffer cache first (see sweep_util.h): what the region caches counts in its peak.
  mx::clear_cache();
  uint64_t base = live_bytes();
  reset_peak();
  {
    auto f = import_bytes(bytes);
    m.import_peak = peak_bytes() - base;
    reset_peak();
    (void)f.info();
    m.info_peak = peak_bytes() - base;
    if (call) {
      reset_peak();
      auto outs = f(args);
      mx::eval(outs);
      for (auto& o : outs) m.output_bytes += o.nbytes();
      m.call_peak = peak_bytes() - base;
    }
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

void expect_bounded(const std::string& what, const std::vector<uint8_t>& bytes, const Measured& m) {
  uint64_t limit = kFileFactor * bytes.size() + kFixedBytes;
  std::cout << "[memory] " << what << ": file " << bytes.size() << " bytes; heap peak import " << m.import_peak
            << ", +info " << m.info_peak << ", +call " << m.call_peak << " (" << m.output_bytes << " output bytes); "
            << m.seconds << " s\n";
  if (!alloc_counting()) GTEST_SKIP() << "heap counting is off in sanitizer builds";
  EXPECT_LE(m.import_peak, limit) << what;
  EXPECT_LE(m.info_peak, limit) << what;
  EXPECT_LE(m.call_peak, limit + m.output_bytes) << what;
  EXPECT_LT(m.seconds, 20.0) << what;
}

const mx::ArraySpec kScalar{{}, mx::float32};

}  // namespace

TEST(MemoryBound, ConstantReferencesAcrossRecords) {
  // Record 0 defines 4000 scalar constants; 40 more records each reference all of them.
  const uint64_t n = 4000, k = 41;
  FileBuilder b(static_cast<int32_t>(k));
  for (uint64_t r = 0; r < k; ++r) {
    b.record({}, {100}, n);
    for (uint64_t i = 0; i < n; ++i) {
      if (r == 0) {
        b.constant(100 + i, kScalar, f32_bytes({static_cast<float>(i)}));
      } else {
        b.constant_ref(100 + i);
      }
    }
  }
  auto bytes = b.bytes();
  expect_bounded("constant references", bytes, measure(bytes, {}));
}

TEST(MemoryBound, WideNodeOfHighRankInputs) {
  // Concatenate of 100000 references to one rank-64 input: 8 file bytes per input, each an input
  // spec of 64 dimensions for the shape rule.
  const uint64_t n = 100000;
  mx::Shape s64(64, 1);
  mx::Shape out = s64;
  out[0] = static_cast<int32_t>(n);
  FileBuilder b;
  b.record({{1, {s64, mx::float32}}}, {2}, 2).input_ref(1).node(2, "Concatenate", std::vector<uint64_t>(n, 1),
                                                               {out, mx::float32}, [](auto& w) { w.i32(0); });
  auto bytes = b.bytes();
  expect_bounded("wide Concatenate", bytes, measure(bytes, {mx::ones(s64)}));
}

TEST(MemoryBound, DeepChain) {
  const uint64_t n = 100000;
  FileBuilder b;
  b.record({{1, kScalar}}, {n + 1}, n + 1).input_ref(1);
  for (uint64_t i = 2; i <= n + 1; ++i) b.node(i, "Abs", {i - 1}, kScalar);
  auto bytes = b.bytes();
  expect_bounded("deep chain", bytes, measure(bytes, {mx::array(-2.0f)}));
}

TEST(MemoryBound, ManyInputsAndReferences) {
  const uint64_t n = 50000;
  std::vector<std::pair<uint64_t, mx::ArraySpec>> ins;
  for (uint64_t i = 1; i <= n; ++i) ins.push_back({i, kScalar});
  FileBuilder b;
  b.record(ins, {1}, n);
  for (uint64_t i = 1; i <= n; ++i) b.input_ref(i);
  auto bytes = b.bytes();
  mx::Args args(n, mx::array(1.0f));
  expect_bounded("many inputs", bytes, measure(bytes, args, /*call=*/false));
}

TEST(MemoryBound, ManySiblingOutputs) {
  // Split of a (20000) vector into 20000 outputs, all returned.
  const int n = 20000;
  std::vector<int32_t> idx;
  for (int i = 1; i < n; ++i) idx.push_back(i);
  std::vector<uint64_t> out_ids;
  std::vector<mx::ArraySpec> outs;
  for (int i = 0; i < n; ++i) {
    out_ids.push_back(10 + i);
    outs.push_back({{1}, mx::float32});
  }
  FileBuilder b;
  b.record({{1, {{n}, mx::float32}}}, out_ids, 2).input_ref(1).multi_node(10, "Split", {1}, out_ids, outs, [&](auto& w) {
    w.u64(idx.size());
    for (auto v : idx) w.i32(v);
    w.i32(0);
  });
  auto bytes = b.bytes();
  expect_bounded("many siblings", bytes, measure(bytes, {mx::zeros({n})}));
}

TEST(MemoryBound, LongStrings) {
  // Keyword names of 1 MB each.
  FileBuilder b;
  std::string k1(1 << 20, 'a'), k2(1 << 20, 'b');
  b.record({{1, kScalar}, {2, kScalar}}, {1}, 0, {k1, k2});
  auto bytes = b.bytes();
  expect_bounded("long keyword names", bytes, measure(bytes, {}, /*call=*/false));
}
