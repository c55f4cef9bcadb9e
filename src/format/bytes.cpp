#include "format/bytes.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "kiln/ops.h"

namespace kiln::format {

void ByteWriter::f32(float v) { u32(std::bit_cast<uint32_t>(v)); }
void ByteWriter::f64(double v) { u64(std::bit_cast<uint64_t>(v)); }

uint64_t ByteWriter::total_size() const {
  uint64_t n = buf_.size();
  for (auto& [pos, a] : payloads_) n += a.nbytes();
  return n;
}

std::vector<uint8_t> ByteWriter::flatten() const {
  std::vector<uint8_t> out;
  out.reserve(total_size());
  size_t prev = 0;
  for (auto& [pos, a] : payloads_) {
    out.insert(out.end(), buf_.begin() + prev, buf_.begin() + pos);
    auto p = payload_bytes(a);
    out.insert(out.end(), p.begin(), p.end());
    prev = pos;
  }
  out.insert(out.end(), buf_.begin() + prev, buf_.end());
  return out;
}

std::vector<uint8_t> payload_bytes(const array& a0) {
  array a = a0;
  a.eval();
  std::vector<uint8_t> out(a.nbytes());
  if (out.empty()) return out;
  if (a.row_contiguous()) {
    std::memcpy(out.data(), a.raw_data(), out.size());
  } else {
    array c = contiguous(a);
    c.eval();
    std::memcpy(out.data(), c.raw_data(), out.size());
  }
  if constexpr (std::endian::native == std::endian::big) {
    // Element-wise swap; complex64 is two float32 halves.
    size_t w = a.dtype() == complex64 ? 4 : a.itemsize();
    for (size_t i = 0; i + w <= out.size(); i += w) std::reverse(out.begin() + i, out.begin() + i + w);
  }
  return out;
}

// ---- reader ----

namespace {
constexpr size_t kWindow = 1 << 16;
constexpr size_t kMinWindow = 1 << 12;
}

ByteReader::ByteReader(const Source& src, uint64_t start) : src_(src), pos_(start), win_start_(start) {}

void ByteReader::fail(const std::string& msg) const {
  throw std::invalid_argument("[import_function] " + msg);
}

void ByteReader::need(uint64_t n, const char* what) const {
  if (pos_ > src_.size() || n > src_.size() - pos_) {
    std::ostringstream os;
    os << "Unexpected end of file while reading " << what << " at offset " << pos_ << ": expected " << n
       << " bytes but only " << (pos_ > src_.size() ? 0 : src_.size() - pos_) << " remain.";
    fail(os.str());
  }
}

void ByteReader::skip(uint64_t n, const char* what) {
  need(n, what);
  pos_ += n;
}

const uint8_t* ByteReader::take(size_t n, const char* what) {
  need(n, what);
  if (pos_ < win_start_ || pos_ + n > win_start_ + win_len_) {
    // The window grows while decoding runs on from where it ended and starts small again after a jump
    // (a skipped constant's payload): a file of a few hundred constants read 64 KiB after each one.
    const bool sequential = pos_ == win_start_ + win_len_;
    next_window_ = sequential ? std::min(std::max(next_window_ * 2, kMinWindow), kWindow) : kMinWindow;
    size_t len = static_cast<size_t>(std::min<uint64_t>(std::max(n, next_window_), src_.size() - pos_));
    if (window_.size() < len) window_.resize(len);
    src_.read_at(pos_, window_.data(), len);
    win_start_ = pos_;
    win_len_ = len;
  }
  const uint8_t* p = window_.data() + (pos_ - win_start_);
  pos_ += n;
  return p;
}

void ByteReader::raw(void* dst, size_t n, const char* what) {
  if (n == 0) return;
  if (n > kWindow) {  // large blocks go straight to the destination
    need(n, what);
    src_.read_at(pos_, dst, n);
    pos_ += n;
    return;
  }
  std::memcpy(dst, take(n, what), n);
}

uint8_t ByteReader::u8(const char* what) { return *take(1, what); }

bool ByteReader::boolean(const char* what) {
  uint64_t at = pos_;
  uint8_t b = u8(what);
  if (b > 1) {
    std::ostringstream os;
    os << "Expected a bool (0 or 1) for " << what << " at offset " << at << " but found " << int(b) << ".";
    fail(os.str());
  }
  return b == 1;
}

uint32_t ByteReader::u32(const char* what) {
  const uint8_t* p = take(4, what);
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

int32_t ByteReader::i32(const char* what) { return static_cast<int32_t>(u32(what)); }

uint64_t ByteReader::u64(const char* what) {
  const uint8_t* p = take(8, what);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

int64_t ByteReader::i64(const char* what) { return static_cast<int64_t>(u64(what)); }
float ByteReader::f32(const char* what) { return std::bit_cast<float>(u32(what)); }
double ByteReader::f64(const char* what) { return std::bit_cast<double>(u64(what)); }

uint64_t ByteReader::count(const char* what, uint64_t min_elem_bytes) {
  uint64_t at = pos_;
  uint64_t n = u64(what);
  if (min_elem_bytes > 0 && n > remaining() / min_elem_bytes) {
    std::ostringstream os;
    os << "Invalid count for " << what << " at offset " << at << ": found " << n << " entries of at least "
       << min_elem_bytes << " bytes each, but only " << remaining() << " bytes remain in the file.";
    fail(os.str());
  }
  return n;
}

std::string ByteReader::str(const char* what) {
  uint64_t n = count(what, 1);
  std::string s(static_cast<size_t>(n), '\0');
  raw(s.data(), s.size(), what);
  return s;
}

}  // namespace kiln::format
