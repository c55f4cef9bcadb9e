// Little-endian byte encoding for the .mlxfn codec. Every scalar is assembled byte by byte, so the
// output is the same on any host; nothing here memcpy's a host integer into the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/random_access.h"
#include "kiln/array.h"

namespace kiln::format {

// Appends encoded values to an in-memory buffer. Constant payloads are not copied into the buffer:
// they are recorded as (position, array) and streamed when the record is written out.
class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  void boolean(bool v) { buf_.push_back(v ? 1 : 0); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v);
  void f64(double v);
  void str(const std::string& s) {
    u64(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  void raw(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  // A constant's payload: its logical row-major contents, little-endian, inserted here when written.
  void payload(const array& a) { payloads_.emplace_back(buf_.size(), a); }

  const std::vector<uint8_t>& bytes() const { return buf_; }
  const std::vector<std::pair<size_t, array>>& payloads() const { return payloads_; }
  // Size including the payloads.
  uint64_t total_size() const;
  // Everything (payloads included) as one contiguous byte vector; for tests and small records.
  std::vector<uint8_t> flatten() const;

 private:
  std::vector<uint8_t> buf_;
  std::vector<std::pair<size_t, array>> payloads_;
};

// The row-major little-endian bytes of an evaluated array (a copy when it is a strided view or
// when the host is big-endian).
std::vector<uint8_t> payload_bytes(const array& a);

// The random-access byte sources the reader decodes from live in io/ (io/random_access.h).
using Source = io_detail::RandomSource;
using FileSource = io_detail::RandomFileSource;
using MemorySource = io_detail::RandomMemorySource;

// Sequential, bounds-checked decoding from a Source through a small window buffer, so memory stays
// bounded whatever the file size. Every failure is an std::invalid_argument "[import_function] ..."
// naming the field, its offset, and what was expected and found.
class ByteReader {
 public:
  explicit ByteReader(const Source& src, uint64_t start = 0);

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return src_.size() - pos_; }
  // Throws unless n more bytes are available.
  void need(uint64_t n, const char* what) const;
  void skip(uint64_t n, const char* what);

  uint8_t u8(const char* what);
  bool boolean(const char* what);  // only 0 or 1
  int32_t i32(const char* what);
  uint32_t u32(const char* what);
  uint64_t u64(const char* what);
  int64_t i64(const char* what);
  float f32(const char* what);
  double f64(const char* what);
  std::string str(const char* what);
  // A u64 element count, checked so that count * min_elem_bytes fits in the remaining bytes.
  uint64_t count(const char* what, uint64_t min_elem_bytes);
  void raw(void* dst, size_t n, const char* what);

  [[noreturn]] void fail(const std::string& msg) const;

 private:
  const uint8_t* take(size_t n, const char* what);
  const Source& src_;
  uint64_t pos_ = 0;
  std::vector<uint8_t> window_;
  uint64_t win_start_ = 0;
  size_t win_len_ = 0;
  size_t next_window_ = 0;  // the last refill's size (bytes.cpp: kMinWindow .. kWindow)
};

}  // namespace kiln::format
