// .gguf reading and writing (llama.cpp's model files; the layout and the checks are described in
// include/kiln/io.h). Reading checks every count and length against the bytes left in the file before it
// allocates, so a file cannot make kiln allocate more than about its own size.
#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "io/atomic_file.h"
#include "kiln/io.h"
#include "kiln/ops.h"

namespace kiln {

namespace {

static_assert(std::endian::native == std::endian::little, "kiln's .gguf code assumes a little-endian host");

// Metadata value types (the GGUF specification's gguf_metadata_value_type).
enum ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};

// The metadata value types that hold numbers (or bools), with their dtypes.
std::optional<Dtype> value_dtype(uint32_t t) {
  switch (t) {
    case kU8: return uint8;
    case kI8: return int8;
    case kU16: return uint16;
    case kI16: return int16;
    case kU32: return uint32;
    case kI32: return int32;
    case kF32: return float32;
    case kBool: return bool_;
    case kU64: return uint64;
    case kI64: return int64;
    case kF64: return float64;
    default: return std::nullopt;
  }
}

std::optional<uint32_t> value_type_of(Dtype t) {
  for (uint32_t v : {kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kU64, kI64, kF64}) {
    if (value_dtype(v) == t) return v;
  }
  return std::nullopt;
}

// Tensor types (ggml_type) kiln reads: the plain ones, and the three block formats MLX maps to its affine
// quantization (blocks of 32 weights).
enum TensorType : uint32_t {
  kTF32 = 0, kTF16 = 1, kTQ4_0 = 2, kTQ4_1 = 3, kTQ8_0 = 8, kTI8 = 24, kTI16 = 25, kTI32 = 26, kTI64 = 27,
  kTF64 = 28, kTBF16 = 30,
};

std::optional<Dtype> plain_dtype(uint32_t t) {
  switch (t) {
    case kTF32: return float32;
    case kTF16: return float16;
    case kTBF16: return bfloat16;
    case kTF64: return float64;
    case kTI8: return int8;
    case kTI16: return int16;
    case kTI32: return int32;
    case kTI64: return int64;
    default: return std::nullopt;
  }
}

std::string tensor_type_name(uint32_t t) {
  static const char* names[] = {"F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
                                "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS",
                                "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64",
                                "IQ1_M", "BF16"};
  return t < std::size(names) ? std::string(names[t]) + " (" + std::to_string(t) + ")" : std::to_string(t);
}

// The file's bytes, read with bounds: every read past the end throws naming what was being read.
struct Reader {
  std::ifstream in;
  std::string path;
  uint64_t size = 0, pos = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("[load_gguf] " + what + " in " + path + ".");
  }
  void read(void* dst, uint64_t n, const std::string& what) {
    if (n > size - pos) {
      fail("Truncated file: " + what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos) +
           " but only " + std::to_string(size - pos) + " remain");
    }
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in.gcount()) != n) fail("Read error in " + what);
    pos += n;
  }
  template <typename T>
  T get(const std::string& what) {
    T v;
    read(&v, sizeof(T), what);
    return v;
  }
  // A count of items of at least `min_item` bytes each: no more than the bytes left allow.
  uint64_t count(const std::string& what, uint64_t min_item) {
    const uint64_t n = get<uint64_t>(what);
    if (min_item && n > (size - pos) / min_item) {
      fail("Invalid " + what + ": " + std::to_string(n) + " items of at least " + std::to_string(min_item) +
           " bytes cannot fit in the " + std::to_string(size - pos) + " bytes left");
    }
    return n;
  }
  std::string string(const std::string& what) {
    const uint64_t n = count(what + "'s length", 1);
    std::string s(n, '\0');
    if (n) read(s.data(), n, what);
    return s;
  }
  void seek(uint64_t at, const std::string& what) {
    if (at > size) fail(what + " starts at offset " + std::to_string(at) + ", past the end of the file (" + std::to_string(size) + " bytes)");
    in.seekg(static_cast<std::streamoff>(at));
    pos = at;
  }
};

