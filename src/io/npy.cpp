// NumPy .npy reading and writing. Layout: the magic "\x93NUMPY", a version (major, minor), the header
// length (u16 for 1.0, u32 for 2.0 and 3.0, little-endian), a Python dict literal with the keys
// 'descr', 'fortran_order' and 'shape' padded with spaces to a 64-byte boundary and ended by '\n',
// then the raw elements. Every field of a file being read is checked before anything is allocated.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "io/atomic_file.h"
#include "io/source.h"
#include "kiln/io.h"
#include "kiln/ops.h"

namespace kiln {

namespace {

using io_detail::MemorySource;
using io_detail::Source;
using io_detail::StreamSource;

static_assert(std::endian::native == std::endian::little, "kiln's .npy code assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
// numpy refuses headers above 10000 bytes unless told otherwise; allow more but stay bounded.
constexpr size_t kMaxHeader = size_t(1) << 20;

// ---- writing ----

std::string descr_of(Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_: return "|b1";
    case Dtype::Val::uint8: return "|u1";
    case Dtype::Val::int8: return "|i1";
    case Dtype::Val::bfloat16: return "<V2";  // MLX's convention: numpy has no bfloat16
    case Dtype::Val::complex64: return "<c8";
    default: break;
  }
  const char kind = is_floating_point(t) ? 'f' : is_unsigned(t) ? 'u' : 'i';
  return std::string("<") + kind + std::to_string(t.size);
}

std::string make_header(const array& a) {
  std::ostringstream h;
  h << "{'descr': '" << descr_of(a.dtype()) << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < a.ndim(); ++i) h << (i ? ", " : "") << a.shape()[i];
  if (a.ndim() == 1) h << ",";
  h << "), }";
  return h.str();
}

// The elements of `a` in row-major order (a itself when it already is row-contiguous), evaluated.
array row_major(const array& a) {
  if (a.is_available() && a.row_contiguous()) return a;
  array out = contiguous(a);
  out.eval();
  if (!out.row_contiguous()) throw std::logic_error("[save] contiguous() returned a strided array.");
  return out;
}

// ---- reading ----

[[noreturn]] void fail(const Source& src, const std::string& what) {
  throw std::runtime_error("[load] " + what + " in " + src.label + ".");
}

void read_exact(Source& src, void* dst, size_t n, const char* what) {
  size_t got = src.read(dst, n);
  if (got != n) {
    fail(src, std::string("Truncated file: expected ") + std::to_string(n) + " bytes of " + what + " but found " +
                  std::to_string(got));
  }
}

// A tiny parser for the header's Python dict literal.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const Source& src) : s_(text), src_(src) {}

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) bad(std::string("'") + c + "'");
  }
  std::string string_literal() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) bad("a quoted string");
    char q = s_[i_++];
    size_t end = s_.find(q, i_);
    if (end == std::string::npos) bad("a closing quote");
    std::string out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    bad("True or False");
  }
  Shape tuple() {
    expect('(');
    Shape out;
    while (!eat(')')) {
      skip_ws();
      size_t start = i_;
      uint64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        v = v * 10 + static_cast<uint64_t>(s_[i_] - '0');
        if (v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
          fail(src_, "Invalid header: shape dimension too large at position " + std::to_string(start));
        }
        ++i_;
      }
      if (i_ == start) bad("a non-negative integer or ')' in the shape");
      // numpy writes Python ints; accept an 'L' suffix from Python 2 writers.
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;
      out.push_back(static_cast<int32_t>(v));
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return out;
  }
  bool at_end() {
    skip_ws();
    return i_ == s_.size();
  }
  [[noreturn]] void bad(const std::string& expected) {
    std::string found = i_ < s_.size() ? "'" + s_.substr(i_, 12) + "'" : "the end of the header";
    fail(src_, "Invalid header: expected " + expected + " at position " + std::to_string(i_) + " but found " + found);
  }

 private:
  const std::string& s_;
  const Source& src_;
  size_t i_ = 0;
};

struct Descr {
  Dtype dtype = float32;
  bool swap = false;  // big-endian data
};

Descr parse_descr(const std::string& d, const Source& src) {
  Descr out;
  std::string body = d;
  char order = '|';
  if (!body.empty() && (body[0] == '<' || body[0] == '>' || body[0] == '|' || body[0] == '=')) {
    order = body[0];
    body = body.substr(1);
  }
  auto unsupported = [&]() -> Descr {
    throw std::invalid_argument("[load] Unsupported dtype descriptor '" + d + "' in " + src.label +
                                ": expected one of b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4, f8, c8, V2.");
  };
  static const struct {
    const char* code;
    Dtype dtype;
  } table[] = {{"b1", bool_},    {"i1", int8},     {"i2", int16},  {"i4", int32},  {"i8", int64},
               {"u1", uint8},    {"u2", uint16},   {"u4", uint32}, {"u8", uint64}, {"f2", float16},
               {"f4", float32},  {"f8", float64},  {"c8", complex64}, {"V2", bfloat16}};
  bool found = false;
  for (auto& e : table) {
    if (body == e.code) {
      out.dtype = e.dtype;
      found = true;
      break;
    }
  }
  if (!found) return unsupported();
  out.swap = order == '>' && out.dtype.size > 1;
  return out;
}

// Reverse the bytes of every `width`-byte word (complex64 swaps its two floats separately).
void byteswap(char* p, size_t nbytes, size_t width) {
  for (size_t i = 0; i + width <= nbytes; i += width) std::reverse(p + i, p + i + width);
}

