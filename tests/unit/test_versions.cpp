// MLX format versions (spec section 5): the version table, header detection, writing every layout
// (hand-computed bytes for each changed state, the header and the dtype codes, especially for the
// releases that have no installable wheel: 0.22 - 0.25.1), refusals that name the primitive and the
// version, metadata through the export and import APIs, and convert_file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "format/codec.h"
#include "format/record.h"
#include "kiln/fast.h"
#include "kiln/linalg.h"
#include "primitives/misc/load.h"
#include "test_export_util.h"

namespace mx = kiln;
namespace fmt = kiln::format;
using namespace kiln_test;
using ::testing::HasSubstr;

namespace {

std::vector<uint8_t> export_bytes(const mx::ArgsFn& fn, const mx::Args& args, const std::string& version,
                                  const std::string& metadata = "") {
  auto path = temp_file("ver");
  mx::ExportOptions o;
  o.version = version;
  o.metadata = metadata;
  mx::export_function(path, fn, args, o);
  auto b = read_bytes(path);
  std::filesystem::remove(path);
  return b;
}

std::string export_error(const mx::ArgsFn& fn, const mx::Args& args, const std::string& version) {
  try {
    export_bytes(fn, args, version);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The `n` bytes that follow the on-disk name Str of the first node called `name` (its state, then P5).
std::vector<uint8_t> after_name(const std::vector<uint8_t>& b, const std::string& name, size_t n) {
  std::vector<uint8_t> needle(8, 0);
  needle[0] = static_cast<uint8_t>(name.size());
  needle.insert(needle.end(), name.begin(), name.end());
  auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  if (it == b.end()) {
    ADD_FAILURE() << "no node " << name;
    return {};
  }
  it += static_cast<long>(needle.size());
  size_t left = static_cast<size_t>(b.end() - it);
  return std::vector<uint8_t>(it, it + static_cast<long>(std::min(n, left)));
}

bool has_name(const std::vector<uint8_t>& b, const std::string& name) {
  std::vector<uint8_t> needle(8, 0);
  needle[0] = static_cast<uint8_t>(name.size());
  needle.insert(needle.end(), name.begin(), name.end());
  return std::search(b.begin(), b.end(), needle.begin(), needle.end()) != b.end();
}

fmt::ParsedFile parse_mem(const std::vector<uint8_t>& bytes) {
  auto src = std::make_shared<fmt::MemorySource>(bytes);
  return fmt::read_file(*src, [src](const mx::ArraySpec& s, uint64_t off, uint64_t n) {
    return mx::detail::load_constant(src, s, off, n);
  });
}

std::vector<mx::array> import_and_call(const std::vector<uint8_t>& bytes, const mx::Args& args) {
  auto path = temp_file("verimp");
  write_bytes(path, bytes);
  auto f = mx::import_function(path);
  auto out = f(args);
  mx::eval(out);
  std::filesystem::remove(path);
  return out;
}

void expect_same(const std::vector<mx::array>& a, const std::vector<mx::array>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].shape(), b[i].shape());
    EXPECT_TRUE(mx::allclose(a[i], b[i], 1e-5, 1e-5).item<bool>()) << "output " << i;
  }
}

const std::string U64_0 = "00 00 00 00 00 00 00 00";
std::string vec1(int v) {  // a one-element vector<int>: u64 1 + int32
  char buf[64];
  std::snprintf(buf, sizeof buf, "01 00 00 00 00 00 00 00 %02x 00 00 00", v);
  return buf;
}

mx::array arange_f(int n, mx::Shape shape) { return mx::reshape(mx::astype(mx::arange(n), mx::float32), shape); }

}  // namespace

// ---- the version table ----

TEST(VersionsTable, SupportedVersionsAreTheReleases) {
  auto v = fmt::supported_versions();
  ASSERT_GE(v.size(), 35u);
  EXPECT_EQ(v.front(), "0.22.0");
  EXPECT_EQ(v.back(), "0.32.4");
  for (const char* want : {"0.22.1", "0.23.2", "0.24.2", "0.25.2", "0.26.5", "0.27.1", "0.28.0", "0.29.4", "0.30.0",
                           "0.30.1", "0.30.6", "0.31.2", "0.32.0", "0.32.1", "0.32.2", "0.32.3"}) {
    EXPECT_NE(std::find(v.begin(), v.end(), want), v.end()) << want;
  }
  // There are no such releases (spec 5.0).
  for (const char* absent : {"0.26.4", "0.27.0", "0.30.2"}) {
    EXPECT_EQ(std::find(v.begin(), v.end(), absent), v.end()) << absent;
  }
  for (size_t i = 1; i < v.size(); ++i) {
    fmt::FormatVersion a, b;
    ASSERT_TRUE(fmt::FormatVersion::parse(v[i - 1], a));
    ASSERT_TRUE(fmt::FormatVersion::parse(v[i], b));
    EXPECT_LT(a, b);
  }
}

