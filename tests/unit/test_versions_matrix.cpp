// The readability matrices of spec 5.2 (files of 0.30.1 - 0.32.1 and later, read by each of those
// releases) and 5.0.6 (files of 0.22 - 0.30.0 read by 0.30.1). A cell "MLX Y reads X's file" is decided
// by decoding X's file the way MLX Y does -- Y's layout whatever the header says (MLX never checks
// it), Y's dtype table taken literally, Y's optional<float> bug -- and requiring the same records as
// kiln's own decode (a misparse either fails or yields other values). kiln itself reads every file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "format/codec.h"
#include "format/record.h"
#include "kiln/fast.h"
#include "kiln/fft.h"
#include "kiln/linalg.h"
#include "primitives/misc/load.h"
#include "test_export_util.h"

namespace mx = kiln;
namespace fmt = kiln::format;
using namespace kiln_test;

namespace {

fmt::FormatVersion ver(const std::string& s) {
  fmt::FormatVersion v;
  EXPECT_TRUE(fmt::FormatVersion::parse(s, v)) << s;
  return v;
}

fmt::ParsedFile parse_with(const std::vector<uint8_t>& bytes, const fmt::ReadOptions& o) {
  auto src = std::make_shared<fmt::MemorySource>(bytes);
  return fmt::read_file(
      *src, [src](const mx::ArraySpec& s, uint64_t off, uint64_t n) { return mx::detail::load_constant(src, s, off, n); },
      o);
}

bool same_records(const fmt::ParsedFile& a, const fmt::ParsedFile& b) {
  if (a.records.size() != b.records.size() || a.shapeless != b.shapeless || a.metadata != b.metadata) return false;
  for (size_t r = 0; r < a.records.size(); ++r) {
    auto &x = a.records[r], &y = b.records[r];
    if (x.kwarg_keys != y.kwarg_keys || x.input_ids != y.input_ids || x.inputs != y.inputs ||
        x.output_ids != y.output_ids || x.tape.size() != y.tape.size()) {
      return false;
    }
    for (size_t i = 0; i < x.tape.size(); ++i) {
      auto &p = x.tape[i], &q = y.tape[i];
      if (p.kind != q.kind || p.id != q.id || p.specs != q.specs || p.def != q.def || !(p.state == q.state) ||
          p.inputs != q.inputs || p.out_ids != q.out_ids) {
        return false;
      }
    }
  }
  return true;
}

// Whether MLX `reader` loads `bytes` (written by some release) correctly.
bool mlx_reads(const std::vector<uint8_t>& bytes, const std::string& reader) {
  fmt::ParsedFile truth = parse_with(bytes, {});
  try {
    auto as_mlx = parse_with(bytes, {ver(reader), true});
    return same_records(as_mlx, truth);
  } catch (const std::exception&) {
    return false;
  }
}

// The bytes MLX `version` writes for fn: kiln traces it, then writes the record in that release's
// layout without checking what that release's reader rebuilds (MLX's writer does not either).
std::vector<uint8_t> export_bytes(const mx::ArgsFn& fn, const mx::Args& args, const std::string& version) {
  auto path = temp_file("matrix");
  mx::ExportOptions o;
  o.version = "0.32.2";
  mx::export_function(path, fn, args, o);
  auto src = std::make_shared<fmt::FileSource>(path);
  auto parsed = fmt::read_file(*src, [src](const mx::ArraySpec& s, uint64_t off, uint64_t n) {
    return mx::detail::load_constant(src, s, off, n);
  });
  fmt::FormatVersion v = ver(version);
  fmt::ByteWriter w;
  fmt::write_header(w, v, static_cast<int32_t>(parsed.records.size()), false);
  std::unordered_set<uint64_t> written;
  std::vector<uint64_t> added;
  fmt::write_record(w, parsed.records[0], v, written, added, "export_function", /*target_reads=*/false);
  auto b = w.flatten();
  std::filesystem::remove(path);
  return b;
}

mx::array arange_f(int n, mx::Shape shape) { return mx::reshape(mx::astype(mx::arange(n), mx::float32), shape); }

// One function per kind of content that the matrices name.
struct Content {
  std::string name;
  mx::ArgsFn fn;
  mx::Args args;
  bool runs = true;
};

std::vector<Content> contents_5_2() {
  std::vector<Content> c;
  c.push_back({"plain", [](const mx::Args& a) { return mx::Args{mx::exp(a[0]) + a[0]}; }, {arange_f(6, {2, 3})}});
  c.push_back({"SliceUpdate", [](const mx::Args& a) { return mx::Args{mx::slice_update(a[0], a[1], {1}, {3})}; },
               {arange_f(4, {4}), mx::array({9.0f, 8.0f})}});
  auto ck = [](std::optional<float> init) {
    mx::fast::detail::CustomKernelSpec spec;
    spec.name = "k";
    spec.source = "out[0] = a[0];";
    spec.shape_infos = {{false, false, false}};
    spec.init_value = init;
    return [spec](const mx::Args& a) { return mx::fast::detail::custom_kernel(spec, {a[0]}, {{2}}, {mx::float32}); };
  };
  c.push_back({"CustomKernel", ck(std::nullopt), {mx::array({1.0f, 2.0f})}, false});
  c.push_back({"CustomKernel+init_value", ck(1.5f), {mx::array({1.0f, 2.0f})}, false});
  auto q = arange_f(16, {1, 1, 2, 8}) * 0.1f;
  c.push_back({"SDPA",
               [](const mx::Args& a) { return mx::Args{mx::fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.5f)}; },
               {q, q * 0.5f, q * 0.25f}});
  // 0.32.4's FFT stores odd_out: other releases misread each other's FFT nodes, whatever the value.
  auto spec = mx::astype(arange_f(6, {2, 3}), mx::complex64);
  c.push_back({"FFT", [](const mx::Args& a) { return mx::Args{mx::fft::irfft(a[0], 5, -1), mx::fft::irfft(a[0], 4, -1)}; },
               {spec}});
  return c;
}