// One metadata value of type `t` (arrays of numbers become 1-D arrays, of strings vectors of strings).
GGUFMetaData read_value(Reader& r, uint32_t t, const std::string& key) {
  const std::string what = "the value of " + key;
  if (t == kString) return r.string(what);
  if (auto d = value_dtype(t)) {
    array a(Shape{}, *d);
    r.read(a.raw_data(), d->size, what);
    if (*d == bool_) *static_cast<uint8_t*>(a.raw_data()) = *static_cast<uint8_t*>(a.raw_data()) != 0;
    return a;
  }
  if (t != kArray) r.fail("Unknown metadata value type " + std::to_string(t) + " for " + key);
  const uint32_t et = r.get<uint32_t>(what + "'s element type");
  if (et == kString) {
    const uint64_t n = r.count(what + "'s element count", 8);
    std::vector<std::string> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.push_back(r.string(what + "[" + std::to_string(i) + "]"));
    return v;
  }
  auto d = value_dtype(et);
  if (!d) {
    r.fail("Unsupported element type " + std::to_string(et) + " in the array " + key +
           " (kiln reads arrays of numbers, bools and strings, not nested arrays)");
  }
  const uint64_t n = r.count(what + "'s element count", d->size);
  if (n > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) r.fail("Too many elements in " + key);
  array a(Shape{static_cast<int32_t>(n)}, *d);
  if (n) r.read(a.raw_data(), n * d->size, what);
  if (*d == bool_) {
    auto* p = static_cast<uint8_t*>(a.raw_data());
    for (uint64_t i = 0; i < n; ++i) p[i] = p[i] != 0;
  }
  return a;
}

struct TensorInfo {
  std::string name;
  Shape shape;  // row-major (GGUF lists dimensions innermost first)
  uint64_t elements = 1;
  uint32_t type = 0;
  uint64_t offset = 0, bytes = 0;
};

uint16_t f16_bits(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// A Q4_0 / Q4_1 / Q8_0 tensor as MLX's affine quantization with groups of 32: the codes packed into
// uint32 words from the low bits up, and float16 scales and biases (each block's d, and -8d, m or -128d).
void load_block_quantized(Reader& r, const TensorInfo& t, std::unordered_map<std::string, array>& out) {
  const int bits = t.type == kTQ8_0 ? 8 : 4;
  const size_t block = t.type == kTQ4_0 ? 18 : t.type == kTQ4_1 ? 20 : 34;
  const uint64_t blocks = t.elements / 32;
  std::vector<uint8_t> raw(t.bytes);
  r.read(raw.data(), raw.size(), "the data of the tensor " + t.name);
  Shape wshape = t.shape, sshape = t.shape;
  wshape.back() = wshape.back() * bits / 32;
  sshape.back() /= 32;
  array w(wshape, uint32), scales(sshape, float16), biases(sshape, float16);
  auto* wp = static_cast<uint32_t*>(w.raw_data());
  auto* sp = static_cast<uint16_t*>(scales.raw_data());
  auto* bp = static_cast<uint16_t*>(biases.raw_data());
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk = raw.data() + b * block;
    const uint16_t d = f16_bits(blk);
    const float df = static_cast<float>(float16_t::from_bits(d));
    uint8_t codes[32];
    if (bits == 4) {
      const uint8_t* qs = blk + (t.type == kTQ4_1 ? 4 : 2);
      for (int j = 0; j < 16; ++j) {
        codes[j] = qs[j] & 0xf;
        codes[j + 16] = qs[j] >> 4;
      }
    } else {
      for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(static_cast<int8_t>(blk[2 + j]) + 128);
    }
    sp[b] = d;
    if (t.type == kTQ4_1) {
      bp[b] = f16_bits(blk + 2);
    } else {
      // -8d and -128d are exact in float16 (a power-of-two multiple of d) unless they overflow it.
      bp[b] = float16_t::from_float(-(bits == 4 ? 8.0f : 128.0f) * df);
    }
    const int per = 32 / bits;
    for (int k = 0; k < 32 / per; ++k) {
      uint32_t word = 0;
      for (int j = 0; j < per; ++j) word |= static_cast<uint32_t>(codes[k * per + j]) << (bits * j);
      wp[b * (32 / per) + k] = word;
    }
  }
  for (auto& [name, a] : {std::pair<std::string, array>{t.name, w}, {t.name + ".scales", scales},
                          {t.name + ".biases", biases}}) {
    if (!out.emplace(name, a).second) {
      r.fail("Duplicate tensor name " + name + " (a quantized tensor's scales and biases take the names <name>.scales "
             "and <name>.biases)");
    }
  }
}

}  // namespace