TEST(VersionsTable, TargetVersionErrors) {
  EXPECT_EQ(fmt::target_version("0.24.0", "convert"), (fmt::FormatVersion{0, 24, 0}));
  // Between two releases with the same layout.
  EXPECT_EQ(fmt::target_version("0.30.2", "convert"), (fmt::FormatVersion{0, 30, 2}));
  auto err = [](const std::string& v) {
    try {
      fmt::target_version(v, "convert");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err("0.33.0"), "[convert] MLX 0.33.0 is newer than the newest layout kiln knows (0.32.4).");
  EXPECT_EQ(err("0.21.1"), "[convert] MLX 0.21.1 has no function export (it starts with 0.22.0).");
  EXPECT_EQ(err("0.30"), "[convert] Invalid MLX version '0.30': expected major.minor.patch, for example 0.30.1.");
  EXPECT_THAT(err("0.30.1.dev1"), HasSubstr("Invalid MLX version '0.30.1.dev1'"));
}

TEST(VersionsTable, HeaderDetection) {
  EXPECT_EQ(fmt::reader_layout("0.25.2"), (fmt::FormatVersion{0, 25, 2}));
  EXPECT_EQ(fmt::reader_layout("0.32.2.dev20260901+846d1762"), (fmt::FormatVersion{0, 32, 2}));
  EXPECT_EQ(fmt::reader_layout("0.26.4"), (fmt::FormatVersion{0, 26, 4}));  // between 0.26.3 and 0.26.5
  // MLX never reads the string; kiln decodes one that is not a version with the default layout.
  EXPECT_EQ(fmt::reader_layout("hello"), fmt::kDefaultVersion);
  try {
    fmt::reader_layout("0.33.0");
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "[import_function] The file was written by MLX 0.33.0, which is newer than the newest layout kiln "
              "knows (0.32.4); its layout may differ, so it is not read.");
  }
  EXPECT_THROW(fmt::reader_layout("0.21.1"), std::invalid_argument);
}

TEST(VersionsTable, NewerHeaderVersionIsRefusedByImport) {
  auto fn = [](const mx::Args& a) { return mx::Args{mx::add(a[0], a[0])}; };
  auto bytes = export_bytes(fn, {mx::array(1.0f)}, "0.30.1");
  // Same length, so only the header string changes: "0.30.1" -> "1.00.0".
  for (int i = 0; i < 6; ++i) bytes[8 + i] = "1.00.0"[i];
  auto path = temp_file("newer");
  write_bytes(path, bytes);
  try {
    mx::import_function(path);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("written by MLX 1.00.0, which is newer than the newest layout kiln knows"));
  }
  std::filesystem::remove(path);
}

// ---- byte layouts of every changed piece, hand-computed from spec 5.0.2 / 5.0.3 / 5.1 ----

TEST(VersionsBytes, HeaderAndMetadata) {
  auto fn = [](const mx::Args& a) { return mx::Args{mx::abs(a[0])}; };
  auto b = export_bytes(fn, {mx::array(1.0f)}, "0.22.0");
  EXPECT_EQ(to_hex({b.begin(), b.begin() + 19}), to_hex(from_hex("06 00 00 00 00 00 00 00 30 2e 32 32 2e 30 "
                                                                  "01 00 00 00 00")));
  // 0.32.1: H4 after the shapeless flag, an empty one is 8 zero bytes.
  b = export_bytes(fn, {mx::array(1.0f)}, "0.32.1");
  EXPECT_EQ(to_hex({b.begin(), b.begin() + 27}),
            to_hex(from_hex("06 00 00 00 00 00 00 00 30 2e 33 32 2e 31 01 00 00 00 00 " + U64_0)));
  b = export_bytes(fn, {mx::array(1.0f)}, "0.32.1", "hi");
  EXPECT_EQ(to_hex({b.begin(), b.begin() + 29}),
            to_hex(from_hex("06 00 00 00 00 00 00 00 30 2e 33 32 2e 31 01 00 00 00 00 "
                            "02 00 00 00 00 00 00 00 68 69")));
  auto f = parse_mem(b);
  EXPECT_EQ(f.metadata, "hi");
  EXPECT_EQ(f.layout, (fmt::FormatVersion{0, 32, 1}));
}

