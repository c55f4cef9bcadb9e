// .safetensors reading and writing (the layout and the checks are described in include/kiln/io.h).
// Reading validates the whole header against the file's size before any tensor is allocated, so the
// memory a file can make kiln allocate is bounded by the file's own size.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/source.h"
#include "kiln/io.h"
#include "kiln/ops.h"

namespace kiln {

namespace {

static_assert(std::endian::native == std::endian::little, "kiln's .safetensors code assumes a little-endian host");

using json = nlohmann::json;
using io_detail::MemorySource;
using io_detail::Source;
using io_detail::StreamSource;

// The reference implementation's (and MLX's) bound on the JSON header.
constexpr uint64_t kMaxHeader = 100000000;
// Deeper JSON than this cannot be a safetensors header (the real one nests three levels).
constexpr int kMaxDepth = 32;

struct Code {
  const char* name;
  Dtype dtype;      // the dtype of the loaded array
  size_t stored;    // bytes per element in the file
};

constexpr Code kCodes[] = {
    {"BOOL", bool_, 1},    {"U8", uint8, 1},       {"U16", uint16, 2},     {"U32", uint32, 4},
    {"U64", uint64, 8},    {"I8", int8, 1},        {"I16", int16, 2},      {"I32", int32, 4},
    {"I64", int64, 8},     {"F16", float16, 2},    {"BF16", bfloat16, 2},  {"F32", float32, 4},
    {"F64", float64, 8},   {"C64", complex64, 8},  {"F8_E4M3", bfloat16, 1},
};

const char* code_of(Dtype t) {
  for (const auto& c : kCodes) {
    if (c.dtype == t && c.stored == t.size) return c.name;
  }
  throw std::invalid_argument("[save_safetensors] No safetensors code for the dtype " + std::to_string(int(t.val)) + ".");
}

std::string known_codes() {
  std::string s;
  for (const auto& c : kCodes) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

// ---- reading ----

[[noreturn]] void fail(const Source& src, const std::string& what) {
  throw std::runtime_error("[load_safetensors] " + what + " in " + src.label + ".");
}

std::string kind_of(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a floating-point number";
    default: return "an invalid value";
  }
}

std::string quoted(const std::string& s) {
  // Keep messages readable and bounded whatever the file holds.
  return "'" + (s.size() > 80 ? s.substr(0, 80) + "..." : s) + "'";
}

struct DuplicateKey {
  std::string key;
};
struct TooDeep {};

json parse_header(const std::string& text, const Source& src) {
  std::vector<std::unordered_set<std::string>> keys;
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) -> bool {
    switch (ev) {
      case json::parse_event_t::object_start:
        if (depth >= kMaxDepth) throw TooDeep{};
        keys.emplace_back();
        break;
      case json::parse_event_t::array_start:
        if (depth >= kMaxDepth) throw TooDeep{};
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second) {
          throw DuplicateKey{parsed.get<std::string>()};
        }
        break;
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text, cb);
  } catch (const DuplicateKey& d) {
    fail(src, "Invalid JSON header: expected unique keys but found " + quoted(d.key) + " twice");
  } catch (const TooDeep&) {
    fail(src, "Invalid JSON header: expected at most " + std::to_string(kMaxDepth) + " levels of nesting but found more");
  } catch (const json::exception& e) {
    fail(src, std::string("Invalid JSON header: ") + e.what());
  }
}

struct Entry {
  std::string name;
  const Code* code;
  Shape shape;
  uint64_t begin, end;
};

