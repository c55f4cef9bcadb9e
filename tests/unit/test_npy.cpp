// .npy save/load: files written by numpy (embedded below), MLX's bfloat16 convention, round trips of every
// dtype and layout, the golden corpus, and malformed files that must fail with a clear message.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "linalg_test_util.h"

namespace {

namespace mx = kiln;
using ::testing::HasSubstr;
using lt::values;

// Generated with numpy 1.x / MLX 0.30.1 (np.save, np.lib.format.write_array(version=...), mx.save).
const std::map<std::string, std::string>& numpy_files() {
  static const std::map<std::string, std::string> files = {
{"f4_c", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x66\x34\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x20\x33\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x00\x00\x00\x00\x80\x3e\x00\x00\x00\x3f\x00\x00\x40\x3f\x00\x00\x80\x3f\x00\x00\xa0\x3f", 152)},
{"f4_be", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x66\x34\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x33\x2c\x20\x32\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x20\xc0\x00\x00\xc0\xbf\x00\x00\x00\xbf\x00\x00\x00\x3f\x00\x00\xc0\x3f\x00\x00\x20\x40", 152)},
{"i2_fortran", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x69\x32\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x54\x72\x75\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x33\x2c\x20\x34\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x04\x00\x08\x00\x01\x00\x05\x00\x09\x00\x02\x00\x06\x00\x0a\x00\x03\x00\x07\x00\x0b\x00", 152)},
{"f8_fortran3d", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x66\x38\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x54\x72\x75\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x20\x33\x2c\x20\x34\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x28\x40\x00\x00\x00\x00\x00\x00\x10\x40\x00\x00\x00\x00\x00\x00\x30\x40\x00\x00\x00\x00\x00\x00\x20\x40\x00\x00\x00\x00\x00\x00\x34\x40\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x2a\x40\x00\x00\x00\x00\x00\x00\x14\x40\x00\x00\x00\x00\x00\x00\x31\x40\x00\x00\x00\x00\x00\x00\x22\x40\x00\x00\x00\x00\x00\x00\x35\x40\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x2c\x40\x00\x00\x00\x00\x00\x00\x18\x40\x00\x00\x00\x00\x00\x00\x32\x40\x00\x00\x00\x00\x00\x00\x24\x40\x00\x00\x00\x00\x00\x00\x36\x40\x00\x00\x00\x00\x00\x00\x08\x40\x00\x00\x00\x00\x00\x00\x2e\x40\x00\x00\x00\x00\x00\x00\x1c\x40\x00\x00\x00\x00\x00\x00\x33\x40\x00\x00\x00\x00\x00\x00\x26\x40\x00\x00\x00\x00\x00\x00\x37\x40", 320)},
{"u8_v2", std::string("\x93\x4e\x55\x4d\x50\x59\x02\x00\x74\x00\x00\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x75\x38\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x33\x2c\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x80\x07\x00\x00\x00\x00\x00\x00\x00", 152)},
{"i8_v3", std::string("\x93\x4e\x55\x4d\x50\x59\x03\x00\x74\x00\x00\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x69\x38\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x20\x31\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x01\x00\x00", 144)},
{"b1", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x7c\x62\x31\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x33\x2c\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x01\x00\x01", 131)},
{"c8_be", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3e\x63\x38\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x3f\x80\x00\x00\x40\x00\x00\x00\x80\x00\x00\x00\xc0\x60\x00\x00", 144)},
{"f2_scalar", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x66\x32\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x3e", 130)},
{"i1", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x7c\x69\x31\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x33\x2c\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x80\x05\x7f", 131)},
{"u2_be", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3e\x75\x32\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x32\x2c\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a\x00\x01\x01\x02", 132)},
{"f4_empty", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x76\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x66\x34\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x46\x61\x6c\x73\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x30\x2c\x20\x33\x29\x2c\x20\x7d\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x0a", 128)},
{"bf16_mlx", std::string("\x93\x4e\x55\x4d\x50\x59\x01\x00\x3c\x00\x7b\x27\x64\x65\x73\x63\x72\x27\x3a\x20\x27\x3c\x56\x32\x27\x2c\x20\x27\x66\x6f\x72\x74\x72\x61\x6e\x5f\x6f\x72\x64\x65\x72\x27\x3a\x20\x54\x72\x75\x65\x2c\x20\x27\x73\x68\x61\x70\x65\x27\x3a\x20\x28\x33\x2c\x20\x29\x7d\x20\x20\x20\x20\x0a\xc0\x3f\x00\xc0\x50\x40", 76)},

  };
  return files;
}

mx::array from_numpy(const std::string& name) {
  const std::string& b = numpy_files().at(name);
  return mx::load_npy(b.data(), b.size());
}

std::string saved_bytes(const mx::array& a) {
  std::ostringstream os;
  mx::save(os, a);
  return os.str();
}

mx::array round_trip(const mx::array& a) {
  std::string b = saved_bytes(a);
  return mx::load_npy(b.data(), b.size());
}

TEST(Npy, ReadsNumpyFiles) {
  auto f = from_numpy("f4_c");
  EXPECT_EQ(f.shape(), (mx::Shape{2, 3}));
  EXPECT_EQ(f.dtype(), mx::float32);
  EXPECT_EQ(values<float>(f), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f}));
  // Big-endian data is byte-swapped.
  auto be = from_numpy("f4_be");
  EXPECT_EQ(be.shape(), (mx::Shape{3, 2}));
  EXPECT_EQ(values<float>(be), (std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f}));
  auto u2 = from_numpy("u2_be");
  EXPECT_EQ(u2.dtype(), mx::uint16);
  EXPECT_EQ(values<uint16_t>(u2), (std::vector<uint16_t>{1, 258}));
  auto c8 = from_numpy("c8_be");
  EXPECT_EQ(c8.dtype(), mx::complex64);
  auto cv = values<mx::complex64_t>(c8);
  EXPECT_EQ(cv[0], mx::complex64_t(1, 2));
  EXPECT_EQ(cv[1], mx::complex64_t(0, -3.5f));
  // Fortran order is transposed back into row-major order.
  auto fo = from_numpy("i2_fortran");
  EXPECT_EQ(fo.shape(), (mx::Shape{3, 4}));
  EXPECT_EQ(fo.dtype(), mx::int16);
  EXPECT_TRUE(fo.row_contiguous());
  std::vector<int> want(12);
  for (int i = 0; i < 12; ++i) want[i] = i;
  EXPECT_EQ(values<int>(fo), want);
  auto f3 = from_numpy("f8_fortran3d");
  EXPECT_EQ(f3.shape(), (mx::Shape{2, 3, 4}));
  EXPECT_EQ(f3.dtype(), mx::float64);
  std::vector<double> w3(24);
  for (int i = 0; i < 24; ++i) w3[i] = i;
  EXPECT_EQ(values<double>(f3), w3);
  // Versions 2.0 and 3.0.
  auto u8 = from_numpy("u8_v2");
  EXPECT_EQ(u8.dtype(), mx::uint64);
  EXPECT_EQ(values<uint64_t>(u8), (std::vector<uint64_t>{1, (1ull << 63) + 5, 7}));
  auto i8 = from_numpy("i8_v3");
  EXPECT_EQ(i8.shape(), (mx::Shape{2, 1}));
  EXPECT_EQ(values<int64_t>(i8), (std::vector<int64_t>{-1, 1ll << 40}));
  // Other dtypes, a 0-d array and an empty one.
  EXPECT_EQ(values<bool>(from_numpy("b1")), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(from_numpy("b1").dtype(), mx::bool_);
  auto s = from_numpy("f2_scalar");
  EXPECT_EQ(s.ndim(), 0u);
  EXPECT_EQ(s.dtype(), mx::float16);
  EXPECT_EQ(s.item<float>(), 1.5f);
  EXPECT_EQ(values<int>(from_numpy("i1")), (std::vector<int>{-128, 5, 127}));
  EXPECT_EQ(from_numpy("i1").dtype(), mx::int8);
  auto e = from_numpy("f4_empty");
  EXPECT_EQ(e.shape(), (mx::Shape{0, 3}));
  // bfloat16 as MLX writes it ('<V2').
  auto bf = from_numpy("bf16_mlx");
  EXPECT_EQ(bf.dtype(), mx::bfloat16);
  EXPECT_EQ(values<float>(bf), (std::vector<float>{1.5f, -2.0f, 3.25f}));
}

TEST(Npy, WritesWhatNumpyWrites) {
  // The same header bytes and padding as np.save for a C-order float32 array.
  auto a = mx::array({0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f}, {2, 3});
  EXPECT_EQ(saved_bytes(a), numpy_files().at("f4_c"));
  auto i = mx::array({-128, 5, 127}, {3}, mx::int8);
  EXPECT_EQ(saved_bytes(i), numpy_files().at("i1"));
  EXPECT_EQ(saved_bytes(mx::array(1.5f, mx::float16)), numpy_files().at("f2_scalar"));
  EXPECT_EQ(saved_bytes(mx::array({true, false, true})), numpy_files().at("b1"));
  // Descriptors follow MLX's conventions.
  EXPECT_THAT(saved_bytes(mx::array({1.0f}, {1}, mx::bfloat16)), HasSubstr("'descr': '<V2'"));
  EXPECT_THAT(saved_bytes(mx::array({1.0f}, {1}, mx::complex64)), HasSubstr("'descr': '<c8'"));
  EXPECT_THAT(saved_bytes(mx::array({1.0f}, {1}, mx::uint8)), HasSubstr("'descr': '|u1'"));
  EXPECT_THAT(saved_bytes(mx::array({1.0f}, {1}, mx::float64)), HasSubstr("'descr': '<f8'"));
  // The data starts on a 64-byte boundary.
  for (auto& sh : {mx::Shape{}, mx::Shape{7}, mx::Shape{1, 2, 3, 4, 5, 6, 7, 8}}) {
    std::string b = saved_bytes(mx::zeros(sh, mx::int32));
    EXPECT_EQ((b.size() - mx::shape_size(sh) * 4) % 64, 0u);
  }
}

TEST(Npy, RoundTripEveryDtype) {
  auto base = lt::random({3, 5}, 7);
  for (int code = 0; code < mx::Dtype::num_types; ++code) {
    mx::Dtype t = mx::dtype_from_code(code);
    auto a = mx::astype(mx::multiply(base, mx::array(10.0f)), t);
    auto r = round_trip(a);
    EXPECT_EQ(r.dtype(), t) << mx::dtype_name(t);
    EXPECT_EQ(r.shape(), a.shape());
    if (t == mx::complex64) {
      EXPECT_EQ(values<mx::complex64_t>(r), values<mx::complex64_t>(a));
    } else {
      EXPECT_EQ(values<double>(r), values<double>(a)) << mx::dtype_name(t);
    }
  }
}

TEST(Npy, NonContiguousWrittenInLogicalOrder) {
  auto a = mx::reshape(mx::arange(24.0f), {4, 6});
  auto t = mx::transpose(a);  // (6,4)
  auto r = round_trip(t);
  EXPECT_EQ(r.shape(), (mx::Shape{6, 4}));
  EXPECT_EQ(values<float>(r), values<float>(t));
  auto s = mx::slice(a, {1, 1}, {4, 6}, {2, 2});  // (2,3)
  EXPECT_EQ(values<float>(round_trip(s)), values<float>(s));
  auto b = mx::broadcast_to(mx::array({1.0f, 2.0f}), {3, 2});
  EXPECT_EQ(values<float>(round_trip(b)), (std::vector<float>{1, 2, 1, 2, 1, 2}));
  // Empty arrays and scalars.
  auto e = round_trip(mx::zeros({2, 0, 3}));
  EXPECT_EQ(e.shape(), (mx::Shape{2, 0, 3}));
  EXPECT_EQ(round_trip(mx::array(-3)).item<int>(), -3);
  // A lazy array is evaluated first.
  EXPECT_EQ(values<float>(round_trip(mx::add(a, a)))[5], 10.0f);
}

TEST(Npy, Files) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kiln_npy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto a = lt::random({4, 3}, 9);
  mx::save((dir / "a.npy").string(), a);
  EXPECT_EQ(values<float>(mx::load((dir / "a.npy").string())), values<float>(a));
  // As MLX does, ".npy" is appended when missing.
  mx::save((dir / "b").string(), a);
  EXPECT_TRUE(fs::exists(dir / "b.npy"));
  EXPECT_THAT(lt::error_of([&] { mx::load((dir / "missing.npy").string()); }), HasSubstr("[load] Failed to open"));
  EXPECT_THAT(lt::error_of([&] { mx::save((dir / "no" / "such" / "dir.npy").string(), a); }),
              HasSubstr("[save] Failed to open"));
  // A truncated file on disk.
  std::string b = saved_bytes(a);
  {
    std::ofstream f(dir / "t.npy", std::ios::binary);
    f.write(b.data(), static_cast<std::streamsize>(b.size() - 5));
  }
  EXPECT_THAT(lt::error_of([&] { mx::load((dir / "t.npy").string()); }),
              HasSubstr("Truncated file: expected 48 bytes of data but found 43"));
  // From a stream.
  std::istringstream in(b);
  EXPECT_EQ(values<float>(mx::load(in)), values<float>(a));
  fs::remove_all(dir);
}

TEST(Npy, GoldenCorpus) {
  // Every .npy of the golden corpus (written by MLX) loads and survives a round trip bit for bit.
  namespace fs = std::filesystem;
  int n = 0;
  for (auto& e : fs::recursive_directory_iterator(lt::golden(""))) {
    if (e.path().extension() != ".npy") continue;
    auto a = mx::load(e.path().string());
    auto r = round_trip(a);
    ASSERT_EQ(r.shape(), a.shape()) << e.path();
    ASSERT_EQ(r.dtype(), a.dtype()) << e.path();
    std::string x = saved_bytes(a), y = saved_bytes(r);
    EXPECT_EQ(x, y) << e.path();
    ++n;
  }
  EXPECT_GT(n, 400);
  // Known values (printed by numpy).
  auto m = mx::load(lt::golden("matmul/call0_arg0.npy"));
  EXPECT_EQ(m.shape(), (mx::Shape{3, 4}));
  auto mv = values<float>(m);
  EXPECT_FLOAT_EQ(mv[0], -0.19355136156082153f);
  EXPECT_FLOAT_EQ(mv[2], 0.49863874912261963f);
  auto h = mx::load(lt::golden("dtype_mix/call0_arg0.npy"));
  EXPECT_EQ(h.dtype(), mx::float16);
  EXPECT_EQ(values<float>(h), (std::vector<float>{0.9423828125f, 0.78857421875f, 0.51806640625f, -0.2266845703125f}));
  auto bl = mx::load(lt::golden("unary_logical_not/call0_out0.npy"));
  EXPECT_EQ(bl.dtype(), mx::bool_);
  EXPECT_EQ(bl.shape(), (mx::Shape{3, 5}));
  auto i64 = mx::load(lt::golden("astype_chain/call0_out2.npy"));
  EXPECT_EQ(values<int64_t>(i64), (std::vector<int64_t>{-2, -15, 0, -21, -23, -19, -13, -26}));
}

// A valid v1.0 file with the given header text (padded) and data bytes.
std::string npy_with_header(const std::string& dict, const std::string& data, char major = 1) {
  std::string h = dict;
  size_t pre = major == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64) h.push_back(' ');
  h.push_back('\n');
  std::string out = std::string("\x93NUMPY", 6) + major + '\0';
  uint32_t n = static_cast<uint32_t>(h.size());
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>(n >> 8));
  if (major != 1) out += std::string("\0\0", 2);
  return out + h + data;
}

std::string load_error(const std::string& bytes) {
  return lt::error_of([&] { mx::load_npy(bytes.data(), bytes.size()); });
}

TEST(Npy, MalformedFilesFailClearly) {
  const std::string good = numpy_files().at("f4_c");
  EXPECT_EQ(load_error(good), "");
  EXPECT_EQ(load_error(""), "[load] Truncated file: expected 8 bytes of magic string and version but found 0 in memory.");
  EXPECT_EQ(load_error(std::string("\x93NUMPX\x01\x00", 8)), "[load] Invalid header: expected the magic string \\x93NUMPY in memory.");
  std::string v = good;
  v[6] = 4;
  EXPECT_EQ(load_error(v), "[load] Unsupported npy format version 4.0: expected 1.0, 2.0 or 3.0 in memory.");
  v = good;
  v[7] = 1;
  EXPECT_THAT(load_error(v), HasSubstr("Unsupported npy format version 1.1"));
  // Header length beyond the data.
  v = good;
  v[8] = '\xff';
  v[9] = '\x7f';
  EXPECT_THAT(load_error(v), HasSubstr("Truncated file: expected 32767 bytes of header but found 142"));
  // A v2 header length far beyond any reasonable header.
  std::string big = std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  EXPECT_THAT(load_error(big), HasSubstr("expected a header length of at most 1048576 bytes but found 2147483647"));
  // Truncated data.
  EXPECT_EQ(load_error(good.substr(0, good.size() - 1)),
            "[load] Truncated file: expected 24 bytes of data but found 23 in memory.");
  // Header contents.
  std::string d4(16, '\0');
  EXPECT_EQ(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", d4)), "");
  EXPECT_EQ(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}", d4, 2)), "");
  EXPECT_EQ(load_error(npy_with_header("{\"shape\": (4,), \"descr\": \"<i4\", \"fortran_order\": True}", d4)), "");
  EXPECT_EQ(load_error(npy_with_header("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", d4)),
            "[load] Unsupported dtype descriptor '<c16' in memory: expected one of b1, i1, i2, i4, i8, u1, u2, u4, "
            "u8, f2, f4, f8, c8, V2.");
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'shape': (4,), }", d4)),
              HasSubstr("missing the key 'fortran_order'"));
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", d4)),
              HasSubstr("expected the keys 'descr', 'fortran_order' and 'shape' once each but found 'x'"));
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", d4)),
              HasSubstr("expected a non-negative integer or ')' in the shape at position"));
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': maybe, 'shape': (4,), }", d4)),
              HasSubstr("expected True or False"));
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,) junk", d4)),
              HasSubstr("expected '}' at position"));
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,)}", d4)),
              HasSubstr("shape dimension too large"));
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483647, 2147483647, 2147483647)}", d4)),
              HasSubstr("[load] Invalid header: [load] Shape"));
  // A huge claimed size with little data fails before allocating.
  EXPECT_THAT(load_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000)}", d4)),
              HasSubstr("Truncated file: expected 4000000000000 bytes of data but found 16"));
  std::string nul = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", d4);
  nul[20] = '\0';
  EXPECT_THAT(load_error(nul), HasSubstr("NUL byte"));
  // Bool bytes other than 0 and 1 are normalised.
  std::string bb = npy_with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", std::string("\x00\x07\x01", 3));
  EXPECT_EQ(values<int>(mx::load_npy(bb.data(), bb.size())), (std::vector<int>{0, 1, 1}));
  // Every truncation of a valid file fails cleanly.
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_NE(load_error(good.substr(0, n)), "") << n;
  }
}

}  // namespace