TEST(VersionsBytes, DtypeCodesBefore0_23) {
  // bfloat16 is (11, 2) and complex64 (12, 8) before 0.23.0, (12, 2) and (13, 8) after (spec 5.0.2 A1).
  auto fn = [](const mx::Args& a) { return mx::Args{mx::astype(a[0], mx::bfloat16), mx::astype(a[1], mx::complex64)}; };
  mx::Args args{mx::array({1.0f, 2.0f}), mx::array({3.0f})};
  auto old = export_bytes(fn, args, "0.22.1");
  auto now = export_bytes(fn, args, "0.23.0");
  // AsType's state is a DtypeEnc, followed by the P5/P6a output whose dtype is the same.
  EXPECT_EQ(to_hex(after_name(old, "AsType", 5)), to_hex(from_hex("0b 00 00 00 02")));
  EXPECT_EQ(to_hex(after_name(now, "AsType", 5)), to_hex(from_hex("0c 00 00 00 02")));
  auto find_c = [](const std::vector<uint8_t>& b, const std::string& hex) {
    auto n = from_hex(hex);
    return std::search(b.begin(), b.end(), n.begin(), n.end()) != b.end();
  };
  EXPECT_TRUE(find_c(old, "0c 00 00 00 08"));   // complex64, old numbering
  EXPECT_FALSE(find_c(old, "0d 00 00 00 08"));
  EXPECT_TRUE(find_c(now, "0d 00 00 00 08"));
  // Both read back to the same dtypes and values.
  auto a = import_and_call(old, args), c = import_and_call(now, args);
  EXPECT_EQ(a[0].dtype(), mx::bfloat16);
  EXPECT_EQ(a[1].dtype(), mx::complex64);
  EXPECT_TRUE(mx::array_equal(a[0], c[0]).item<bool>());
  EXPECT_TRUE(mx::array_equal(a[1], c[1]).item<bool>());
  // A v0.22 file's (11, 2) is read as bfloat16 even under a later header: the item size settles it.
  auto relabeled = old;
  for (int i = 0; i < 6; ++i) relabeled[8 + i] = "0.30.1"[i];
  auto r = parse_mem(relabeled);
  EXPECT_EQ(r.records[0].tape.back().specs[0].dtype, mx::complex64);
  // float64 has no code before 0.23.0.
  auto f64 = [](const mx::Args& a) { return mx::Args{mx::astype(a[0], mx::float64)}; };
  EXPECT_EQ(export_error(f64, {mx::array(1.0f)}, "0.22.1"),
            "[export_function] float64 (an output of AsType) cannot be written for MLX 0.22.1: that layout has no "
            "code for it (added in 0.23.0).");
}

TEST(VersionsBytes, ScaledDotProductAttentionLayouts) {
  auto q = arange_f(16, {1, 1, 2, 8});
  mx::Args args{q, q * 0.5f, q * 0.25f};
  auto fn = [](const mx::Args& a) {
    return mx::Args{mx::fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.5f)};
  };
  // placeholder (0 bytes), float scale 0.5, then the flags each layout has, then P5 = 0.
  const std::string scale = "00 00 00 3f ";
  std::map<std::string, std::string> want = {
      {"0.22.0", scale + U64_0},
      {"0.23.2", scale + U64_0},
      {"0.24.0", scale + "00 " + U64_0},
      {"0.29.0", scale + "00 " + U64_0},
      {"0.29.1", scale + "00 00 " + U64_0},
      {"0.30.0", scale + "00 00 00 " + U64_0},
      {"0.32.1", scale + "00 00 00 " + U64_0},
      {"0.32.2", scale + "00 00 00 00 " + U64_0},  // force_fused
  };
  auto ref = import_and_call(export_bytes(fn, args, "0.30.1"), args);
  for (auto& [v, hex] : want) {
    auto b = export_bytes(fn, args, v);
    auto n = from_hex(hex);
    EXPECT_EQ(to_hex(after_name(b, "ScaledDotProductAttention", n.size())), to_hex(n)) << v;
    expect_same(import_and_call(b, args), ref);
  }
  // Causal masking needs do_causal (0.24.0), sinks has_sinks (0.29.1).
  auto causal = [](const mx::Args& a) {
    return mx::Args{mx::fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.5f, "causal")};
  };
  EXPECT_EQ(export_error(causal, args, "0.23.2"),
            "[export_function] ScaledDotProductAttention with do_causal=true cannot be written for MLX 0.23.2: its "
            "layout has no do_causal field (added in 0.24.0).");
  EXPECT_EQ(to_hex(after_name(export_bytes(causal, args, "0.24.0"), "ScaledDotProductAttention", 5)),
            to_hex(from_hex(scale + "01")));
  auto sinks = [](const mx::Args& a) {
    return mx::Args{mx::fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.5f, "", {}, mx::array({0.5f}))};
  };
  EXPECT_THAT(export_error(sinks, args, "0.29.0"),
              HasSubstr("ScaledDotProductAttention with has_sinks=true cannot be written for MLX 0.29.0"));
  EXPECT_EQ(to_hex(after_name(export_bytes(sinks, args, "0.29.1"), "ScaledDotProductAttention", 6)),
            to_hex(from_hex(scale + "00 01")));
  auto lse = [](const mx::Args& a) {
    return mx::fast::detail::scaled_dot_product_attention_with_lse(a[0], a[1], a[2], 0.5f);
  };
  EXPECT_THAT(export_error(lse, args, "0.29.4"),
              HasSubstr("with output_logsumexp=true cannot be written for MLX 0.29.4: its layout has no "
                        "output_logsumexp field (added in 0.30.0)"));
}