// Spec 5.2, cell by cell: the contents that make the cell fail ("*" = every file). Rows: writers;
// columns: readers. "0.32.2" is the column/row "HEAD" (SDPA's force_fused, released in 0.32.2); it
// stands for 0.32.2 - 0.32.4 too, whose only difference (0.32.4's FFT odd_out) expected_readable adds.
const std::vector<std::string> kGroups = {"0.30.1-0.31.1", "0.31.2", "0.32.0", "0.32.1", "0.32.2"};
const std::map<std::pair<std::string, std::string>, std::set<std::string>> kMatrix = {
    {{"0.30.1-0.31.1", "0.30.1-0.31.1"}, {}},
    {{"0.30.1-0.31.1", "0.31.2"}, {"SliceUpdate"}},
    {{"0.30.1-0.31.1", "0.32.0"}, {"SliceUpdate", "CustomKernel"}},
    {{"0.30.1-0.31.1", "0.32.1"}, {"*"}},
    {{"0.30.1-0.31.1", "0.32.2"}, {"*"}},
    {{"0.31.2", "0.30.1-0.31.1"}, {"SliceUpdate"}},
    {{"0.31.2", "0.31.2"}, {}},
    {{"0.31.2", "0.32.0"}, {"CustomKernel"}},
    {{"0.31.2", "0.32.1"}, {"*"}},
    {{"0.31.2", "0.32.2"}, {"*"}},
    {{"0.32.0", "0.30.1-0.31.1"}, {"SliceUpdate", "CustomKernel"}},
    {{"0.32.0", "0.31.2"}, {"CustomKernel"}},
    {{"0.32.0", "0.32.0"}, {}},
    {{"0.32.0", "0.32.1"}, {"*"}},
    {{"0.32.0", "0.32.2"}, {"*"}},
    {{"0.32.1", "0.30.1-0.31.1"}, {"*"}},
    {{"0.32.1", "0.31.2"}, {"*"}},
    {{"0.32.1", "0.32.0"}, {"*"}},
    {{"0.32.1", "0.32.1"}, {}},
    {{"0.32.1", "0.32.2"}, {"SDPA"}},  // "at HEAD, except SDPA nodes (A6)"
    {{"0.32.2", "0.30.1-0.31.1"}, {"*"}},
    {{"0.32.2", "0.31.2"}, {"*"}},
    {{"0.32.2", "0.32.0"}, {"*"}},
    {{"0.32.2", "0.32.1"}, {"SDPA"}},
    {{"0.32.2", "0.32.2"}, {}},
};

std::string group_of(const std::string& v) {
  auto x = ver(v);
  if (x < ver("0.31.2")) return "0.30.1-0.31.1";
  if (x < ver("0.32.0")) return "0.31.2";
  if (x < ver("0.32.1")) return "0.32.0";
  if (x < ver("0.32.2")) return "0.32.1";
  return "0.32.2";
}

bool fft_odd_out(const std::string& v) { return !(ver(v) < ver("0.32.4")); }

bool expected_readable(const std::string& writer, const std::string& reader, const std::string& content) {
  auto& fails = kMatrix.at({group_of(writer), group_of(reader)});
  if (fails.count("*")) return false;
  std::string base = content.substr(0, content.find('+'));
  if (base == "FFT" && fft_odd_out(writer) != fft_odd_out(reader)) return false;
  if (fails.count(base)) return false;
  // The cell's footnote: before 0.31.1, a CustomKernel with init_value fails (spec 5.1 B2).
  if (content == "CustomKernel+init_value" && ver(reader) < ver("0.31.1")) return false;
  return true;
}

}  // namespace

