// .gguf save/load (include/kiln/io.h): a file written by MLX 0.30.1 (embedded below), round trips of
// tensors and metadata, llama.cpp's Q4_0 / Q4_1 / Q8_0 blocks read as MLX's affine quantization, the
// dtypes and values that cannot be saved, and hostile files (every truncation, bad counts, offsets and
// types) that must fail with a clear message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kiln/kiln.h"

namespace {

namespace mx = kiln;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln_gguf_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
std::string le(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}
std::string gstr(const std::string& s) { return le<uint64_t>(s.size()) + s; }

std::vector<float> floats(mx::array a) {
  a = mx::astype(a, mx::float32);
  a.eval();
  const float* p = a.data<float>();
  return std::vector<float>(p, p + a.size());
}

// mx.save_gguf("m.gguf", {"a": [1.0, 2.0, 3.0], "b": int32 [[1, 2], [3, 4]], "h": float16 [0.5, -2.0]},
// {"name": "kiln", "n": uint32 7, "v": [1.5, 2.5], "toks": ["a", "bc"]}) with MLX 0.30.1.
const std::string kMlxFile(
    "\x47\x47\x55\x46\x03\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00"
    "\x00\x00\x00\x00\x74\x6f\x6b\x73\x09\x00\x00\x00\x08\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"
    "\x00\x00\x00\x00\x61\x02\x00\x00\x00\x00\x00\x00\x00\x62\x63\x01\x00\x00\x00\x00\x00\x00\x00\x76\x09\x00\x00\x00"
    "\x06\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\xc0\x3f\x00\x00\x20\x40\x01\x00\x00\x00\x00\x00\x00\x00"
    "\x6e\x04\x00\x00\x00\x07\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x6e\x61\x6d\x65\x08\x00\x00\x00\x04\x00\x00"
    "\x00\x00\x00\x00\x00\x6b\x69\x6c\x6e\x01\x00\x00\x00\x00\x00\x00\x00\x68\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00"
    "\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x62\x02\x00\x00\x00\x02"
    "\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x1a\x00\x00\x00\x20\x00\x00\x00\x00\x00\x00\x00\x01"
    "\x00\x00\x00\x00\x00\x00\x00\x61\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x38\x00\xc0\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40",
    332);

// A version-3 file holding one tensor (name, dims innermost first, ggml type) and its data.
std::string one_tensor_file(const std::string& name, std::vector<uint64_t> dims, uint32_t type,
                            const std::string& data, uint64_t offset = 0) {
  std::string h = "GGUF" + le<uint32_t>(3) + le<uint64_t>(1) + le<uint64_t>(0);
  h += gstr(name) + le<uint32_t>(static_cast<uint32_t>(dims.size()));
  for (auto d : dims) h += le<uint64_t>(d);
  h += le<uint32_t>(type) + le<uint64_t>(offset);
  h.resize((h.size() + 31) / 32 * 32, '\0');
  return h + std::string(offset, '\0') + data;
}

uint16_t half(float f) { return mx::float16_t(f).bits; }

}  // namespace

