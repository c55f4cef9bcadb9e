// .safetensors save/load: a file written by MLX 0.30.1 (embedded below), round trips of every dtype,
// strided and empty inputs, metadata, atomic writes, and hostile files that must fail with a clear
// message naming what was expected and what was found.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "linalg_test_util.h"

namespace {

namespace mx = kiln;
using ::testing::HasSubstr;
using lt::values;

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file from its JSON header and data bytes.
std::string st_file(const std::string& header, const std::string& data) { return le64(header.size()) + header + data; }

// mx.save_safetensors("m.safetensors", {"b": [True, False, True], "c": [1+2j, 3-1j], "h": bfloat16 [1.5, -2],
// "u": uint16 [[1, 2], [3, 4]], "f": 0.25}, metadata={"format": "mlx"}) with MLX 0.30.1.
const std::string kMlxHeader =
    R"({"__metadata__":{"format":"mlx"},"b":{"data_offsets":[32,35],"dtype":"BOOL","shape":[3]},)"
    R"("c":{"data_offsets":[12,28],"dtype":"C64","shape":[2]},"f":{"data_offsets":[0,4],"dtype":"F32","shape":[]},)"
    R"("h":{"data_offsets":[28,32],"dtype":"BF16","shape":[2]},"u":{"data_offsets":[4,12],"dtype":"U16","shape":[2,2]}})";
const std::string kMlxData(
    "\x00\x00\x80\x3e\x01\x00\x02\x00\x03\x00\x04\x00\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\xbf"
    "\xc0\x3f\x00\xc0\x01\x00\x01",
    35);

std::string saved_bytes(const std::unordered_map<std::string, mx::array>& arrays,
                        const std::unordered_map<std::string, std::string>& metadata = {}) {
  std::ostringstream os;
  mx::save_safetensors(os, arrays, metadata);
  return os.str();
}

mx::SafetensorsLoad from_bytes(const std::string& b) { return mx::load_safetensors_bytes(b.data(), b.size()); }

std::string load_error(const std::string& bytes) {
  return lt::error_of([&] { from_bytes(bytes); });
}

// A file holding one tensor "x" with the given entry and data (by default 8 zero bytes).
std::string one_tensor(const std::string& entry, const std::string& data = std::string(8, '\0')) {
  return st_file("{\"x\":" + entry + "}", data);
}

TEST(Safetensors, ReadsMlxFile) {
  auto [arrays, metadata] = from_bytes(st_file(kMlxHeader, kMlxData));
  ASSERT_EQ(arrays.size(), 5u);
  EXPECT_EQ(metadata, (std::unordered_map<std::string, std::string>{{"format", "mlx"}}));
  EXPECT_EQ(arrays.at("b").dtype(), mx::bool_);
  EXPECT_EQ(values<int>(arrays.at("b")), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(arrays.at("c").dtype(), mx::complex64);
  EXPECT_EQ(lt::cvalues(arrays.at("c")), (std::vector<std::complex<double>>{{1, 2}, {3, -1}}));
  EXPECT_EQ(arrays.at("h").dtype(), mx::bfloat16);
  EXPECT_EQ(values<float>(arrays.at("h")), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(arrays.at("u").dtype(), mx::uint16);
  EXPECT_EQ(arrays.at("u").shape(), (mx::Shape{2, 2}));
  EXPECT_EQ(values<int>(arrays.at("u")), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(arrays.at("f").shape(), mx::Shape{});
  EXPECT_EQ(arrays.at("f").item<float>(), 0.25f);
  // "__metadata__": null, as MLX writes without metadata, means none.
  auto [a2, m2] = from_bytes(st_file(R"({"__metadata__":null,"x":{"data_offsets":[0,4],"dtype":"F32","shape":[]}})",
                                     std::string("\0\0@@", 4)));
  EXPECT_TRUE(m2.empty());
  EXPECT_EQ(a2.at("x").item<float>(), 3.0f);
}

TEST(Safetensors, RoundTripEveryDtype) {
  auto base = lt::random({3, 5}, 11);
  std::unordered_map<std::string, mx::array> in;
  for (int code = 0; code < mx::Dtype::num_types; ++code) {
    mx::Dtype t = mx::dtype_from_code(code);
    in.emplace(mx::dtype_name(t), mx::astype(mx::multiply(base, mx::array(10.0f)), t));
  }
  auto bytes = saved_bytes(in, {{"k", "v"}, {"empty", ""}});
  auto [out, meta] = from_bytes(bytes);
  EXPECT_EQ(meta, (std::unordered_map<std::string, std::string>{{"k", "v"}, {"empty", ""}}));
  ASSERT_EQ(out.size(), in.size());
  for (auto& [name, a] : in) {
    const auto& r = out.at(name);
    EXPECT_EQ(r.dtype(), a.dtype()) << name;
    EXPECT_EQ(r.shape(), a.shape()) << name;
    if (a.dtype() == mx::complex64) {
      EXPECT_EQ(lt::cvalues(r), lt::cvalues(a));
    } else {
      EXPECT_EQ(values<double>(r), values<double>(a)) << name;
    }
  }
  // The header is padded to 8 bytes and every tensor starts aligned to its item size.
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  for (auto& [name, a] : in) {
    EXPECT_EQ(header[name]["data_offsets"][0].get<uint64_t>() % a.itemsize(), 0u) << name;
  }
  EXPECT_EQ(header["float64"]["dtype"], "F64");
  EXPECT_EQ(header["complex64"]["dtype"], "C64");
  EXPECT_EQ(header["bool"]["dtype"], "BOOL");
  EXPECT_EQ(header["bfloat16"]["dtype"], "BF16");
  // No metadata: no "__metadata__" key.
  auto plain = saved_bytes({{"a", mx::array({1.0f})}});
  EXPECT_EQ(plain.find("__metadata__"), std::string::npos);
}

TEST(Safetensors, StridedEmptyAndLazyInputs) {
  auto a = mx::reshape(mx::arange(24.0f), {4, 6});
  auto t = mx::transpose(a);
  auto s = mx::slice(a, {1, 1}, {4, 6}, {2, 2});
  auto b = mx::broadcast_to(mx::array({1, 2}), {3, 2});
  auto [out, meta] = from_bytes(saved_bytes({{"t", t},
                                             {"s", s},
                                             {"b", b},
                                             {"lazy", mx::add(a, a)},
                                             {"empty", mx::zeros({2, 0, 3}, mx::float16)},
                                             {"empty1", mx::zeros({0}, mx::int8)},
                                             {"scalar", mx::array(-3)}}));
  EXPECT_EQ(out.at("t").shape(), (mx::Shape{6, 4}));
  EXPECT_EQ(values<float>(out.at("t")), values<float>(t));
  EXPECT_EQ(values<float>(out.at("s")), values<float>(s));
  EXPECT_EQ(values<int>(out.at("b")), (std::vector<int>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(values<float>(out.at("lazy"))[5], 10.0f);
  EXPECT_EQ(out.at("empty").shape(), (mx::Shape{2, 0, 3}));
  EXPECT_EQ(out.at("empty").dtype(), mx::float16);
  EXPECT_EQ(out.at("empty1").shape(), (mx::Shape{0}));
  EXPECT_EQ(out.at("scalar").item<int>(), -3);
  // Nothing at all.
  auto [none, nm] = from_bytes(saved_bytes({}));
  EXPECT_TRUE(none.empty());
}

TEST(Safetensors, ReadsFloat8E4M3AsBfloat16) {
  // 0x38 = 1.0, 0xc0 = -2.0, 0x01 = 2^-9 (smallest subnormal), 0x7e = 448 (largest), 0x7f = NaN.
  auto [out, meta] =
      from_bytes(st_file(R"({"x":{"dtype":"F8_E4M3","shape":[5],"data_offsets":[0,5]}})", std::string("\x38\xc0\x01\x7e\x7f", 5)));
  auto x = out.at("x");
  EXPECT_EQ(x.dtype(), mx::bfloat16);
  auto v = values<float>(x);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], std::ldexp(1.0f, -9));
  EXPECT_EQ(v[3], 448.0f);
  EXPECT_TRUE(std::isnan(v[4]));
}

TEST(Safetensors, Files) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kiln_st_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto a = lt::random({4, 3}, 9);
  mx::save_safetensors((dir / "a.safetensors").string(), {{"w", a}}, {{"m", "1"}});
  auto [out, meta] = mx::load_safetensors((dir / "a.safetensors").string());
  EXPECT_EQ(values<float>(out.at("w")), values<float>(a));
  EXPECT_EQ(meta.at("m"), "1");
  // As MLX does, ".safetensors" is appended when missing.
  mx::save_safetensors((dir / "b").string(), {{"w", a}});
  EXPECT_TRUE(fs::exists(dir / "b.safetensors"));
  // From a stream.
  std::ifstream in(dir / "b.safetensors", std::ios::binary);
  EXPECT_EQ(values<float>(mx::load_safetensors(in).first.at("w")), values<float>(a));
  EXPECT_THAT(lt::error_of([&] { mx::load_safetensors((dir / "missing.safetensors").string()); }),
              HasSubstr("[load_safetensors] Failed to open"));
  EXPECT_THAT(lt::error_of([&] { mx::save_safetensors((dir / "no" / "dir.safetensors").string(), {{"w", a}}); }),
              HasSubstr("[save_safetensors] Failed to open"));
  // A failing save leaves the previous file as it was and no temporary file behind.
  const auto before = fs::file_size(dir / "a.safetensors");
  EXPECT_THAT(lt::error_of([&] { mx::save_safetensors((dir / "a.safetensors").string(), {{"__metadata__", a}}); }),
              HasSubstr("reserved"));
  EXPECT_THAT(lt::error_of([&] {
                mx::save_safetensors((dir / "a.safetensors").string(), {{"w", a}}, {{"bad", std::string("\xff\xfe", 2)}});
              }),
              HasSubstr("valid UTF-8"));
  EXPECT_EQ(fs::file_size(dir / "a.safetensors"), before);
  EXPECT_EQ(mx::load_safetensors((dir / "a.safetensors").string()).second.at("m"), "1");
  // .npy saves are atomic too.
  mx::save((dir / "c.npy").string(), a);
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().find(".kiln-tmp"), std::string::npos) << e.path();
    ++files;
  }
  EXPECT_EQ(files, 3);
  // A truncated file on disk.
  std::string b = saved_bytes({{"w", a}});
  {
    std::ofstream f(dir / "t.safetensors", std::ios::binary);
    f.write(b.data(), static_cast<std::streamsize>(b.size() - 5));
  }
  EXPECT_THAT(lt::error_of([&] { mx::load_safetensors((dir / "t.safetensors").string()); }),
              HasSubstr("expected data_offsets within the data section of 43 bytes but found [0, 48]"));
  fs::remove_all(dir);
}

TEST(Safetensors, HostileFilesFailClearly) {
  const std::string good = st_file(kMlxHeader, kMlxData);
  EXPECT_EQ(load_error(good), "");
  auto err = [](const std::string& bytes) { return load_error(bytes); };

  // Truncated before, inside and after the header.
  EXPECT_THAT(err(""), HasSubstr("[load_safetensors] Truncated file: expected 8 bytes of header length but found 0 in memory."));
  EXPECT_THAT(err(good.substr(0, 5)), HasSubstr("expected 8 bytes of header length but found 5"));
  EXPECT_THAT(err(good.substr(0, 20)), HasSubstr("Truncated file: expected a JSON header of 308 bytes but found 12"));
  EXPECT_THAT(err(good.substr(0, good.size() - 1)),
              HasSubstr("Invalid entry for the tensor 'b': expected data_offsets within the data section of 34 bytes "
                        "but found [32, 35]"));
  // Header lengths: zero, huge, beyond the file.
  EXPECT_THAT(err(le64(0) + "{}"), HasSubstr("Invalid header length: expected 1 to 100000000 bytes but found 0"));
  EXPECT_THAT(err(le64(~0ULL) + "{}"),
              HasSubstr("Invalid header length: expected 1 to 100000000 bytes but found 18446744073709551615"));
  EXPECT_THAT(err(le64(100000001) + "{}"), HasSubstr("but found 100000001"));
  EXPECT_THAT(err(le64(99999999) + "{}"), HasSubstr("Truncated file: expected a JSON header of 99999999 bytes but found 2"));
  // Bad JSON.
  EXPECT_THAT(err(st_file("{\"x\":", "")), HasSubstr("[load_safetensors] Invalid JSON header: [json.exception.parse_error"));
  EXPECT_THAT(err(st_file("not json", "")), HasSubstr("Invalid JSON header"));
  EXPECT_THAT(err(st_file("[1, 2]", "")), HasSubstr("Invalid JSON header: expected an object but found an array"));
  EXPECT_THAT(err(st_file("{} x", "")), HasSubstr("Invalid JSON header"));
  EXPECT_THAT(err(st_file("{\"a\":\"\xff\"}", "")), HasSubstr("Invalid JSON header"));
  EXPECT_THAT(err(st_file(std::string(100, '[') + std::string(100, ']'), "")),
              HasSubstr("expected at most 32 levels of nesting"));
  EXPECT_THAT(err(st_file(std::string(5000, '{'), "")), HasSubstr("Invalid JSON header"));
  // Duplicate names (and duplicate keys anywhere).
  EXPECT_THAT(err(st_file(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                          R"("x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                          "ab")),
              HasSubstr("expected unique keys but found 'x' twice"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]})")),
              HasSubstr("found 'dtype' twice"));
  // Entries.
  EXPECT_THAT(err(one_tensor("[1]")), HasSubstr("Invalid entry for the tensor 'x': expected an object but found an array"));
  EXPECT_THAT(err(one_tensor(R"({"shape":[2],"data_offsets":[0,8]})")),
              HasSubstr("expected the key 'dtype' but found none"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","data_offsets":[0,8]})")), HasSubstr("expected the key 'shape'"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[2]})")), HasSubstr("expected the key 'data_offsets'"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F99","shape":[2],"data_offsets":[0,8]})")),
              HasSubstr("expected a dtype among BOOL, U8, U16, U32, U64, I8, I16, I32, I64, F16, BF16, F32, F64, C64, "
                        "F8_E4M3 but found 'F99'"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":7,"shape":[2],"data_offsets":[0,8]})")),
              HasSubstr("expected a string for 'dtype' but found an integer"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})")),
              HasSubstr("(shape): expected a non-negative integer but found an integer"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})")),
              HasSubstr("expected a non-negative integer but found a floating-point number"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})")),
              HasSubstr("expected an array for 'shape' but found an integer"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[4294967296],"data_offsets":[0,8]})")),
              HasSubstr("expected shape dimensions below 2^31 but found 4294967296"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})")),
              HasSubstr("expected 'data_offsets' to be [begin, end] but found an array of 1 values"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})")),
              HasSubstr("expected data_offsets with begin <= end but found [8, 0]"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0,-8]})")),
              HasSubstr("(data_offsets): expected a non-negative integer"));
  // Shape and size disagree.
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})")),
              HasSubstr("expected data_offsets spanning 12 bytes for the shape [3] of F32 but found [0, 8] (8 bytes)"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F64","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]})")),
              HasSubstr("spanning more than 2^64 bytes"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"U8","shape":[65536,65536,4096],"data_offsets":[0,17592186044416]})")),
              HasSubstr("expected data_offsets within the data section of 8 bytes but found [0, 17592186044416]"));
  // Offsets beyond the data, overlapping, with holes, with trailing bytes.
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})")),
              HasSubstr("expected data_offsets within the data section of 8 bytes but found [4, 12]"));
  EXPECT_THAT(err(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          std::string(8, '\0'))),
              HasSubstr("Invalid entry for the tensor 'b': expected data_offsets starting at 8 or later but found [4, 8], "
                        "which overlaps the tensor 'a'"));
  EXPECT_THAT(err(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0'))),
              HasSubstr("expected the tensor 'a' to start at byte 0 of the data section but found 4 (a hole of 4 bytes"));
  EXPECT_THAT(err(one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", std::string(9, '\0'))),
              HasSubstr("expected the tensors to cover the data section of 9 bytes but found them ending at byte 8 "
                        "(1 trailing bytes)"));
  EXPECT_THAT(err(st_file("{}", "x")), HasSubstr("found them ending at byte 0 (1 trailing bytes)"));
  // Metadata.
  EXPECT_THAT(err(st_file(R"({"__metadata__":{"a":1}})", "")),
              HasSubstr("Invalid metadata: expected a string value for the key 'a' but found an integer"));
  EXPECT_THAT(err(st_file(R"({"__metadata__":{"a":{"b":"c"}}})", "")), HasSubstr("but found an object"));
  EXPECT_THAT(err(st_file(R"({"__metadata__":"x"})", "")),
              HasSubstr("Invalid metadata: expected an object (or null) but found a string"));
  EXPECT_THAT(err(st_file(R"({"__metadata__":{"a":"1","a":"2"}})", "")), HasSubstr("found 'a' twice"));
  // Bool bytes other than 0 and 1 read as true.
  auto [bools, bm] = from_bytes(st_file(R"({"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\x00\x02\xff", 3)));
  EXPECT_EQ(values<int>(bools.at("b")), (std::vector<int>{0, 1, 1}));
  // A non-seekable stream: the layout is still checked at its end.
  {
    struct NoSeek : std::streambuf {
      std::string s;
      size_t i = 0;
      explicit NoSeek(std::string v) : s(std::move(v)) {}
      int_type underflow() override { return i < s.size() ? traits_type::to_int_type(s[i]) : traits_type::eof(); }
      int_type uflow() override { return i < s.size() ? traits_type::to_int_type(s[i++]) : traits_type::eof(); }
    };
    NoSeek ok(good);
    std::istream in_ok(&ok);
    EXPECT_EQ(mx::load_safetensors(in_ok).first.size(), 5u);
    NoSeek extra(good + "z");
    std::istream in_extra(&extra);
    EXPECT_THAT(lt::error_of([&] { mx::load_safetensors(in_extra); }), HasSubstr("found trailing bytes after byte 35"));
    NoSeek cut(good.substr(0, good.size() - 2));
    std::istream in_cut(&cut);
    EXPECT_THAT(lt::error_of([&] { mx::load_safetensors(in_cut); }),
                HasSubstr("Truncated file: expected 3 bytes of data for the tensor 'b' but found 1 in stream."));
  }
}

TEST(Safetensors, ConcurrentSavesToOnePathLeaveOneWholeFile) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kiln_st_conc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "w.safetensors").string();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto a = mx::full({64, 64}, mx::array(static_cast<float>(t)));
      for (int i = 0; i < 8; ++i) mx::save_safetensors(path, {{"w", a}}, {{"writer", std::to_string(t)}});
    });
  }
  for (auto& th : threads) th.join();
  auto [arrays, meta] = mx::load_safetensors(path);
  const float v = static_cast<float>(std::stoi(meta.at("writer")));
  for (float x : values<float>(arrays.at("w"))) ASSERT_EQ(x, v);
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

}  // namespace
