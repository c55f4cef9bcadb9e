// Byte sources shared by the array-file readers (.npy, .safetensors): a std::istream or a block of
// memory, each with a label ("stream", "memory" or the file's path) for error messages.
#pragma once

#include <algorithm>
#include <cstring>
#include <istream>
#include <optional>
#include <string>

namespace kiln::io_detail {

struct Source {
  virtual ~Source() = default;
  virtual size_t read(void* dst, size_t n) = 0;   // bytes actually read
  virtual std::optional<size_t> remaining() = 0;  // bytes left, when known
  std::string label;
};

struct StreamSource : Source {
  std::istream& in;
  StreamSource(std::istream& i, std::string l) : in(i) { label = std::move(l); }
  size_t read(void* dst, size_t n) override {
    size_t got = 0;
    while (got < n && in) {
      size_t chunk = std::min<size_t>(n - got, size_t(1) << 30);
      in.read(static_cast<char*>(dst) + got, static_cast<std::streamsize>(chunk));
      got += static_cast<size_t>(in.gcount());
      if (in.gcount() == 0) break;
    }
    return got;
  }
  std::optional<size_t> remaining() override {
    auto here = in.tellg();
    if (here < 0) {
      in.clear();
      return std::nullopt;
    }
    in.seekg(0, std::ios::end);
    auto end = in.tellg();
    in.seekg(here);
    if (end < here || !in) {
      in.clear();
      in.seekg(here);
      return std::nullopt;
    }
    return static_cast<size_t>(end - here);
  }
};

struct MemorySource : Source {
  const char* p;
  size_t left;
  MemorySource(const void* d, size_t n) : p(static_cast<const char*>(d)), left(n) { label = "memory"; }
  size_t read(void* dst, size_t n) override {
    size_t k = std::min(n, left);
    if (k) std::memcpy(dst, p, k);
    p += k;
    left -= k;
    return k;
  }
  std::optional<size_t> remaining() override { return left; }
};

}  // namespace kiln::io_detail