TEST(VersionsBytes, ConvolutionLayouts) {
  auto x = arange_f(10, {1, 5, 2});
  auto w = arange_f(12, {2, 3, 2}) * 0.1f;
  // stride 1, padding lo 3 / hi 2, kernel dilation 2: out = 5 + 3 + 2 - 5 + 1 = 6.
  auto fn = [](const mx::Args& a) {
    return mx::Args{mx::conv_general(a[0], a[1], std::vector<int>{1}, std::vector<int>{3}, std::vector<int>{2},
                                     std::vector<int>{2}, std::vector<int>{1}, 1, false)};
  };
  mx::Args args{x, w};
  const std::string tail = "01 00 00 00 00 ";  // groups 1, flip false
  std::map<std::string, std::string> want = {
      // padding (low only), strides, kernel_dilation, input_dilation
      {"0.25.1", vec1(3) + vec1(1) + vec1(2) + vec1(1) + tail},
      // padding_lo, padding_hi, strides, ...
      {"0.25.2", vec1(3) + vec1(2) + vec1(1) + vec1(2) + vec1(1) + tail},
      {"0.26.1", vec1(3) + vec1(2) + vec1(1) + vec1(2) + vec1(1) + tail},
      // strides, padding_lo, padding_hi, ... (the 0.30.1 layout)
      {"0.26.2", vec1(1) + vec1(3) + vec1(2) + vec1(2) + vec1(1) + tail},
      {"0.30.1", vec1(1) + vec1(3) + vec1(2) + vec1(2) + vec1(1) + tail},
  };
  auto base = export_bytes(fn, args, "0.30.1");
  auto ref = import_and_call(base, args);
  auto parsed = parse_mem(base);
  for (auto& [v, hex] : want) {
    // The bytes MLX <v> writes (written here without the check of what its reader rebuilds).
    fmt::ByteWriter w;
    fmt::FormatVersion fv = fmt::target_version(v, "test");
    fmt::write_header(w, fv, 1, false);
    std::unordered_set<uint64_t> written;
    std::vector<uint64_t> added;
    fmt::write_record(w, parsed.records[0], fv, written, added, "export_function", /*target_reads=*/false);
    auto b = w.flatten();
    auto n = from_hex(hex);
    EXPECT_EQ(to_hex(after_name(b, "Convolution", n.size())), to_hex(n)) << v;
    // kiln reads them as their writer meant; the high padding of 0.25.1 comes back from the output shape.
    expect_same(import_and_call(b, args), ref);
    auto f = parse_mem(b);
    EXPECT_EQ(f.records[0].tape.back().state.ints(2), std::vector<int32_t>{2}) << v;
  }
  // MLX before 0.26.2 hands these fields to the constructor in another order than it writes them, so
  // kiln writes such a node for it only when that cannot change them.
  EXPECT_EQ(export_error(fn, args, "0.25.1"),
            "[export_function] Convolution with kernel_strides=[1], padding_lo=[3], padding_hi=[2] cannot be written "
            "for MLX 0.25.1: that release's reader passes the strides and paddings to Convolution in another order "
            "than it writes them (fixed in 0.26.2), so it would run other values; only equal strides and paddings "
            "survive.");
  EXPECT_THAT(export_error(fn, args, "0.26.1"), HasSubstr("cannot be written for MLX 0.26.1"));
  EXPECT_EQ(export_error(fn, args, "0.26.2"), "");
  // Stride 2 with low padding 2 survives 0.25.1 (its high padding is not stored); 0.26.1 also needs hi = 2.
  auto even = [](const mx::Args& a) {
    return mx::Args{mx::conv_general(a[0], a[1], std::vector<int>{2}, std::vector<int>{2}, std::vector<int>{1},
                                     std::vector<int>{1}, std::vector<int>{1}, 1, false)};
  };
  auto eb = export_bytes(even, args, "0.25.1");
  EXPECT_EQ(to_hex(after_name(eb, "Convolution", 36)), to_hex(from_hex(vec1(2) + vec1(2) + vec1(1))));
  expect_same(import_and_call(eb, args), even(args));
  EXPECT_THAT(export_error(even, args, "0.26.1"), HasSubstr("padding_hi=[1] cannot be written for MLX 0.26.1"));
}