TEST(Gguf, ReadsMlxFile) {
  const fs::path p = scratch("mlx.gguf");
  write_bytes(p, kMlxFile);
  auto [arrays, meta] = mx::load_gguf(p.string());
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(arrays.at("a").dtype(), mx::float32);
  EXPECT_EQ(floats(arrays.at("a")), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(arrays.at("b").dtype(), mx::int32);
  EXPECT_EQ(arrays.at("b").shape(), (mx::Shape{2, 2}));
  EXPECT_EQ(floats(arrays.at("b")), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(arrays.at("h").dtype(), mx::float16);
  EXPECT_EQ(floats(arrays.at("h")), (std::vector<float>{0.5f, -2.0f}));
  ASSERT_EQ(meta.size(), 4u);
  EXPECT_EQ(std::get<std::string>(meta.at("name")), "kiln");
  const mx::array& n = std::get<mx::array>(meta.at("n"));
  EXPECT_EQ(n.ndim(), 0);
  EXPECT_EQ(n.dtype(), mx::uint32);
  EXPECT_EQ(n.item<uint32_t>(), 7u);
  EXPECT_EQ(floats(std::get<mx::array>(meta.at("v"))), (std::vector<float>{1.5f, 2.5f}));
  EXPECT_EQ(std::get<std::vector<std::string>>(meta.at("toks")), (std::vector<std::string>{"a", "bc"}));
}

TEST(Gguf, RoundTripsTensorsAndMetadata) {
  const fs::path p = scratch("rt.gguf");
  std::unordered_map<std::string, mx::array> arrays{
      {"f32", mx::reshape(mx::arange(24.0f), {2, 3, 4})},
      {"f16", mx::astype(mx::array({1.5f, -0.25f, 3.0f}), mx::float16)},
      {"i8", mx::astype(mx::array({-3, 0, 7}), mx::int8)},
      {"i16", mx::astype(mx::array({-300, 0, 700}), mx::int16)},
      {"i32", mx::transpose(mx::reshape(mx::arange(6), {2, 3}))},  // strided: written row-major
      {"scalar", mx::array(2.5f)}};
  std::unordered_map<std::string, mx::GGUFMetaData> meta{
      {"s", std::string("text")},
      {"strs", std::vector<std::string>{"x", "", "yz"}},
      {"u8", mx::astype(mx::array(200), mx::uint8)},
      {"i64s", mx::astype(mx::array({-1, 5}), mx::int64)},
      {"one", mx::array({1.0f})},
      {"flag", mx::array(true)},
      {"f64", mx::astype(mx::array(0.1), mx::float64)}};
  mx::save_gguf(p.string(), arrays, meta);
  auto [got, gmeta] = mx::load_gguf(p.string());
  ASSERT_EQ(got.size(), arrays.size());
  for (auto& [k, v] : arrays) {
    SCOPED_TRACE(k);
    EXPECT_EQ(got.at(k).dtype(), v.dtype());
    EXPECT_EQ(got.at(k).shape(), v.shape());
    EXPECT_TRUE(mx::array_equal(got.at(k), v).item<bool>());
  }
  ASSERT_EQ(gmeta.size(), meta.size());
  EXPECT_EQ(std::get<std::string>(gmeta.at("s")), "text");
  EXPECT_EQ(std::get<std::vector<std::string>>(gmeta.at("strs")), (std::vector<std::string>{"x", "", "yz"}));
  for (const char* k : {"u8", "i64s", "one", "flag", "f64"}) {
    SCOPED_TRACE(k);
    const mx::array& want = std::get<mx::array>(meta.at(k));
    const mx::array& have = std::get<mx::array>(gmeta.at(k));
    EXPECT_EQ(have.dtype(), want.dtype());
    EXPECT_EQ(have.shape(), want.shape());  // 0-d stays 0-d, a 1-element vector a vector
    EXPECT_TRUE(mx::array_equal(have, want).item<bool>());
  }
  // ".gguf" is appended when missing.
  mx::save_gguf(scratch("noext").string(), arrays);
  EXPECT_TRUE(fs::exists(scratch("noext.gguf")));
}

TEST(Gguf, RefusesWhatItCannotSaveAndWritesNothing) {
  const fs::path p = scratch("refused.gguf");
  for (mx::Dtype t : {mx::bool_, mx::uint8, mx::uint32, mx::uint64, mx::int64, mx::bfloat16, mx::complex64}) {
    SCOPED_TRACE(mx::dtype_name(t));
    try {
      mx::save_gguf(p.string(), {{"t", mx::astype(mx::arange(5), t)}});
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("GGUF tensors are written as float32, float16, int8, int16 or int32"));
    }
    EXPECT_FALSE(fs::exists(p));
  }
  std::unordered_map<std::string, mx::array> w{{"w", mx::ones({2})}};
  EXPECT_THROW(mx::save_gguf(p.string(), w, {{"m", mx::ones({1, 1})}}), std::invalid_argument);
  EXPECT_THROW(mx::save_gguf(p.string(), w, {{"m", mx::array(std::vector<float>{}.data(), mx::Shape{0})}}),
               std::invalid_argument);
  EXPECT_THROW(mx::save_gguf(p.string(), w, {{"m", mx::GGUFMetaData{}}}), std::invalid_argument);
  EXPECT_THROW(mx::save_gguf(p.string(), w, {{"m", mx::astype(mx::ones({2}), mx::bfloat16)}}), std::invalid_argument);
  EXPECT_FALSE(fs::exists(p));
}

// llama.cpp's block formats, built here from their definitions, read as MLX's affine quantization and
// dequantized back: Q4_0 w = d (q - 8), Q4_1 w = d q + m, Q8_0 w = d q (q signed), blocks of 32 whose
// first 16 codes are the low nibbles of the 16 bytes and the next 16 the high nibbles.
TEST(Gguf, ReadsQ4_0Q4_1AndQ8_0AsAffineQuantization) {
  const int rows = 2, cols = 64;  // 2 blocks per row
  for (uint32_t type : {2u, 3u, 8u}) {
    SCOPED_TRACE(type);
    std::string data;
    std::vector<float> want;
    for (int b = 0; b < rows * cols / 32; ++b) {
      const float d = 0.125f * static_cast<float>(b + 1), m = -0.5f * static_cast<float>(b);
      data += le<uint16_t>(half(d));
      if (type == 3) data += le<uint16_t>(half(m));
      if (type == 8) {
        for (int j = 0; j < 32; ++j) {
          const int8_t q = static_cast<int8_t>((j * 37 + b * 11) % 256 - 128);
          data += static_cast<char>(q);
          want.push_back(d * q);
        }
      } else {
        uint8_t qs[16];
        std::vector<float> blk(32);
        for (int j = 0; j < 16; ++j) {
          const int lo = (j * 5 + b) % 16, hi = (j * 3 + 7 * b) % 16;
          qs[j] = static_cast<uint8_t>(lo | (hi << 4));
          blk[j] = type == 2 ? d * (lo - 8) : d * lo + m;
          blk[j + 16] = type == 2 ? d * (hi - 8) : d * hi + m;
        }
        data += std::string(reinterpret_cast<char*>(qs), 16);
        want.insert(want.end(), blk.begin(), blk.end());
      }
    }
    const fs::path p = scratch("q.gguf");
    write_bytes(p, one_tensor_file("w", {cols, rows}, type, data));
    auto [arrays, meta] = mx::load_gguf(p.string());
    ASSERT_EQ(arrays.size(), 3u);
    const int bits = type == 8 ? 8 : 4;
    const mx::array& w = arrays.at("w");
    EXPECT_EQ(w.dtype(), mx::uint32);
    EXPECT_EQ(w.shape(), (mx::Shape{rows, cols * bits / 32}));
    EXPECT_EQ(arrays.at("w.scales").dtype(), mx::float16);
    EXPECT_EQ(arrays.at("w.biases").shape(), (mx::Shape{rows, cols / 32}));
    mx::array deq = mx::dequantize(w, arrays.at("w.scales"), arrays.at("w.biases"), 32, bits);
    std::vector<float> got = floats(deq);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6f * (1 + std::fabs(want[i]))) << i;
  }
}