array load_from(Source& src) {
  char pre[8];
  read_exact(src, pre, 8, "magic string and version");
  if (std::memcmp(pre, kMagic, 6) != 0) fail(src, "Invalid header: expected the magic string \\x93NUMPY");
  const int major = static_cast<unsigned char>(pre[6]), minor = static_cast<unsigned char>(pre[7]);
  if (major < 1 || major > 3 || minor != 0) {
    fail(src, "Unsupported npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                  ": expected 1.0, 2.0 or 3.0");
  }
  size_t header_len = 0;
  unsigned char len_bytes[4] = {0, 0, 0, 0};
  const size_t len_size = major == 1 ? 2 : 4;
  read_exact(src, len_bytes, len_size, "header length");
  for (size_t i = 0; i < len_size; ++i) header_len |= static_cast<size_t>(len_bytes[i]) << (8 * i);
  if (header_len > kMaxHeader) {
    fail(src, "Invalid header: expected a header length of at most " + std::to_string(kMaxHeader) +
                  " bytes but found " + std::to_string(header_len));
  }
  std::string header(header_len, '\0');
  read_exact(src, header.data(), header_len, "header");
  if (header.find('\0') != std::string::npos) fail(src, "Invalid header: found a NUL byte in the header");

  HeaderParser p(header, src);
  p.expect('{');
  bool have_descr = false, have_order = false, have_shape = false;
  Descr descr;
  bool fortran = false;
  Shape shape;
  while (!p.eat('}')) {
    std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr" && !have_descr) {
      descr = parse_descr(p.string_literal(), src);
      have_descr = true;
    } else if (key == "fortran_order" && !have_order) {
      fortran = p.boolean();
      have_order = true;
    } else if (key == "shape" && !have_shape) {
      shape = p.tuple();
      have_shape = true;
    } else {
      fail(src, "Invalid header: expected the keys 'descr', 'fortran_order' and 'shape' once each but found '" +
                    key + "'");
    }
    if (!p.eat(',')) {
      p.expect('}');
      break;
    }
  }
  if (!p.at_end()) p.bad("only padding after the header dict");
  if (!have_descr || !have_order || !have_shape) {
    fail(src, std::string("Invalid header: missing the key '") +
                  (!have_descr ? "descr" : !have_order ? "fortran_order" : "shape") + "'");
  }

  size_t count;
  try {
    count = shape_size(shape, "load");
  } catch (const std::invalid_argument& e) {
    fail(src, std::string("Invalid header: ") + e.what());
  }
  if (count > (std::numeric_limits<size_t>::max() >> 4)) fail(src, "Invalid header: the array is too large");
  const size_t nbytes = count * descr.dtype.size;
  // Refuse before allocating when the source is known to be too short.
  if (auto left = src.remaining(); left && *left < nbytes) {
    fail(src, "Truncated file: expected " + std::to_string(nbytes) + " bytes of data but found " +
                  std::to_string(*left));
  }

  // Fortran order stores the reversed shape row-major; read it as such and transpose below.
  Shape stored = shape;
  if (fortran) std::reverse(stored.begin(), stored.end());
  array raw(stored, descr.dtype);
  char* data = static_cast<char*>(raw.raw_data());
  {
    // Read in chunks so a header that lies about the size fails before memory is touched further.
    size_t got = 0;
    while (got < nbytes) {
      size_t chunk = std::min<size_t>(nbytes - got, size_t(64) << 20);
      size_t r = src.read(data + got, chunk);
      got += r;
      if (r != chunk) {
        fail(src, "Truncated file: expected " + std::to_string(nbytes) + " bytes of data but found " +
                      std::to_string(got));
      }
    }
  }
  if (descr.swap) byteswap(data, nbytes, descr.dtype == complex64 ? 4 : descr.dtype.size);
  if (descr.dtype == bool_) {
    // Any byte other than 0 or 1 would be an invalid C++ bool.
    for (size_t i = 0; i < nbytes; ++i) data[i] = data[i] != 0;
  }
  if (!fortran || shape.size() < 2) return raw;
  // Transpose the stored (reversed) layout into row-major order.
  array view(raw.buffer(), shape, descr.dtype);
  Strides st(shape.size());
  int64_t acc = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    st[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  view.set_view(raw, st, 0);
  return row_major(view);
}

}  // namespace

void save(std::ostream& out, array a) {
  a.eval();
  array data = row_major(a);
  std::string header = make_header(a);
  // Pad so that the data starts on a 64-byte boundary, as numpy does.
  size_t pre = 6 + 2 + 2;
  bool v1 = header.size() + 1 + pre <= 65535;
  if (!v1) pre = 6 + 2 + 4;
  size_t total = pre + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  out.write(kMagic, 6);
  const char ver[2] = {static_cast<char>(v1 ? 1 : 2), 0};
  out.write(ver, 2);
  uint32_t len = static_cast<uint32_t>(header.size());
  const char lb[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                      static_cast<char>((len >> 16) & 0xff), static_cast<char>((len >> 24) & 0xff)};
  out.write(lb, v1 ? 2 : 4);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (data.nbytes()) out.write(static_cast<const char*>(data.raw_data()), static_cast<std::streamsize>(data.nbytes()));
  if (!out) throw std::runtime_error("[save] Failed to write the array.");
}

void save(std::string file, array a) {
  if (file.size() < 4 || file.compare(file.size() - 4, 4, ".npy") != 0) file += ".npy";
  a.eval();
  io_detail::write_file_atomically(file, "[save]", [&](std::ostream& out) { save(out, a); });
}

array load(std::istream& in, StreamOrDevice) {
  StreamSource src(in, "stream");
  return load_from(src);
}

array load(std::string file, StreamOrDevice) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("[load] Failed to open " + file);
  StreamSource src(in, file);
  return load_from(src);
}

array load_npy(const void* data, size_t nbytes) {
  MemorySource src(data, nbytes);
  return load_from(src);
}

}  // namespace kiln