TEST(VersionsBytes, QuantizedLayouts) {
  auto w = arange_f(8 * 64, {8, 64}) * 0.01f;
  auto x = arange_f(2 * 64, {2, 64}) * 0.02f;
  auto quant = [](const mx::Args& a) { return mx::quantize(a[0], 32, 4); };
  // AffineQuantize before 0.29.0: placeholder, group_size, bits, dequantize.
  auto b = export_bytes(quant, {w}, "0.28.0");
  EXPECT_FALSE(has_name(b, "Quantize"));
  EXPECT_EQ(to_hex(after_name(b, "AffineQuantize", 9)), to_hex(from_hex("20 00 00 00 04 00 00 00 00")));
  b = export_bytes(quant, {w}, "0.29.0");
  EXPECT_FALSE(has_name(b, "AffineQuantize"));
  EXPECT_EQ(to_hex(after_name(b, "Quantize", 13)), to_hex(from_hex("20 00 00 00 04 00 00 00 00 00 00 00 00")));
  expect_same(import_and_call(export_bytes(quant, {w}, "0.22.0"), {w}), import_and_call(b, {w}));

  auto qmm = [](const mx::Args& a) {
    auto q = mx::quantize(a[1], 32, 4);
    return mx::Args{mx::quantized_matmul(a[0], q[0], q[1], q[2], true, 32, 4)};
  };
  auto qb = export_bytes(qmm, {x, w}, "0.28.0");
  EXPECT_EQ(to_hex(after_name(qb, "QuantizedMatmul", 9)), to_hex(from_hex("20 00 00 00 04 00 00 00 01")));
  auto qn = export_bytes(qmm, {x, w}, "0.29.0");
  EXPECT_EQ(to_hex(after_name(qn, "QuantizedMatmul", 13)), to_hex(from_hex("20 00 00 00 04 00 00 00 00 00 00 00 01")));
  expect_same(import_and_call(qb, {x, w}), import_and_call(qn, {x, w}));

  auto w3 = arange_f(3 * 8 * 64, {3, 8, 64}) * 0.001f;
  auto x3 = arange_f(4 * 64, {4, 1, 64}) * 0.01f;
  auto ri = mx::astype(mx::array({0, 1, 1, 2}), mx::uint32);
  auto gq = [](const mx::Args& a) {
    auto q = mx::quantize(a[1], 32, 4);
    return mx::Args{mx::gather_qmm(a[0], q[0], q[1], q[2], std::nullopt, a[2], true, 32, 4, "affine", true)};
  };
  mx::Args gargs{x3, w3, ri};
  std::map<std::string, std::string> want = {
      {"0.24.2", "20 00 00 00 04 00 00 00 01"},                          // group_size, bits, transpose
      {"0.25.0", "20 00 00 00 04 00 00 00 01 00 01"},                    // + left_sorted, right_sorted
      {"0.29.0", "20 00 00 00 04 00 00 00 00 00 00 00 01 00 01"},        // mode after bits
  };
  auto gref = import_and_call(export_bytes(gq, gargs, "0.30.1"), gargs);
  for (auto& [v, hex] : want) {
    auto gb = export_bytes(gq, gargs, v);
    auto n = from_hex(hex + " " + U64_0);
    EXPECT_EQ(to_hex(after_name(gb, "GatherQMM", n.size())), to_hex(n)) << v;
    expect_same(import_and_call(gb, gargs), gref);
  }
  // Modes other than affine need the mode field (0.29.0); mxfp8 and nvfp4 need 0.29.4.
  auto fp = [](const std::string& mode) {
    return [mode](const mx::Args& a) { return mx::quantize(a[0], 32, mode == "mxfp8" ? 8 : 4, mode); };
  };
  EXPECT_EQ(export_error(fp("mxfp4"), {w}, "0.28.0"),
            "[export_function] Quantize with mode=1 cannot be written for MLX 0.28.0: its layout has no mode field "
            "(added in 0.29.0).");
  EXPECT_EQ(export_error(fp("mxfp4"), {w}, "0.29.0"), "");
  EXPECT_EQ(export_error(fp("mxfp8"), {w}, "0.29.3"),
            "[export_function] Quantize with mode=2 (mxfp8) cannot be written for MLX 0.29.3: that value was added "
            "in 0.29.4.");
  EXPECT_EQ(export_error(fp("mxfp8"), {w}, "0.29.4"), "");
}