TEST(Gguf, HostileFilesFailClearly) {
  const fs::path p = scratch("bad.gguf");
  auto message = [&](const std::string& bytes) -> std::string {
    write_bytes(p, bytes);
    try {
      mx::load_gguf(p.string());
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  // Every truncation of a valid file fails with a message (no crash, no partial result).
  for (size_t n = 0; n < kMlxFile.size(); ++n) {
    const std::string m = message(kMlxFile.substr(0, n));
    ASSERT_THAT(m, HasSubstr("[load_gguf]")) << "truncated to " << n << " bytes";
  }
  EXPECT_THAT(message("GGML" + kMlxFile.substr(4)), HasSubstr("expected the magic 'GGUF'"));
  EXPECT_THAT(message("GGUF" + le<uint32_t>(1) + kMlxFile.substr(8)), HasSubstr("Unsupported GGUF version 1"));
  // Counts far beyond the file's size are refused before anything is allocated.
  EXPECT_THAT(message("GGUF" + le<uint32_t>(3) + le<uint64_t>(uint64_t(1) << 60) + le<uint64_t>(0)),
              HasSubstr("Invalid the tensor count"));
  std::string huge_string = "GGUF" + le<uint32_t>(3) + le<uint64_t>(0) + le<uint64_t>(1) + le<uint64_t>(uint64_t(1) << 62);
  EXPECT_THAT(message(huge_string), HasSubstr("cannot fit"));
  EXPECT_THAT(message(one_tensor_file("w", {4}, 14, std::string(64, '\0'))),
              HasSubstr("has the ggml type Q6_K (14), which kiln does not read yet"));
  EXPECT_THAT(message(one_tensor_file("w", {8}, 0, std::string(16, '\0'))), HasSubstr("beyond the data section"));
  EXPECT_THAT(message(one_tensor_file("w", {4}, 0, std::string(8, '\0'), 32)), HasSubstr("runs past the end of the file"));
  EXPECT_THAT(message(one_tensor_file("w", {4}, 0, std::string(32, '\0'), 4)), HasSubstr("is not a multiple of the alignment"));
  EXPECT_THAT(message(one_tensor_file("w", {30}, 2, std::string(64, '\0'))), HasSubstr("a multiple of 32"));
  // Two tensors claiming the same bytes: refused (loading could otherwise allocate the file's size per tensor).
  std::string twice = "GGUF" + le<uint32_t>(3) + le<uint64_t>(2) + le<uint64_t>(0);
  for (const char* n : {"a", "b"}) twice += gstr(n) + le<uint32_t>(1) + le<uint64_t>(8) + le<uint32_t>(0) + le<uint64_t>(0);
  twice.resize(96, '\0');
  twice += std::string(32, '\0');
  EXPECT_THAT(message(twice), HasSubstr("beyond the data section"));
  EXPECT_THROW(mx::load_gguf(scratch("missing.gguf").string()), std::invalid_argument);
}