uint64_t read_u64(const json& j, const std::string& what, const Source& src) {
  if (!j.is_number_unsigned()) fail(src, what + ": expected a non-negative integer but found " + kind_of(j));
  return j.get<uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, const Source& src) {
  const std::string where = "Invalid entry for the tensor " + quoted(name);
  if (!v.is_object()) fail(src, where + ": expected an object but found " + kind_of(v));
  Entry e;
  e.name = name;
  auto field = [&](const char* key) -> const json& {
    auto it = v.find(key);
    if (it == v.end()) fail(src, where + ": expected the key '" + key + "' but found none");
    return *it;
  };
  const json& dt = field("dtype");
  if (!dt.is_string()) fail(src, where + ": expected a string for 'dtype' but found " + kind_of(dt));
  const std::string code = dt.get<std::string>();
  e.code = nullptr;
  for (const auto& c : kCodes) {
    if (code == c.name) e.code = &c;
  }
  if (!e.code) fail(src, where + ": expected a dtype among " + known_codes() + " but found " + quoted(code));

  const json& sh = field("shape");
  if (!sh.is_array()) fail(src, where + ": expected an array for 'shape' but found " + kind_of(sh));
  for (const auto& d : sh) {
    uint64_t n = read_u64(d, where + " (shape)", src);
    if (n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      fail(src, where + ": expected shape dimensions below 2^31 but found " + std::to_string(n));
    }
    e.shape.push_back(static_cast<int32_t>(n));
  }

  const json& off = field("data_offsets");
  if (!off.is_array() || off.size() != 2) {
    fail(src, where + ": expected 'data_offsets' to be [begin, end] but found " +
                  (off.is_array() ? "an array of " + std::to_string(off.size()) + " values" : kind_of(off)));
  }
  e.begin = read_u64(off[0], where + " (data_offsets)", src);
  e.end = read_u64(off[1], where + " (data_offsets)", src);
  if (e.begin > e.end) {
    fail(src, where + ": expected data_offsets with begin <= end but found [" + std::to_string(e.begin) + ", " +
                  std::to_string(e.end) + "]");
  }

  // Element count times item size, without overflow.
  uint64_t count = 1;
  bool overflow = false;
  for (int32_t d : e.shape) {
    if (d == 0) {
      count = 0;
      overflow = false;
      break;
    }
    if (count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) overflow = true;
    else count *= static_cast<uint64_t>(d);
  }
  if (!overflow && count > std::numeric_limits<uint64_t>::max() / e.code->stored) overflow = true;
  const uint64_t span = e.end - e.begin;
  if (overflow || count * e.code->stored != span) {
    std::string shape_text = "[";
    for (size_t i = 0; i < e.shape.size(); ++i) shape_text += (i ? ", " : "") + std::to_string(e.shape[i]);
    shape_text += "]";
    fail(src, where + ": expected data_offsets spanning " +
                  (overflow ? std::string("more than 2^64") : std::to_string(count * e.code->stored)) +
                  " bytes for the shape " + shape_text + " of " + code + " but found [" + std::to_string(e.begin) +
                  ", " + std::to_string(e.end) + "] (" + std::to_string(span) + " bytes)");
  }
  try {
    (void)shape_size(e.shape, "load_safetensors");
  } catch (const std::invalid_argument& ex) {
    fail(src, where + ": " + ex.what());
  }
  return e;
}

void read_exact(Source& src, void* dst, size_t n, const std::string& what) {
  // In chunks, so that a source that ends early fails before the rest of `dst` is touched.
  size_t got = 0;
  while (got < n) {
    size_t chunk = std::min<size_t>(n - got, size_t(64) << 20);
    size_t r = src.read(static_cast<char*>(dst) + got, chunk);
    got += r;
    if (r != chunk) {
      fail(src, "Truncated file: expected " + std::to_string(n) + " bytes of " + what + " but found " +
                    std::to_string(got));
    }
  }
}

// float8 e4m3fn (no infinities; S.1111.111 is NaN) to bfloat16, exactly.
array fp8_e4m3_to_bfloat16(const uint8_t* in, const Shape& shape) {
  array out(shape, bfloat16);
  auto* o = static_cast<uint16_t*>(out.raw_data());
  uint16_t table[256];
  for (int b = 0; b < 256; ++b) {
    const int sign = b >> 7, exp = (b >> 3) & 0xf, mant = b & 7;
    float v;
    if (exp == 0xf && mant == 7) {
      v = std::numeric_limits<float>::quiet_NaN();
    } else if (exp == 0) {
      v = std::ldexp(static_cast<float>(mant), -9);  // mant/8 * 2^-6
    } else {
      v = std::ldexp(1.0f + static_cast<float>(mant) / 8.0f, exp - 7);
    }
    table[b] = bfloat16_t(sign ? -v : v).bits;
  }
  for (size_t i = 0, n = out.size(); i < n; ++i) o[i] = table[in[i]];
  return out;
}

