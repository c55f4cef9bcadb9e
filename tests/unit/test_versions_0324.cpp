// MLX 0.32.2 - 0.32.4: DivMod's meaning (0.32.2), FFT's odd_out (0.32.4) and FloorDivide (0.32.4).
// Expected values were printed by the PyPI wheels (mlx[cpu] 0.30.1, 0.32.1, 0.32.2, 0.32.4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "format/compat/version.h"
#include "kiln/fft.h"
#include "kiln/kiln.h"
#include "test_export_util.h"

namespace fs = std::filesystem;
namespace mx = kiln;
namespace fmt = kiln::format;
using namespace kiln_test;
using ::testing::HasSubstr;

namespace {

const fs::path kVersions = fs::path(KILN_TEST_DATA) / "golden" / "versions";

std::vector<mx::array> divmod_node(const mx::array& a, const mx::array& b, bool floor) {
  return mx::make_arrays(mx::registry::get("DivMod"), mx::State{floor}, {a, b},
                         {{a.shape(), a.dtype()}, {a.shape(), a.dtype()}});
}

std::string export_error(const mx::ArgsFn& fn, const mx::Args& args, const std::string& version) {
  auto path = temp_file("v0324_err");
  mx::ExportOptions o;
  o.version = version;
  try {
    mx::export_function(path, fn, args, o);
  } catch (const std::invalid_argument& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "";
}

std::vector<uint8_t> export_as(const mx::ArgsFn& fn, const mx::Args& args, const std::string& version) {
  auto path = temp_file("v0324");
  mx::ExportOptions o;
  o.version = version;
  mx::export_function(path, fn, args, o);
  auto b = read_bytes(path);
  std::filesystem::remove(path);
  return b;
}

// The state bytes after the on-disk name "FFT" (axes count, axes, inverse, real[, odd_out]).
std::vector<uint8_t> fft_state(const std::vector<uint8_t>& b, size_t n) {
  const std::string name = "FFT";
  auto it = std::search(b.begin(), b.end(), name.begin(), name.end());
  EXPECT_NE(it, b.end());
  return std::vector<uint8_t>(it + 3, it + 3 + n);
}

}  // namespace

TEST(Versions0324, TableKnowsTheNewReleases) {
  EXPECT_EQ(fmt::newest_known().str(), "0.32.4");
  EXPECT_EQ(fmt::target_version("0.32.3", "convert").str(), "0.32.3");
  EXPECT_EQ(fmt::reader_layout("0.32.4"), (fmt::FormatVersion{0, 32, 4}));
  EXPECT_EQ(fmt::serializable_since(mx::registry::get("FloorDivide")).str(), "0.32.4");
  EXPECT_EQ(fmt::find_disk_name("FloorDivide", {0, 32, 3}), nullptr);
  EXPECT_NE(fmt::find_disk_name("FloorDivide", {0, 32, 4}), nullptr);
  EXPECT_TRUE(fmt::implied_field(mx::registry::get("DivMod"), 0));
  EXPECT_FALSE(fmt::implied_field(mx::registry::get("FFT"), 0));
  EXPECT_EQ(fmt::disk_fields(mx::registry::get("DivMod"), {0, 32, 4}).size(), 0u);
  EXPECT_EQ(fmt::disk_fields(mx::registry::get("FFT"), {0, 32, 3}).size(), 3u);
  EXPECT_EQ(fmt::disk_fields(mx::registry::get("FFT"), {0, 32, 4}).size(), 4u);
}

// kiln's divmod is MLX 0.30.1's (the default export layout): C-style quotient and remainder.
TEST(Versions0324, DivmodOpKeepsTheTruncatingMeaningOf0_30_1) {
  auto q = mx::divmod(mx::astype(mx::array({-7, 7, -7, 7, 6, 0, -128}), mx::int8),
                      mx::astype(mx::array({2, 2, -2, -2, 3, 5, 3}), mx::int8));
  EXPECT_EQ(values<int8_t>(q[0]), (std::vector<int8_t>{-3, 3, 3, -3, 2, 0, -42}));
  EXPECT_EQ(values<int8_t>(q[1]), (std::vector<int8_t>{-1, 1, -1, 1, 0, 0, -2}));
  auto f = mx::divmod(mx::array({-7.5f, 7.5f, -7.5f, 7.5f, 6.0f}), mx::array({2.0f, 2.0f, -2.0f, -2.0f, 3.0f}));
  EXPECT_EQ(values<float>(f[0]), (std::vector<float>{-3, 3, 3, -3, 2}));
  EXPECT_EQ(values<float>(f[1]), (std::vector<float>{-1.5f, 1.5f, -1.5f, 1.5f, 0}));
}

// The flooring node of 0.32.2 on, every dtype family, strided and broadcast operands.
TEST(Versions0324, FlooringDivModMatchesMLX0_32_2) {
  auto a8 = mx::astype(mx::array({-7, 7, -7, 7, 6, 0, -128}), mx::int8);
  auto b8 = mx::astype(mx::array({2, 2, -2, -2, 3, 5, 3}), mx::int8);
  auto q = divmod_node(a8, b8, true);
  EXPECT_EQ(values<int8_t>(q[0]), (std::vector<int8_t>{-4, 3, 3, -4, 2, 0, -43}));
  EXPECT_EQ(values<int8_t>(q[1]), (std::vector<int8_t>{1, 1, -1, -1, 0, 0, 1}));
  auto u = divmod_node(mx::astype(mx::array({7, 200}), mx::uint8), mx::astype(mx::array({2, 3}), mx::uint8), true);
  EXPECT_EQ(values<uint8_t>(u[0]), (std::vector<uint8_t>{3, 66}));
  EXPECT_EQ(values<uint8_t>(u[1]), (std::vector<uint8_t>{1, 2}));
  auto fa = mx::array({-7.5f, 7.5f, -7.5f, 7.5f, 6.0f, -0.0f});
  auto fb = mx::array({2.0f, 2.0f, -2.0f, -2.0f, 3.0f, 5.0f});
  for (auto t : {mx::float32, mx::float16, mx::bfloat16, mx::float64}) {
    auto r = divmod_node(mx::astype(fa, t), mx::astype(fb, t), true);
    EXPECT_EQ(values<float>(mx::astype(r[0], mx::float32)), (std::vector<float>{-4, 3, 3, -4, 2, -0.0f}));
    EXPECT_EQ(values<float>(mx::astype(r[1], mx::float32)), (std::vector<float>{0.5f, 1.5f, -1.5f, -0.5f, 0, -0.0f}));
  }
  // A transposed view and a broadcast divisor.
  auto m = mx::transpose(mx::reshape(mx::array({-7, 7, -5, 5, -1, 1}), {2, 3}));  // [[-7,5],[7,-1],[-5,1]]
  auto d = mx::broadcast_to(mx::array({-2, 3}), {3, 2});
  auto r = divmod_node(m, d, true);
  EXPECT_EQ(values<int32_t>(r[0]), (std::vector<int32_t>{3, 1, -4, -1, 2, 0}));
  EXPECT_EQ(values<int32_t>(r[1]), (std::vector<int32_t>{-1, 2, -1, 2, -1, 1}));
  auto e = divmod_node(mx::zeros({0, 3}, mx::int32), mx::zeros({0, 3}, mx::int32), true);
  EXPECT_EQ(e[0].shape(), mx::Shape({0, 3}));
}

// Each release's file keeps its own meaning; writing one meaning for a release with the other refuses.
TEST(Versions0324, DivModMeaningFollowsTheRelease) {
  auto fn = [](const mx::Args& a) { return mx::divmod(a[0], a[1]); };
  mx::Args args = {mx::array({-7, 7}), mx::array({2, -2})};
  EXPECT_FALSE(export_as(fn, args, "0.32.1").empty());
  for (auto v : {"0.32.2", "0.32.3", "0.32.4"}) {
    EXPECT_EQ(export_error(fn, args, v),
              std::string("[export_function] DivMod with floor=false cannot be written for MLX ") + v +
                  ": before 0.32.2 MLX's DivMod truncates the quotient (C-style), from 0.32.2 it floors it "
                  "(Python's divmod), so that release would compute other values.");
  }
  // Real files: 0.32.1 truncates, 0.32.2 floors.
  auto run = [&](const std::string& v) {
    auto f = mx::import_function((kVersions / v / "divmod" / "divmod.mlxfn").string());
    return f({mx::array({-7, 7, -7, 7, 6, 0}), mx::array({2, 2, -2, -2, 3, 5}),
              mx::array({-7.5f, 1.0f, 0.0f, 0.0f, 0.0f}), mx::array({2.0f, 0.25f, 1.0f, 1.0f, 1.0f})});
  };
  auto old = run("0.32.1");
  EXPECT_EQ(values<int32_t>(old[0]), (std::vector<int32_t>{-3, 3, 3, -3, 2, 0}));
  EXPECT_EQ(values<int32_t>(old[1]), (std::vector<int32_t>{-1, 1, -1, 1, 0, 0}));
  for (auto v : {"0.32.2", "0.32.4"}) {
    auto now = run(v);
    EXPECT_EQ(values<int32_t>(now[0]), (std::vector<int32_t>{-4, 3, 3, -4, 2, 0})) << v;
    EXPECT_EQ(values<int32_t>(now[1]), (std::vector<int32_t>{1, 1, -1, -1, 0, 0})) << v;
    EXPECT_EQ(values<float>(now[2]), (std::vector<float>{-4, 4, 0, 0, 0})) << v;
    EXPECT_EQ(values<float>(now[3]), (std::vector<float>{0.5f, 0, 0, 0, 0})) << v;
  }
  // Converting a flooring file for an older release refuses; within 0.32.2+ it is kept.
  auto src = (kVersions / "0.32.2" / "divmod" / "divmod.mlxfn").string();
  auto out = temp_file("v0324_conv");
  try {
    mx::convert_file(src, out, {.version = "0.32.1", .metadata = std::nullopt});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("[convert] DivMod with floor=true cannot be written for MLX 0.32.1"));
  }
  mx::convert_file(src, out, {.version = "0.32.4", .metadata = std::nullopt});
  auto f = mx::import_function(out);
  auto r = f({mx::array({-7, 7, -7, 7, 6, 0}), mx::array({2, 2, -2, -2, 3, 5}), mx::array({-7.5f, 1.0f, 1.0f, 1.0f, 1.0f}),
              mx::array({2.0f, 1.0f, 1.0f, 1.0f, 1.0f})});
  EXPECT_EQ(values<int32_t>(r[0]), (std::vector<int32_t>{-4, 3, 3, -4, 2, 0}));
  std::filesystem::remove(out);
}