TEST(VersionsBytes, GatherMMAndSvdLayouts) {
  auto a = arange_f(12, {2, 2, 3});
  auto bm = arange_f(36, {3, 3, 4}) * 0.1f;
  auto li = mx::astype(mx::array({1, 0}), mx::uint32);
  auto ri = mx::astype(mx::array({0, 2}), mx::uint32);
  auto gm = [](const mx::Args& x) { return mx::Args{mx::gather_mm(x[0], x[1], x[2], x[3])}; };
  mx::Args args{a, bm, li, ri};
  // No state before 0.25.0: P5 follows the name.
  EXPECT_EQ(to_hex(after_name(export_bytes(gm, args, "0.24.2"), "GatherMM", 8)), to_hex(from_hex(U64_0)));
  EXPECT_EQ(to_hex(after_name(export_bytes(gm, args, "0.25.0"), "GatherMM", 10)), to_hex(from_hex("00 00 " + U64_0)));
  expect_same(import_and_call(export_bytes(gm, args, "0.24.2"), args), import_and_call(export_bytes(gm, args, "0.30.1"), args));

  auto m = mx::array({2.0f, 0.0f, 1.0f, 3.0f, 1.0f, 0.5f}, {3, 2});
  auto svd = [](const mx::Args& x) { return mx::linalg::svd(x[0], true); };
  // No state before 0.23.2 and always U, S, Vt: the P5 siblings count (2) follows the name.
  EXPECT_EQ(to_hex(after_name(export_bytes(svd, {m}, "0.23.1"), "SVD", 8)),
            to_hex(from_hex("02 00 00 00 00 00 00 00")));
  EXPECT_EQ(to_hex(after_name(export_bytes(svd, {m}, "0.23.2"), "SVD", 9)),
            to_hex(from_hex("01 02 00 00 00 00 00 00 00")));
  auto s_only = [](const mx::Args& x) { return mx::linalg::svd(x[0], false); };
  EXPECT_EQ(export_error(s_only, {m}, "0.23.1"),
            "[export_function] SVD with compute_uv=false cannot be written for MLX 0.23.1: its layout has no "
            "compute_uv field (added in 0.23.2).");
  auto f = parse_mem(export_bytes(svd, {m}, "0.22.0"));
  EXPECT_EQ(f.records[0].tape.back().state.values, std::vector<mx::Value>{true});
}

TEST(VersionsBytes, SliceUpdateAndCustomKernelLayouts) {
  auto fn = [](const mx::Args& a) { return mx::Args{mx::slice_update(a[0], a[1], {1}, {3})}; };
  mx::Args args{arange_f(4, {4}), mx::array({9.0f, 8.0f})};
  const std::string sss = vec1(1) + vec1(3) + vec1(1);  // start, stop, strides
  EXPECT_EQ(to_hex(after_name(export_bytes(fn, args, "0.31.1"), "SliceUpdate", 36)), to_hex(from_hex(sss)));
  // 0.31.2: a leading reduce type, None = 4.
  EXPECT_EQ(to_hex(after_name(export_bytes(fn, args, "0.31.2"), "SliceUpdate", 40)),
            to_hex(from_hex("04 00 00 00 " + sss)));
  expect_same(import_and_call(export_bytes(fn, args, "0.31.2"), args), import_and_call(export_bytes(fn, args, "0.30.1"), args));

  mx::fast::detail::CustomKernelSpec spec;
  spec.name = "k";
  spec.source = "s";
  spec.shape_infos = {{false, false, false}};
  spec.shared_memory = 7;
  auto ck = [spec](const mx::Args& a) { return mx::fast::detail::custom_kernel(spec, {a[0]}, {{2}}, {mx::float32}); };
  // ... is_precompiled (00), shared_memory (07 00 00 00), then P5 (0.31.2) or compile_options 0 then P5 (0.32.0).
  auto tail_of = [](const std::vector<uint8_t>& b, size_t n) { return std::vector<uint8_t>(b.end() - static_cast<long>(n), b.end()); };
  auto b31 = export_bytes(ck, {mx::array({1.0f, 2.0f})}, "0.31.2");
  auto b32 = export_bytes(ck, {mx::array({1.0f, 2.0f})}, "0.32.0");
  EXPECT_EQ(b32.size(), b31.size() + 4);
  // The node is the last tape entry: ... state · P5 (8) · shape (8 + 4) · dtype (5).
  EXPECT_EQ(to_hex(tail_of(b31, 5 + 25)), to_hex(from_hex("00 07 00 00 00 " + U64_0 + " " + vec1(2) + " 0a 00 00 00 04")));
  EXPECT_EQ(to_hex(tail_of(b32, 9 + 25)),
            to_hex(from_hex("00 07 00 00 00 00 00 00 00 " + U64_0 + " " + vec1(2) + " 0a 00 00 00 04")));
  EXPECT_EQ(export_error(ck, {mx::array({1.0f, 2.0f})}, "0.29.4"),
            "[export_function] CustomKernel cannot be written for MLX 0.29.4: MLX can serialize it only from 0.30.0.");
}