SafetensorsLoad load_from(Source& src) {
  unsigned char len_bytes[8];
  {
    size_t got = src.read(len_bytes, 8);
    if (got != 8) {
      fail(src, "Truncated file: expected 8 bytes of header length but found " + std::to_string(got));
    }
  }
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(len_bytes[i]) << (8 * i);
  if (header_len == 0 || header_len > kMaxHeader) {
    fail(src, "Invalid header length: expected 1 to " + std::to_string(kMaxHeader) + " bytes but found " +
                  std::to_string(header_len));
  }
  std::optional<size_t> left = src.remaining();
  if (left && *left < header_len) {
    fail(src, "Truncated file: expected a JSON header of " + std::to_string(header_len) + " bytes but found " +
                  std::to_string(*left) + " bytes after the header length");
  }
  std::string text(header_len, '\0');
  read_exact(src, text.data(), header_len, "JSON header");
  const std::optional<size_t> data_size = left ? std::optional<size_t>(*left - header_len) : std::nullopt;

  json header = parse_header(text, src);
  text.clear();
  text.shrink_to_fit();
  if (!header.is_object()) fail(src, "Invalid JSON header: expected an object but found " + kind_of(header));

  SafetensorsLoad result;
  auto& [arrays, metadata] = result;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      const json& m = it.value();
      if (m.is_null()) continue;
      if (!m.is_object()) fail(src, "Invalid metadata: expected an object (or null) but found " + kind_of(m));
      for (auto mi = m.begin(); mi != m.end(); ++mi) {
        if (!mi.value().is_string()) {
          fail(src, "Invalid metadata: expected a string value for the key " + quoted(mi.key()) + " but found " +
                        kind_of(mi.value()));
        }
        metadata.emplace(mi.key(), mi.value().get<std::string>());
      }
      continue;
    }
    entries.push_back(parse_entry(it.key(), it.value(), src));
  }
  header = json();

  // The tensors must tile the data section: sorted by offsets, each starting where the previous one ended.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t expected = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (data_size && e.end > *data_size) {
      fail(src, "Invalid entry for the tensor " + quoted(e.name) + ": expected data_offsets within the data section of " +
                    std::to_string(*data_size) + " bytes but found [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + "]");
    }
    if (e.begin < expected) {
      fail(src, "Invalid entry for the tensor " + quoted(e.name) + ": expected data_offsets starting at " +
                    std::to_string(expected) + " or later but found [" + std::to_string(e.begin) + ", " +
                    std::to_string(e.end) + "], which overlaps the tensor " + quoted(prev->name));
    }
    if (e.begin > expected) {
      fail(src, "Invalid data layout: expected the tensor " + quoted(e.name) + " to start at byte " +
                    std::to_string(expected) + " of the data section but found " + std::to_string(e.begin) +
                    " (a hole of " + std::to_string(e.begin - expected) + " bytes that no tensor covers)");
    }
    expected = e.end;
    prev = &e;
  }
  if (data_size && expected != *data_size) {
    fail(src, "Invalid data layout: expected the tensors to cover the data section of " + std::to_string(*data_size) +
                  " bytes but found them ending at byte " + std::to_string(expected) + " (" +
                  std::to_string(*data_size - expected) + " trailing bytes)");
  }

  for (const Entry& e : entries) {
    const std::string what = "data for the tensor " + quoted(e.name);
    if (e.code->stored == 1 && e.code->dtype == bfloat16) {  // F8_E4M3
      std::vector<uint8_t> raw(e.end - e.begin);
      read_exact(src, raw.data(), raw.size(), what);
      arrays.emplace(e.name, fp8_e4m3_to_bfloat16(raw.data(), e.shape));
      continue;
    }
    array a(e.shape, e.code->dtype);
    char* data = a.nbytes() ? static_cast<char*>(a.raw_data()) : nullptr;
    if (data) read_exact(src, data, a.nbytes(), what);
    if (e.code->dtype == bool_) {
      for (size_t i = 0; i < a.nbytes(); ++i) data[i] = data[i] != 0;  // only 0 and 1 are valid C++ bools
    }
    arrays.emplace(e.name, std::move(a));
  }
  if (!data_size) {
    char extra;
    if (src.read(&extra, 1) != 0) {
      fail(src, "Invalid data layout: expected the tensors to cover the data section but found trailing bytes after byte " +
                    std::to_string(expected));
    }
  }
  return result;
}