TEST(VersionsMatrix, Spec5_2EveryCell) {
  const std::vector<std::string> writers = {"0.30.1", "0.31.0", "0.31.1", "0.31.2", "0.32.0",
                                            "0.32.1", "0.32.2", "0.32.3", "0.32.4"};
  const std::vector<std::string> readers = writers;
  int cells = 0, readable = 0;
  for (auto& content : contents_5_2()) {
    for (auto& w : writers) {
      auto bytes = export_bytes(content.fn, content.args, w);
      // kiln reads every writer's file, and runs it.
      auto path = temp_file("matrix_read");
      write_bytes(path, bytes);
      auto f = mx::import_function(path);
      EXPECT_EQ(f.info().version, w);
      if (content.runs) {
        auto ref = content.fn(content.args);
        auto got = f(content.args);
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_TRUE(mx::allclose(got[i], ref[i], 1e-5, 1e-5).item<bool>()) << content.name << " " << w;
        }
      }
      std::filesystem::remove(path);
      for (auto& r : readers) {
        bool want = expected_readable(w, r, content.name);
        EXPECT_EQ(mlx_reads(bytes, r), want)
            << content.name << " written by " << w << ", read by MLX " << r << ": spec 5.2 says "
            << (want ? "readable" : "not readable");
        ++cells;
        readable += want;
      }
    }
  }
  std::printf("[versions] spec 5.2: %d cells checked (%d readable by MLX), every file read by kiln\n", cells,
              readable);
}

// Spec 5.0.6: what a v0.30.1 reader can take from each older release.
TEST(VersionsMatrix, Spec5_0_6OlderFilesInV0_30_1) {
  auto m = arange_f(6, {3, 2}) + 1.0f;
  auto q = arange_f(16, {1, 1, 2, 8}) * 0.1f;
  auto w = arange_f(8 * 64, {8, 64}) * 0.01f;
  auto x = arange_f(2 * 64, {2, 64}) * 0.02f;
  auto w3 = arange_f(3 * 8 * 64, {3, 8, 64}) * 0.001f;
  auto x3 = arange_f(4 * 64, {4, 1, 64}) * 0.01f;
  auto idx = mx::astype(mx::array({0, 1, 1, 2}), mx::uint32);
  std::vector<Content> contents;
  contents.push_back({"plain", [](const mx::Args& a) { return mx::Args{mx::exp(a[0]) * 2.0f}; }, {m}});
  contents.push_back({"bfloat16", [](const mx::Args& a) { return mx::Args{mx::astype(a[0], mx::bfloat16)}; }, {m}});
  contents.push_back({"SVD", [](const mx::Args& a) { return mx::linalg::svd(a[0], true); }, {m}, false});
  contents.push_back({"SDPA",
                      [](const mx::Args& a) { return mx::Args{mx::fast::scaled_dot_product_attention(a[0], a[1], a[2], 0.5f)}; },
                      {q, q, q}});
  contents.push_back({"GatherMM",
                      [](const mx::Args& a) { return mx::Args{mx::gather_mm(a[0], a[1], std::nullopt, a[2])}; },
                      {arange_f(4 * 6, {4, 2, 3}), arange_f(36, {3, 3, 4}), idx}});
  contents.push_back({"GatherQMM",
                      [](const mx::Args& a) {
                        auto qw = mx::quantize(a[1], 32, 4);
                        return mx::Args{mx::gather_qmm(a[0], qw[0], qw[1], qw[2], std::nullopt, a[2], true, 32, 4)};
                      },
                      {x3, w3, idx}});
  contents.push_back({"QuantizedMatmul",
                      [](const mx::Args& a) {
                        return mx::Args{mx::quantized_matmul(a[0], a[1], a[2], a[3], true, 32, 4)};
                      },
                      {x, mx::quantize(w, 32, 4)[0], mx::quantize(w, 32, 4)[1], mx::quantize(w, 32, 4)[2]}});
  // Distinct strides and paddings, so that a rotated state cannot look right.
  contents.push_back({"Convolution",
                      [](const mx::Args& a) {
                        return mx::Args{mx::conv_general(a[0], a[1], std::vector<int>{2}, std::vector<int>{3}, std::vector<int>{1}, std::vector<int>{1}, std::vector<int>{1}, 1, false)};
                      },
                      {arange_f(18, {1, 9, 2}), arange_f(12, {2, 3, 2})}});
  contents.push_back({"Quantize", [](const mx::Args& a) { return mx::quantize(a[0], 32, 4); }, {w}});
  // The releases in each range of spec 5.0.6, and what fails there.
  const std::vector<std::pair<std::vector<std::string>, std::set<std::string>>> ranges = {
      {{"0.22.0", "0.22.1"},
       {"bfloat16", "SVD", "SDPA", "GatherMM", "GatherQMM", "QuantizedMatmul", "Convolution", "Quantize"}},
      {{"0.23.0", "0.23.1"}, {"SVD", "SDPA", "GatherMM", "GatherQMM", "QuantizedMatmul", "Convolution", "Quantize"}},
      {{"0.23.2"}, {"SDPA", "GatherMM", "GatherQMM", "QuantizedMatmul", "Convolution", "Quantize"}},
      {{"0.24.0", "0.24.2"}, {"SDPA", "GatherMM", "GatherQMM", "QuantizedMatmul", "Convolution", "Quantize"}},
      {{"0.25.0", "0.25.1"}, {"SDPA", "QuantizedMatmul", "GatherQMM", "Convolution", "Quantize"}},
      {{"0.25.2", "0.26.1"}, {"SDPA", "QuantizedMatmul", "GatherQMM", "Quantize", "Convolution"}},
      {{"0.26.2", "0.28.0"}, {"SDPA", "QuantizedMatmul", "GatherQMM", "Quantize"}},
      {{"0.29.0", "0.29.4"}, {"SDPA"}},
      {{"0.30.0"}, {}},
  };
  int cells = 0;
  for (auto& [versions, fails] : ranges) {
    for (auto& v : versions) {
      for (auto& c : contents) {
        auto bytes = export_bytes(c.fn, c.args, v);
        EXPECT_EQ(mlx_reads(bytes, "0.30.1"), !fails.count(c.name))
            << c.name << " written by " << v << " read by MLX 0.30.1";
        // kiln reads it in its own layout, with the same results as the 0.30.1 file.
        auto path = temp_file("older");
        write_bytes(path, bytes);
        auto f = mx::import_function(path);
        EXPECT_EQ(f.info().format, v);
        if (c.runs) {
          auto got = f(c.args);
          auto ref = c.fn(c.args);
          ASSERT_EQ(got.size(), ref.size());
          for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_TRUE(mx::array_equal(got[i], ref[i], true).item<bool>()) << c.name << " " << v << " output " << i;
          }
        }
        std::filesystem::remove(path);
        ++cells;
      }
    }
  }
  std::printf("[versions] spec 5.0.6: %d (release, content) cells checked\n", cells);
}