TEST(VersionsBytes, TableEntriesByVersion) {
  auto lse = [](const mx::Args& a) { return mx::Args{mx::logsumexp(a[0], -1)}; };
  mx::Args args{arange_f(6, {2, 3})};
  EXPECT_EQ(export_error(lse, args, "0.24.1"),
            "[export_function] LogSumExp cannot be written for MLX 0.24.1: MLX can serialize it only from 0.24.2.");
  EXPECT_EQ(export_error(lse, args, "0.24.2"), "");
  auto take = [](const mx::Args& a) {
    return mx::Args{mx::take_along_axis(a[0], mx::array({0, 2, 1, 1, 0, 2}, {2, 3}), 1)};
  };
  EXPECT_THAT(export_error(take, args, "0.26.1"), HasSubstr("GatherAxis cannot be written for MLX 0.26.1"));
  EXPECT_EQ(export_error(take, args, "0.26.2"), "");
  auto lcse = [](const mx::Args& a) { return mx::Args{mx::logcumsumexp(a[0], 1)}; };
  EXPECT_EQ(export_error(lcse, args, "0.24.2"),
            "[export_function] Scan with type=4 (LogAddExp) cannot be written for MLX 0.24.2: that value was "
            "added in 0.25.0.");
  // A refused export leaves a valid file holding the earlier traces only.
  auto path = temp_file("refused");
  {
    mx::ExportOptions o;
    o.version = "0.24.1";
    auto ex = mx::exporter(path, mx::ArgsFn([](const mx::Args& a) {
                             return a[0].ndim() == 2 ? mx::Args{mx::logsumexp(a[0], -1)} : mx::Args{mx::exp(a[0])};
                           }), o);
    ex({mx::array({1.0f, 2.0f})});
    EXPECT_THROW(ex({arange_f(6, {2, 3})}), std::invalid_argument);
  }
  auto f = mx::import_function(path);
  EXPECT_EQ(f.info().functions.size(), 1u);
  EXPECT_EQ(f.info().version, "0.24.1");
  std::filesystem::remove(path);
}

// ---- the export and import APIs ----

TEST(VersionsApi, ExportOptionsAndMetadata) {
  auto fn = mx::ArgsFn([](const mx::Args& a) { return mx::Args{mx::multiply(a[0], a[0])}; });
  auto path = temp_file("meta");
  mx::ExportOptions o;
  o.version = "0.32.1";
  o.metadata = "{\"model\": \"tiny\"}";
  mx::export_function(path, fn, {mx::array({3.0f})}, o);
  auto f = mx::import_function(path);
  EXPECT_EQ(f.metadata(), "{\"model\": \"tiny\"}");
  EXPECT_EQ(f.info().metadata, f.metadata());
  EXPECT_EQ(f.info().version, "0.32.1");
  EXPECT_EQ(f.info().format, "0.32.1");
  EXPECT_EQ(f({mx::array({3.0f})})[0].item<float>(), 9.0f);
  // MLX 0.32.1's positional form: metadata selects the 0.32.1 layout; without it the default stays.
  mx::export_function(path, fn, {mx::array({3.0f})}, false, "m");
  EXPECT_EQ(mx::import_function(path).info().version, "0.32.1");
  EXPECT_EQ(mx::import_function(path).metadata(), "m");
  mx::export_function(path, fn, {mx::array({3.0f})}, false);
  EXPECT_EQ(mx::import_function(path).info().version, "0.30.1");
  EXPECT_EQ(mx::import_function(path).metadata(), "");
  // Metadata in a layout without H4, an unknown version: refused before the file is touched.
  o.version = "0.32.0";
  try {
    mx::export_function(path, fn, {mx::array({3.0f})}, o);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "[export_function] Metadata cannot be written for MLX 0.32.0: its layout has no metadata field (added "
              "in 0.32.1).");
  }
  o.version = "0.40.0";
  o.metadata.clear();
  EXPECT_THROW(mx::export_function(path, fn, {mx::array({3.0f})}, o), std::invalid_argument);
  EXPECT_EQ(mx::import_function(path).info().version, "0.30.1");
  std::filesystem::remove(path);
}

TEST(VersionsApi, ConvertFile) {
  auto fn = mx::ArgsFn([](const mx::Args& a) { return mx::Args{mx::slice_update(a[0], a[1], {1}, {3})}; });
  mx::Args args{arange_f(4, {4}), mx::array({9.0f, 8.0f})};
  auto in = temp_file("conv_in"), mid = temp_file("conv_mid"), back = temp_file("conv_back");
  mx::export_function(in, fn, args);
  mx::convert_file(in, mid, {.version = "0.32.1", .metadata = "note"});
  auto m = mx::import_function(mid);
  EXPECT_EQ(m.info().version, "0.32.1");
  EXPECT_EQ(m.metadata(), "note");
  expect_same(m(args), mx::import_function(in)(args));
  // Back to 0.30.1: the metadata must be dropped explicitly.
  try {
    mx::convert_file(mid, back, {.version = "0.30.1", .metadata = std::nullopt});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("[convert] The file has metadata, but MLX 0.30.1's layout has no metadata field"));
  }
  EXPECT_FALSE(std::filesystem::exists(back));
  mx::convert_file(mid, back, {.version = "0.30.1", .metadata = ""});
  EXPECT_EQ(read_bytes(back), read_bytes(in));
  // Converting in place, and keeping the metadata when the target has it.
  mx::convert_file(mid, mid, {.version = "0.32.2", .metadata = std::nullopt});
  EXPECT_EQ(mx::import_function(mid).metadata(), "note");
  // A refusal leaves an existing output untouched.
  auto lse_in = temp_file("conv_lse");
  mx::export_function(lse_in, mx::ArgsFn([](const mx::Args& a) { return mx::Args{mx::logsumexp(a[0], -1)}; }),
                      {arange_f(6, {2, 3})});
  auto before = read_bytes(back);
  try {
    mx::convert_file(lse_in, back, {.version = "0.24.0", .metadata = std::nullopt});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "[convert] LogSumExp cannot be written for MLX 0.24.0: MLX can serialize it only from 0.24.2.");
  }
  EXPECT_EQ(read_bytes(back), before);
  for (auto& p : {in, mid, back, lse_in}) std::filesystem::remove(p);
}

