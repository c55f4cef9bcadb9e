// Array files under mutation, as the .mlxfn loader is tested (tests/hostile): a valid .safetensors file,
// valid .npy files of several dtypes and valid .gguf files, truncated at every byte and with every single
// bit flipped.
// Each variant must either load, with arrays whose byte sizes fit in the file, or be refused with
// kiln's error ("[load...]", std::invalid_argument or std::runtime_error); never crash or hang.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <kiln/kiln.h>

namespace {

namespace mx = kiln;

std::string safetensors_bytes() {
  std::ostringstream out;
  mx::save_safetensors(out,
                       {{"w", mx::array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2})},
                        {"i", mx::array({1, 2, 3}, mx::int16)},
                        {"b", mx::array({true, false})}},
                       {{"format", "mlx"}});
  return out.str();
}

std::string npy_bytes(const mx::array& a) {
  std::ostringstream out;
  mx::save(out, a);
  return out.str();
}

struct Counts {
  size_t loaded = 0, refused = 0;
};

template <typename Load>
void sweep(const std::string& good, Load load, Counts& c, const char* what) {
  auto one = [&](const std::string& bytes) {
    try {
      size_t total = load(bytes);
      EXPECT_LE(total, bytes.size()) << what << ": arrays larger than the file";
      ++c.loaded;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[load", 0), 0u) << what << ": " << e.what();
      ++c.refused;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[load", 0), 0u) << what << ": " << e.what();
      ++c.refused;
    }
  };
  for (size_t n = 0; n < good.size(); ++n) one(good.substr(0, n));
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string m = good;
      m[i] = static_cast<char>(m[i] ^ (1 << bit));
      one(m);
    }
  }
}

TEST(IoMutation, SafetensorsTruncationsAndBitFlips) {
  const std::string good = safetensors_bytes();
  Counts c;
  sweep(
      good,
      [](const std::string& b) {
        auto [arrays, meta] = mx::load_safetensors_bytes(b.data(), b.size());
        size_t total = 0;
        for (auto& [k, v] : arrays) total += v.nbytes();
        return total;
      },
      c, "safetensors");
  EXPECT_GT(c.refused, good.size());  // every truncation at least
  EXPECT_GT(c.loaded, 0u);            // flips inside the data section still load
}

TEST(IoMutation, NpyTruncationsAndBitFlips) {
  for (const auto& a : {mx::array({1.5f, -2.0f, 3.0f}, {3}), mx::array({1, 2, 3, 4}, {2, 2}, mx::int64),
                        mx::array({true, false}), mx::array({1.0f, 2.0f}, {2}, mx::bfloat16),
                        mx::array({mx::complex64_t(1, 2)})}) {
    const std::string good = npy_bytes(a);
    Counts c;
    sweep(
        good,
        [](const std::string& b) {
          auto r = mx::load_npy(b.data(), b.size());
          return r.nbytes();
        },
        c, mx::dtype_name(a.dtype()).c_str());
    EXPECT_GE(c.refused, good.size()) << mx::dtype_name(a.dtype());
  }
}

// .gguf is read from paths: each variant is written to one scratch file. The file has every kind of
// metadata value and a plain and a Q4_0 tensor (whose loaded arrays are at most 20/18 of its bytes).
TEST(IoMutation, GgufTruncationsAndBitFlips) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/kiln_io_mutation_" + std::to_string(::getpid()) + ".gguf";
  mx::save_gguf(path, {{"w", mx::array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2})}, {"i", mx::array({1, 2, 3}, mx::int16)}},
                {{"s", std::string("mlx")}, {"v", std::vector<std::string>{"a", "bc"}}, {"n", mx::array(7)},
                 {"f", mx::array({0.5f, 1.5f})}});
  std::string plain;
  {
    std::ifstream f(path, std::ios::binary);
    plain.assign(std::istreambuf_iterator<char>(f), {});
  }
  // One Q4_0 tensor of 32 weights (one block: a float16 scale, 16 bytes of nibbles), hand-built.
  auto le32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  auto le64 = [](uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  std::string q = "GGUF" + le32(3) + le64(1) + le64(0) + le64(1) + "q" + le32(1) + le64(32) + le32(2) + le64(0);
  q.resize(32, '\0');
  q += std::string("\x00\x3c", 2) + std::string(16, '\x5a');
  for (const std::string& good : {plain, q}) {
    Counts c;
    sweep(
        good,
        [&](const std::string& b) {
          {
            std::ofstream f(path, std::ios::binary | std::ios::trunc);
            f.write(b.data(), static_cast<std::streamsize>(b.size()));
          }
          auto [arrays, meta] = mx::load_gguf(path);
          size_t total = 0;
          for (auto& [k, v] : arrays) total += v.nbytes();
          return total * 18 / 20;
        },
        c, "gguf");
    EXPECT_GE(c.refused, good.size());  // every truncation at least
    EXPECT_GT(c.loaded, 0u);
  }
  std::remove(path.c_str());
}

}  // namespace