// ---- writing ----

void check_name(const std::string& name) {
  if (name == "__metadata__") {
    throw std::invalid_argument("[save_safetensors] The name '__metadata__' is reserved for the metadata; rename the array.");
  }
}

}  // namespace

void save_safetensors(std::ostream& out, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  struct Item {
    const std::string* name;
    array data;
  };
  std::vector<Item> items;
  items.reserve(arrays.size());
  {
    std::vector<array> to_eval;
    for (auto& [name, a] : arrays) {
      check_name(name);
      (void)code_of(a.dtype());
      array c = (a.is_available() && a.row_contiguous()) ? a : contiguous(a);
      to_eval.push_back(c);
      items.push_back({&name, c});
    }
    eval(to_eval);
  }
  // By decreasing item size, then name: each tensor starts at a multiple of its item size.
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.data.itemsize() != b.data.itemsize()) return a.data.itemsize() > b.data.itemsize();
    return *a.name < *b.name;
  });

  json header = json::object();
  if (!metadata.empty()) {
    json m = json::object();
    for (auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (auto& it : items) {
    if (!it.data.row_contiguous()) throw std::logic_error("[save_safetensors] contiguous() returned a strided array.");
    json shape = json::array();
    for (int32_t d : it.data.shape()) shape.push_back(d);
    const uint64_t n = it.data.nbytes();
    header[*it.name] = {{"dtype", code_of(it.data.dtype())}, {"shape", std::move(shape)}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::type_error& e) {
    throw std::invalid_argument(std::string("[save_safetensors] Names and metadata must be valid UTF-8: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const uint64_t len = text.size();
  char lb[8];
  for (int i = 0; i < 8; ++i) lb[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  out.write(lb, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (auto& it : items) {
    const char* p = static_cast<const char*>(it.data.raw_data());
    size_t n = it.data.nbytes();
    while (n) {
      size_t chunk = std::min<size_t>(n, size_t(1) << 30);
      out.write(p, static_cast<std::streamsize>(chunk));
      p += chunk;
      n -= chunk;
    }
  }
  if (!out) throw std::runtime_error("[save_safetensors] Failed to write the arrays.");
}

void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  if (file.size() < 12 || file.compare(file.size() - 12, 12, ".safetensors") != 0) file += ".safetensors";
  for (auto& [name, a] : arrays) {
    check_name(name);
    (void)code_of(a.dtype());
  }
  io_detail::write_file_atomically(file, "[save_safetensors]",
                                   [&](std::ostream& out) { save_safetensors(out, arrays, metadata); });
}

SafetensorsLoad load_safetensors(std::istream& in, StreamOrDevice) {
  StreamSource src(in, "stream");
  return load_from(src);
}

SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("[load_safetensors] Failed to open " + file);
  StreamSource src(in, file);
  return load_from(src);
}

SafetensorsLoad load_safetensors_bytes(const void* data, size_t nbytes) {
  MemorySource src(data, nbytes);
  return load_from(src);
}

}  // namespace kiln