// odd_out: written from the recorded output shape for 0.32.4, absent before; read back the same.
TEST(Versions0324, FftOddOutIsDerivedFromTheOutputShape) {
  auto x = mx::astype(mx::reshape(mx::astype(mx::arange(6), mx::float32), {2, 3}), mx::complex64);
  auto odd = [](const mx::Args& a) { return mx::Args{mx::fft::irfft(a[0], 5, -1)}; };
  auto even = [](const mx::Args& a) { return mx::Args{mx::fft::irfft(a[0], 4, -1)}; };
  auto fwd = [](const mx::Args& a) { return mx::Args{mx::fft::fft(a[0])}; };
  // count 1, axis 1, inverse, real, odd_out
  EXPECT_EQ(to_hex(fft_state(export_as(odd, {x}, "0.32.4"), 19)),
            to_hex(from_hex("01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 01 01 01")));
  EXPECT_EQ(to_hex(fft_state(export_as(even, {x}, "0.32.4"), 19)),
            to_hex(from_hex("01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 01 01 00")));
  EXPECT_EQ(to_hex(fft_state(export_as(fwd, {x}, "0.32.4"), 19)),
            to_hex(from_hex("01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00")));
  auto b3 = export_as(odd, {x}, "0.32.3");
  EXPECT_EQ(b3.size() + 1, export_as(odd, {x}, "0.32.4").size());
  // Every layout reads it back to the same results.
  for (auto v : {"0.30.1", "0.32.3", "0.32.4"}) {
    auto path = temp_file("v0324_fft");
    write_bytes(path, export_as(odd, {x}, v));
    auto got = mx::import_function(path)({x});
    EXPECT_TRUE(mx::allclose(got[0], odd({x})[0], 1e-5, 1e-5).item<bool>()) << v;
    std::filesystem::remove(path);
  }
  // The real 0.32.4 file converts to 0.32.3 (the flag is implied by the shape there) and back, byte for byte.
  auto src = (kVersions / "0.32.4" / "irfft_odd" / "irfft_odd.mlxfn").string();
  auto mid = temp_file("v0324_mid"), back = temp_file("v0324_back");
  mx::convert_file(src, mid, {.version = "0.32.3", .metadata = std::nullopt});
  mx::convert_file(mid, back, {.version = "0.32.4", .metadata = std::nullopt});
  EXPECT_EQ(read_bytes(back), read_bytes(src));
  std::filesystem::remove(mid);
  std::filesystem::remove(back);
}

