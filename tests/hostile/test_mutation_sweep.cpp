// Mutation sweep (issue 6): every golden file truncated at every byte offset, and with each single bit
// flipped (every bit of every byte; the sanitizer build samples, see sweep_stride / sweep_bits). Each variant either
// loads and runs (outputs as the file declares) or raises kiln's error with a message; never a crash,
// never more than a few seconds, never more heap than a fixed multiple of the file size plus the
// outputs (measured by alloc_counter.cpp). One test per golden case, so ctest runs them in parallel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "sweep_util.h"

namespace fs = std::filesystem;
namespace mx = kiln;
using namespace kiln_test;

namespace {

const fs::path kRoot = fs::path(KILN_TEST_DATA) / "golden" / "mlx-0.30.1";

// The memory bound checked on every variant: heap peak <= kFileFactor x file size + the outputs +
// kFixedBytes (thread pool, registry, first-use caches; the golden files are at most 5 KB).
constexpr uint64_t kFileFactor = 64;
constexpr uint64_t kFixedBytes = 4 << 20;
constexpr double kMaxSeconds = 5.0;

struct SweepCase {
  std::string name;
  nlohmann::json j;
};

std::vector<SweepCase> sweep_cases() {
  std::ifstream f(kRoot / "manifest.json");
  auto m = nlohmann::json::parse(f);
  std::vector<SweepCase> out;
  for (auto& c : m["cases"]) out.push_back({c["name"].get<std::string>(), c});
  return out;
}

// Positions visited: every byte, or every `stride`-th byte (KILN_SWEEP_STRIDE; the sanitizer build
// uses a larger stride to stay within its time budget).
size_t sweep_stride() {
  const char* e = std::getenv("KILN_SWEEP_STRIDE");
  int s = e ? std::atoi(e) : 1;
  return s >= 1 ? static_cast<size_t>(s) : 1;
}

size_t sweep_bits() {
  const char* e = std::getenv("KILN_SWEEP_BITS");
  int b = e ? std::atoi(e) : 8;
  return b >= 1 && b <= 8 ? static_cast<size_t>(b) : 8;
}

class MutationSweep : public ::testing::TestWithParam<SweepCase> {};

std::string describe(const std::string& what, const Outcome& o) {
  return what + ": " + o.message.substr(0, 300);
}

}  // namespace

TEST_P(MutationSweep, TruncationsAndBitFlips) {
  const auto& c = GetParam().j;
  auto bytes = read_bytes((kRoot / c["file"].get<std::string>()).string());
  ASSERT_FALSE(bytes.empty());
  mx::Args args;
  mx::Kwargs kwargs;
  auto& call = c["calls"][0];
  for (auto& a : call["args"]) args.push_back(mx::load((kRoot / a["file"].get<std::string>()).string()));
  for (auto& [k, v] : call["kwargs"].items()) kwargs.insert({k, mx::load((kRoot / v["file"].get<std::string>()).string())});
  mx::eval(args);
  for (auto& [k, v] : kwargs) v.eval();

  // The unmodified file: loads and runs (or uses a primitive kiln does not run: then the sweep
  // still checks every variant's outcome, only not "Ran").
  Outcome orig = run_variant(bytes, args, kwargs);
  ASSERT_NE(orig.kind, Outcome::Bad) << orig.message;
  if (orig.kind != Outcome::Ran) std::cout << "[sweep] " << GetParam().name << " does not run: " << orig.message << "\n";

  const uint64_t limit_base = kFileFactor * bytes.size() + kFixedBytes;
  std::map<int, size_t> counts;
  double worst_s = 0;
  uint64_t worst_peak = 0;
  auto check = [&](const std::string& what, const Outcome& o) {
    counts[o.kind]++;
    worst_s = std::max(worst_s, o.seconds);
    worst_peak = std::max(worst_peak, o.peak);
    EXPECT_NE(o.kind, Outcome::Bad) << describe(what, o);
    EXPECT_LT(o.seconds, kMaxSeconds) << what;
    if (alloc_counting()) EXPECT_LE(o.peak, limit_base + o.output_bytes) << what;
  };

  const size_t stride = sweep_stride();
  // Truncations: the format has no trailing data, so every cut must be refused at import.
  for (size_t n = 0; n < bytes.size(); n += stride) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    Outcome o = run_variant(cut, args, kwargs);
    check("truncated to " + std::to_string(n) + " bytes", o);
    EXPECT_EQ(o.kind, Outcome::Rejected) << "truncated to " << n << " bytes";
    if (o.kind == Outcome::Rejected) EXPECT_THAT(o.message, ::testing::StartsWith("[import_function]"));
  }
  // Bit flips: every bit of every visited byte (KILN_SWEEP_BITS=b flips only b bits per byte,
  // starting at bit (3 * offset + case) % 8).
  const size_t bits = sweep_bits();
  size_t case_index = std::hash<std::string>{}(GetParam().name) % 8;
  std::vector<std::pair<size_t, int>> flips;
  for (size_t off = 0; off < bytes.size(); off += stride) {
    for (size_t k = 0; k < bits; ++k) flips.push_back({off, static_cast<int>((3 * off + case_index + k) % 8)});
  }
  for (auto [off, bit] : flips) {
    auto b = bytes;
    b[off] ^= static_cast<uint8_t>(1u << bit);
    check("bit " + std::to_string(bit) + " of byte " + std::to_string(off) + " flipped", run_variant(b, args, kwargs));
  }
  std::cout << "[sweep] " << GetParam().name << ": " << bytes.size() << " bytes, " << (bytes.size() + stride - 1) / stride
            << " truncations and " << flips.size() << " bit flips: rejected " << counts[Outcome::Rejected] << ", ran "
            << counts[Outcome::Ran] << ", no matching signature " << counts[Outcome::NoMatch] << ", call error "
            << counts[Outcome::CallError] << "; slowest " << worst_s * 1e3 << " ms, largest heap peak " << worst_peak
            << " bytes\n";
}

INSTANTIATE_TEST_SUITE_P(Golden, MutationSweep, ::testing::ValuesIn(sweep_cases()),
                         [](const ::testing::TestParamInfo<SweepCase>& i) { return i.param.name; });