// The real files agree with the matrix where wheels exist: a 0.32.1 file cannot be read by 0.32.0
// (and the reverse), a 0.31.2 SliceUpdate not by 0.31.1.
TEST(VersionsMatrix, RealFilesAcrossTheMetadataAndSliceUpdateChanges) {
  const std::string root = std::string(KILN_TEST_DATA) + "/golden/versions/";
  auto bytes = [&](const std::string& v, const std::string& c) { return read_bytes(root + v + "/" + c + "/" + c + ".mlxfn"); };
  for (auto& c : {"plain_ops", "kwargs", "conv2d", "quantized_matmul"}) {
    EXPECT_TRUE(mlx_reads(bytes("0.32.1", c), "0.32.1")) << c;
    EXPECT_TRUE(mlx_reads(bytes("0.32.1", c), "0.32.2")) << c;
    EXPECT_FALSE(mlx_reads(bytes("0.32.1", c), "0.32.0")) << c;
    EXPECT_FALSE(mlx_reads(bytes("0.32.0", c), "0.32.1")) << c;
    EXPECT_TRUE(mlx_reads(bytes("0.32.0", c), "0.30.1")) << c;
    EXPECT_TRUE(mlx_reads(bytes("0.30.1", c), "0.32.0")) << c;
  }
  EXPECT_TRUE(mlx_reads(bytes("0.31.2", "slice_update"), "0.31.2"));
  EXPECT_FALSE(mlx_reads(bytes("0.31.2", "slice_update"), "0.31.1"));
  EXPECT_FALSE(mlx_reads(bytes("0.30.1", "slice_update"), "0.31.2"));
  // MLX 0.25.2 - 0.26.1 rebuild Convolution with rotated strides and paddings (spec 5.0.2 A11): their
  // own strided, asymmetric files do not survive; stride 1 with equal paddings does.
  EXPECT_FALSE(mlx_reads(bytes("0.25.2", "conv_general_asym"), "0.25.2"));
  EXPECT_FALSE(mlx_reads(bytes("0.26.1", "conv_general_asym"), "0.26.1"));
  EXPECT_TRUE(mlx_reads(bytes("0.25.2", "conv2d"), "0.25.2"));
  EXPECT_TRUE(mlx_reads(bytes("0.26.2", "conv_general_asym"), "0.26.2"));
  EXPECT_TRUE(mlx_reads(bytes("0.32.0", "custom_kernel"), "0.32.0"));
  EXPECT_FALSE(mlx_reads(bytes("0.32.0", "custom_kernel"), "0.31.2"));
}