// ---- SearchSorted: in the table from MLX 0.32.1 ----

TEST(VersionsSearchSorted, MatchesNumpy) {
  // numpy.searchsorted([1, 2, 2, 4], [0, 2, 3, 5], side) = [0, 1, 3, 4] (left), [0, 3, 3, 4] (right).
  auto seq = mx::array({1.0f, 2.0f, 2.0f, 4.0f});
  auto v = mx::array({0, 2, 3, 5}, {2, 2});  // int32 values promote with the float32 sequence
  auto l = mx::searchsorted(seq, v);
  auto r = mx::searchsorted(seq, v, "right");
  EXPECT_EQ(l.dtype(), mx::uint32);
  EXPECT_EQ(l.shape(), (mx::Shape{2, 2}));
  EXPECT_EQ(values<uint32_t>(l), (std::vector<uint32_t>{0, 1, 3, 4}));
  EXPECT_EQ(values<uint32_t>(r), (std::vector<uint32_t>{0, 3, 3, 4}));
  // NaN sorts last: numpy gives [2, 2] (left) and [3, 2] (right) for [nan, 3] in [1, 2, nan].
  float nan = std::nanf("");
  auto sn = mx::array({1.0f, 2.0f, nan});
  auto vn = mx::array({nan, 3.0f});
  EXPECT_EQ(values<uint32_t>(mx::searchsorted(sn, vn)), (std::vector<uint32_t>{2, 2}));
  EXPECT_EQ(values<uint32_t>(mx::searchsorted(sn, vn, "right")), (std::vector<uint32_t>{3, 2}));
  // A strided sequence, integer dtypes, empty values.
  auto strided = mx::slice(mx::array({0, 9, 10, 9, 20, 9, 30, 9}), {0}, {8}, {2});
  EXPECT_EQ(values<uint32_t>(mx::searchsorted(strided, mx::array({25, -1, 10}))), (std::vector<uint32_t>{3, 0, 1}));
  EXPECT_EQ(mx::searchsorted(seq, mx::zeros({0}, mx::float32)).shape(), (mx::Shape{0}));
  EXPECT_THROW(mx::searchsorted(seq, v, "middle"), std::invalid_argument);
  try {
    mx::searchsorted(mx::zeros({2, 2}, mx::float32), v);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "[searchsorted] The sorted sequence must be 1-D but has 2 dimensions.");
  }
}

TEST(VersionsSearchSorted, WrittenFrom0_32_1Only) {
  auto fn = [](const mx::Args& a) { return mx::Args{mx::searchsorted(a[0], a[1], "right")}; };
  mx::Args args{mx::array({1.0f, 2.0f, 4.0f}), mx::array({2.0f, 3.0f})};
  EXPECT_EQ(export_error(fn, args, "0.30.1"),
            "[export_function] SearchSorted cannot be written for MLX 0.30.1: MLX can serialize it only from 0.32.1.");
  auto b = export_bytes(fn, args, "0.32.1");
  // State: bool right, then P5.
  EXPECT_EQ(to_hex(after_name(b, "SearchSorted", 9)), to_hex(from_hex("01 " + U64_0)));
  auto out = import_and_call(b, args);
  EXPECT_EQ(values<uint32_t>(out[0]), (std::vector<uint32_t>{2, 2}));
  // A 0.31.2 file cannot name it (MLX 0.31.2's table has no such entry).
  auto relabeled = b;
  relabeled.erase(relabeled.begin() + 19, relabeled.begin() + 27);  // drop H4
  for (int i = 0; i < 6; ++i) relabeled[8 + i] = "0.31.2"[i];
  try {
    parse_mem(relabeled);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "[import_function] Unable to deserialize primitive SearchSorted (not in the table of MLX 0.31.2 files)");
  }
}