GGUFLoad load_gguf(const std::string& file, StreamOrDevice) {
  Reader r;
  r.path = file;
  r.in.open(file, std::ios::binary);
  if (!r.in) throw std::invalid_argument("[load_gguf] Failed to open " + file + ".");
  r.in.seekg(0, std::ios::end);
  r.size = static_cast<uint64_t>(r.in.tellg());
  r.in.seekg(0);
  char magic[4];
  r.read(magic, 4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) r.fail("Not a GGUF file: expected the magic 'GGUF' at offset 0");
  const uint32_t version = r.get<uint32_t>("the version");
  if (version != 2 && version != 3) {
    r.fail("Unsupported GGUF version " + std::to_string(version) + " (kiln reads versions 2 and 3)");
  }
  // A tensor info takes at least 8 + 4 + 4 + 8 bytes, a key-value pair 8 + 4 + 1.
  const uint64_t n_tensors = r.count("the tensor count", 24);
  const uint64_t n_kv = r.count("the metadata count", 13);
  std::unordered_map<std::string, GGUFMetaData> metadata;
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("metadata key " + std::to_string(i));
    const uint32_t t = r.get<uint32_t>("the type of " + key);
    GGUFMetaData v = read_value(r, t, key);
    if (key == "general.alignment") {
      const array* a = std::get_if<array>(&v);
      if (!a || a->ndim() != 0 || !(a->dtype() == uint32)) r.fail("general.alignment must be a uint32 scalar");
      alignment = a->item<uint32_t>();
      if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        r.fail("general.alignment must be a power of 2, found " + std::to_string(alignment));
      }
    }
    if (!metadata.emplace(key, std::move(v)).second) r.fail("Duplicate metadata key " + key);
  }
  std::vector<TensorInfo> infos;
  infos.reserve(n_tensors);
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = r.string("tensor name " + std::to_string(i));
    if (!names.insert(t.name).second) r.fail("Duplicate tensor name " + t.name);
    const uint32_t nd = r.get<uint32_t>("the rank of " + t.name);
    if (nd > 8) r.fail("The tensor " + t.name + " has rank " + std::to_string(nd) + " (at most 8 expected)");
    std::vector<uint64_t> dims(nd);
    for (auto& d : dims) {
      d = r.get<uint64_t>("a dimension of " + t.name);
      if (d > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) r.fail("A dimension of " + t.name + " is too large");
      if (d && t.elements > (uint64_t(1) << 48) / d) r.fail("The tensor " + t.name + " has too many elements");
      t.elements *= d;
    }
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) t.shape.push_back(static_cast<int32_t>(*it));
    t.type = r.get<uint32_t>("the type of " + t.name);
    t.offset = r.get<uint64_t>("the offset of " + t.name);
    if (auto d = plain_dtype(t.type)) {
      t.bytes = t.elements * d->size;
    } else if (t.type == kTQ4_0 || t.type == kTQ4_1 || t.type == kTQ8_0) {
      if (t.shape.empty() || t.shape.back() % 32 != 0) {
        r.fail("The " + tensor_type_name(t.type) + " tensor " + t.name + " needs a last dimension that is a multiple of 32");
      }
      t.bytes = t.elements / 32 * (t.type == kTQ4_0 ? 18 : t.type == kTQ4_1 ? 20 : 34);
    } else {
      throw std::invalid_argument("[load_gguf] The tensor " + t.name + " of " + file + " has the ggml type " +
                                  tensor_type_name(t.type) +
                                  ", which kiln does not read yet (it reads F32, F16, BF16, F64, I8, I16, I32, I64, "
                                  "Q4_0, Q4_1 and Q8_0).");
    }
    infos.push_back(std::move(t));
  }
  const uint64_t data_start = (r.pos + alignment - 1) / alignment * alignment;
  // Tensors do not share bytes in a GGUF file: their sizes add up to at most the data section, which
  // bounds what loading allocates by the file's size (overlapping claims could multiply it).
  uint64_t claimed = 0;
  for (const auto& t : infos) {
    claimed += t.bytes;
    if (data_start > r.size || claimed > r.size - data_start) {
      r.fail("The tensors claim " + std::to_string(claimed) + " bytes or more, beyond the data section of " +
             std::to_string(data_start > r.size ? 0 : r.size - data_start) + " bytes");
    }
  }
  for (const auto& t : infos) {
    if (t.offset % alignment != 0) {
      r.fail("The tensor " + t.name + "'s offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
             std::to_string(alignment));
    }
    if (data_start > r.size || t.offset > r.size - data_start || t.bytes > r.size - data_start - t.offset) {
      r.fail("The data of the tensor " + t.name + " (" + std::to_string(t.bytes) + " bytes at data offset " +
             std::to_string(t.offset) + ") runs past the end of the file");
    }
  }
  std::unordered_map<std::string, array> arrays;
  for (const auto& t : infos) {
    r.seek(data_start + t.offset, "The data of the tensor " + t.name);
    if (auto d = plain_dtype(t.type)) {
      array a(t.shape, *d);
      if (t.bytes) r.read(a.raw_data(), t.bytes, "the data of the tensor " + t.name);
      if (!arrays.emplace(t.name, std::move(a)).second) r.fail("Duplicate tensor name " + t.name);
    } else {
      load_block_quantized(r, t, arrays);
    }
  }
  return {std::move(arrays), std::move(metadata)};
}

namespace {

template <typename T>
void put(std::ostream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof(T));
}

void put_string(std::ostream& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

array row_major(const array& a) {
  array c = (a.is_available() && a.row_contiguous()) ? a : contiguous(a);
  c.eval();
  return c;
}

std::optional<uint32_t> tensor_type_of(Dtype t) {
  if (t == float32) return kTF32;
  if (t == float16) return kTF16;
  if (t == int8) return kTI8;
  if (t == int16) return kTI16;
  if (t == int32) return kTI32;
  return std::nullopt;
}

}  // namespace

