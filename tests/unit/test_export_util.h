// Helpers shared by the export / import / format tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <kiln/export.h>
#include <kiln/kiln.h>

#include "backend/cpu/loops.h"

namespace kiln_test {

inline std::string temp_file(const std::string& stem) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::path(::testing::TempDir());
  return (dir / ("kiln_" + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".mlxfn"))
      .string();
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  std::string digits;
  for (char c : hex) {
    if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  return out;
}

inline std::string to_hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) s += (i % 16 == 0) ? '\n' : ' ';
    s += d[b[i] >> 4];
    s += d[b[i] & 15];
  }
  return s;
}

inline std::string golden_dir() { return std::string(KILN_TEST_DATA) + "/golden/mlx-0.30.1"; }

// Every .mlxfn under the golden directory, sorted.
inline std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(golden_dir())) {
    if (e.path().extension() == ".mlxfn") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Shape and dtype from a .npy header.
struct NpyInfo {
  kiln::Shape shape;
  kiln::Dtype dtype = kiln::float32;
};
inline NpyInfo npy_info(const std::string& path) {
  auto b = read_bytes(path);
  NpyInfo info;
  if (b.size() < 10) return info;
  size_t hlen = b[6] == 1 ? (b[8] | b[9] << 8) : (b[8] | b[9] << 8 | b[10] << 16 | b[11] << 24);
  size_t start = b[6] == 1 ? 10 : 12;
  std::string h(b.begin() + start, b.begin() + start + hlen);
  std::smatch m;
  if (std::regex_search(h, m, std::regex("'descr':\\s*'([^']*)'"))) {
    std::string d = m[1];
    std::string t = d.substr(1);
    static const std::vector<std::pair<std::string, kiln::Dtype>> map = {
        {"b1", kiln::bool_},   {"u1", kiln::uint8},   {"u2", kiln::uint16},  {"u4", kiln::uint32},
        {"u8", kiln::uint64},  {"i1", kiln::int8},    {"i2", kiln::int16},   {"i4", kiln::int32},
        {"i8", kiln::int64},   {"f2", kiln::float16}, {"f4", kiln::float32}, {"f8", kiln::float64},
        {"c8", kiln::complex64}, {"V2", kiln::bfloat16}};
    for (auto& [k, v] : map) {
      if (t == k) info.dtype = v;
    }
  }
  if (std::regex_search(h, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) {
    std::string s = m[1];
    std::regex num("\\d+");
    for (auto it = std::sregex_iterator(s.begin(), s.end(), num); it != std::sregex_iterator(); ++it) {
      info.shape.push_back(std::stoi(it->str()));
    }
  }
  return info;
}

template <typename T>
std::vector<T> values(kiln::array a) {
  a.eval();
  if (a.dtype() != kiln::storage_dtype_of<T>) a = kiln::astype(a, kiln::storage_dtype_of<T>);
  a.eval();
  kiln::array c = kiln::cpu::contiguous_copy(a);
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.size());
}

}  // namespace kiln_test