TEST(Versions0324, FloorDivideIsWrittenOnlyFor0_32_4) {
  auto fn = [](const mx::Args& a) {
    return mx::Args{mx::make_array(mx::registry::get("FloorDivide"), {}, {a[0], a[1]}, {{a[0].shape(), a[0].dtype()}})};
  };
  mx::Args args = {mx::array({-7, 7}), mx::array({2, 2})};
  EXPECT_EQ(export_error(fn, args, "0.32.3"),
            "[export_function] FloorDivide cannot be written for MLX 0.32.3: MLX can serialize it only from 0.32.4.");
  EXPECT_THAT(export_error(fn, args, "0.30.1"), HasSubstr("FloorDivide cannot be written for MLX 0.30.1"));
  auto b = export_as(fn, args, "0.32.4");
  auto path = temp_file("v0324_fd");
  write_bytes(path, b);
  EXPECT_EQ(values<int32_t>(mx::import_function(path)(args)[0]), (std::vector<int32_t>{-4, 3}));
  // The same bytes under a 0.32.3 header: that release's table has no FloorDivide.
  ASSERT_EQ(std::string(b.begin() + 8, b.begin() + 14), "0.32.4");
  b[13] = '3';
  write_bytes(path, b);
  EXPECT_THROW(mx::import_function(path), std::invalid_argument);
  std::filesystem::remove(path);
  // MLX 0.32.4's own file: `//` on ints and floats.
  auto f = mx::import_function((kVersions / "0.32.4" / "floor_divide" / "floor_divide.mlxfn").string());
  auto r = f({mx::array({-7, 7, 7, 0}), mx::array({2, -2, 2, 3}), mx::array({-7.5f, 7.5f, 1.0f}),
              mx::array({2.0f, -2.0f, 0.5f})});
  EXPECT_EQ(values<int32_t>(r[0]), (std::vector<int32_t>{-4, -4, 3, 0}));
  EXPECT_EQ(values<float>(r[1]), (std::vector<float>{-4, -4, 2}));
}