void save_gguf(std::string file, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata) {
  if (file.size() < 5 || file.compare(file.size() - 5, 5, ".gguf") != 0) file += ".gguf";
  // Everything is checked and evaluated before the file is opened.
  std::vector<std::pair<std::string, array>> tensors(arrays.begin(), arrays.end());
  std::sort(tensors.begin(), tensors.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [name, a] : tensors) {
    if (!tensor_type_of(a.dtype())) {
      throw std::invalid_argument("[save_gguf] The array " + name + " has dtype " + std::string(dtype_name(a.dtype())) +
                                  "; GGUF tensors are written as float32, float16, int8, int16 or int32.");
    }
    a = row_major(a);
  }
  std::vector<std::pair<std::string, GGUFMetaData>> meta(metadata.begin(), metadata.end());
  std::sort(meta.begin(), meta.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [key, v] : meta) {
    if (std::holds_alternative<std::monostate>(v)) {
      throw std::invalid_argument("[save_gguf] The metadata " + key + " has no value.");
    }
    if (auto* a = std::get_if<array>(&v)) {
      if (a->ndim() > 1) {
        throw std::invalid_argument("[save_gguf] The metadata array " + key + " has " + std::to_string(a->ndim()) +
                                    " dimensions; GGUF metadata arrays have at most one.");
      }
      if (a->size() == 0) throw std::invalid_argument("[save_gguf] The metadata array " + key + " is empty.");
      if (!value_type_of(a->dtype())) {
        throw std::invalid_argument("[save_gguf] The metadata array " + key + " has dtype " +
                                    std::string(dtype_name(a->dtype())) + ", which GGUF metadata cannot hold.");
      }
      *a = row_major(*a);
    }
  }
  constexpr uint64_t kAlign = 32;
  io_detail::write_file_atomically(file, "[save_gguf]", [&](std::ostream& out) {
    out.write("GGUF", 4);
    put<uint32_t>(out, 3);
    put<uint64_t>(out, tensors.size());
    put<uint64_t>(out, meta.size());
    uint64_t pos = 4 + 4 + 8 + 8;
    auto tell = [&](uint64_t n) { pos += n; };
    for (auto& [key, v] : meta) {
      put_string(out, key);
      tell(8 + key.size());
      if (auto* s = std::get_if<std::string>(&v)) {
        put<uint32_t>(out, kString);
        put_string(out, *s);
        tell(4 + 8 + s->size());
      } else if (auto* ss = std::get_if<std::vector<std::string>>(&v)) {
        put<uint32_t>(out, kArray);
        put<uint32_t>(out, kString);
        put<uint64_t>(out, ss->size());
        tell(16);
        for (auto& s : *ss) {
          put_string(out, s);
          tell(8 + s.size());
        }
      } else {
        const array& a = std::get<array>(v);
        const uint32_t t = *value_type_of(a.dtype());
        if (a.ndim() == 0) {
          put<uint32_t>(out, t);
          tell(4);
        } else {
          put<uint32_t>(out, kArray);
          put<uint32_t>(out, t);
          put<uint64_t>(out, a.size());
          tell(16);
        }
        out.write(static_cast<const char*>(a.raw_data()), static_cast<std::streamsize>(a.nbytes()));
        tell(a.nbytes());
      }
    }
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (auto& [name, a] : tensors) {
      put_string(out, name);
      put<uint32_t>(out, static_cast<uint32_t>(a.ndim()));
      for (int d = a.ndim() - 1; d >= 0; --d) put<uint64_t>(out, static_cast<uint64_t>(a.shape(d)));
      put<uint32_t>(out, *tensor_type_of(a.dtype()));
      offset = (offset + kAlign - 1) / kAlign * kAlign;
      put<uint64_t>(out, offset);
      offsets.push_back(offset);
      offset += a.nbytes();
      tell(8 + name.size() + 4 + 8 * a.ndim() + 4 + 8);
    }
    const char zeros[kAlign] = {};
    auto pad_to = [&](uint64_t at) {
      out.write(zeros, static_cast<std::streamsize>(at - pos));
      pos = at;
    };
    const uint64_t data_start = (pos + kAlign - 1) / kAlign * kAlign;
    pad_to(data_start);
    for (size_t i = 0; i < tensors.size(); ++i) {
      pad_to(data_start + offsets[i]);
      const array& a = tensors[i].second;
      if (a.nbytes()) out.write(static_cast<const char*>(a.raw_data()), static_cast<std::streamsize>(a.nbytes()));
      pos += a.nbytes();
    }
  });
}

}  // namespace kiln
