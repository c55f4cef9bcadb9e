#include "format/codec.h"
#include "format/validate.h"

#include <sstream>
#include <stdexcept>

namespace kiln::format {

void write_shape(ByteWriter& w, const Shape& s) {
  w.u64(s.size());
  for (auto d : s) w.i32(d);
}

Shape read_shape(ByteReader& r, const char* what) {
  uint64_t at0 = r.pos();
  uint64_t n = r.count(what, 4);
  if (n > kMaxNdim) {  // validate.h: keeps validation linear in the file size
    std::ostringstream os;
    os << "Invalid " << what << " at offset " << at0 << ": expected at most " << kMaxNdim << " dimensions but found "
       << n << ".";
    r.fail(os.str());
  }
  Shape s(static_cast<size_t>(n));
  for (auto& d : s) {
    uint64_t at = r.pos();
    d = r.i32(what);
    if (d < 0) {
      std::ostringstream os;
      os << "Invalid " << what << " at offset " << at << ": expected non-negative dimensions but found " << d << ".";
      r.fail(os.str());
    }
  }
  return s;
}

void write_dtype(ByteWriter& w, Dtype t, const FormatVersion& v) {
  int32_t code = dtype_code(t, v);
  if (code < 0) {
    throw std::invalid_argument("[export_function] " + std::string(dtype_name(t)) + " cannot be written for MLX " +
                                v.str() + ": that layout has no code for it.");
  }
  w.i32(code);
  w.u8(t.size);
}

Dtype read_dtype(ByteReader& r, const char* what, const FormatVersion& v, bool mlx_rules) {
  uint64_t at = r.pos();
  int32_t code = r.i32(what);
  uint8_t size = r.u8(what);
  auto known = dtype_of_code(code, v);
  if (!known) {
    std::ostringstream os;
    os << "Invalid " << what << " at offset " << at << ": expected a dtype code in 0.."
       << (v < FormatVersion{0, 23, 0} ? 12 : 13) << " but found " << code << ".";
    r.fail(os.str());
  }
  Dtype t = *known;
  if (t.size != size && !mlx_rules && (code == 11 || code == 12)) {
    // Codes 11 and 12 changed meaning in 0.23.0; (11, 2) and (12, 8) occur only in older files.
    FormatVersion other = v < FormatVersion{0, 23, 0} ? kDefaultVersion : FormatVersion{0, 22, 0};
    if (auto alt = dtype_of_code(code, other); alt && alt->size == size) t = *alt;
  }
  if (t.size != size) {
    std::ostringstream os;
    os << "Invalid " << what << " at offset " << at << ": dtype " << dtype_name(t) << " has item size "
       << int(t.size) << " but the file says " << int(size) << ".";
    r.fail(os.str());
  }
  return t;
}

void write_stream(ByteWriter& w, const StreamInfo& s) {
  w.i32(s.index);
  w.i32(s.device_type);
  w.i32(s.device_index);
}

StreamInfo read_stream(ByteReader& r, const char* what) {
  StreamInfo s;
  s.index = r.i32(what);
  uint64_t at = r.pos();
  s.device_type = r.i32(what);
  s.device_index = r.i32(what);
  if (s.device_type != 0 && s.device_type != 1) {
    std::ostringstream os;
    os << "Invalid " << what << " at offset " << at << ": expected device type 0 (cpu) or 1 (gpu) but found "
       << s.device_type << ".";
    r.fail(os.str());
  }
  return s;
}

void write_ids(ByteWriter& w, const std::vector<uint64_t>& ids) {
  w.u64(ids.size());
  for (auto id : ids) w.u64(id);
}

std::vector<uint64_t> read_ids(ByteReader& r, const char* what) {
  uint64_t n = r.count(what, 8);
  std::vector<uint64_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = r.u64(what);
  return ids;
}

namespace {

[[noreturn]] void bad_type(const Field& f, const std::string& prim) {
  throw std::logic_error("[export_function] State field '" + std::string(f.name) + "' of " + prim +
                         " holds a value of the wrong type for its schema.");
}

template <typename T>
const T& want(const Value& v, const Field& f, const std::string& prim) {
  const T* p = std::get_if<T>(&v);
  if (!p) bad_type(f, prim);
  return *p;
}

}  // namespace

void write_field(ByteWriter& w, const Field& f, const Value& v, const std::string& prim, const FormatVersion& ver) {
  switch (f.type) {
    case FieldType::Placeholder: return;
    case FieldType::Bool: w.boolean(want<bool>(v, f, prim)); return;
    case FieldType::Int: w.i32(want<int32_t>(v, f, prim)); return;
    case FieldType::Size: w.u64(want<uint64_t>(v, f, prim)); return;
    case FieldType::Float: w.f32(want<float>(v, f, prim)); return;
    case FieldType::Double: w.f64(want<double>(v, f, prim)); return;
    case FieldType::DtypeF: write_dtype(w, want<Dtype>(v, f, prim), ver); return;
    case FieldType::String: w.str(want<std::string>(v, f, prim)); return;
    case FieldType::IntVec:
    case FieldType::ShapeF: {
      auto& x = want<std::vector<int32_t>>(v, f, prim);
      w.u64(x.size());
      for (auto e : x) w.i32(e);
      return;
    }
    case FieldType::StridesF: {
      auto& x = want<std::vector<int64_t>>(v, f, prim);
      w.u64(x.size());
      for (auto e : x) w.i64(e);
      return;
    }
    case FieldType::SizeVec: {
      auto& x = want<std::vector<uint64_t>>(v, f, prim);
      w.u64(x.size());
      for (auto e : x) w.u64(e);
      return;
    }
    case FieldType::OptFloat: {
      auto& x = want<std::optional<float>>(v, f, prim);
      w.boolean(x.has_value());
      if (x) w.f32(*x);
      return;
    }
    case FieldType::BoolTripleVec: {
      auto& x = want<std::vector<std::array<bool, 3>>>(v, f, prim);
      w.u64(x.size());
      for (auto& t : x) {
        w.boolean(t[0]);
        w.boolean(t[1]);
        w.boolean(t[2]);
      }
      return;
    }
    case FieldType::ScalarVec: {
      auto& x = want<std::vector<ScalarArg>>(v, f, prim);
      w.u64(x.size());
      for (auto& s : x) {
        // Tags: Int = 0, Float = 1, Bool = 2 (spec 1.3).
        if (auto* i = std::get_if<int32_t>(&s)) {
          w.i32(0);
          w.i32(*i);
        } else if (auto* fl = std::get_if<float>(&s)) {
          w.i32(1);
          w.f32(*fl);
        } else {
          w.i32(2);
          w.boolean(std::get<bool>(s));
        }
      }
      return;
    }
  }
  bad_type(f, prim);
}

Value read_field(ByteReader& r, const Field& f, const std::string& prim, const FormatVersion& ver, bool mlx_rules) {
  std::string what_s = "field '" + std::string(f.name) + "' of " + prim;
  const char* what = what_s.c_str();
  switch (f.type) {
    case FieldType::Placeholder: return std::monostate{};
    case FieldType::Bool: return r.boolean(what);
    case FieldType::Int: return r.i32(what);
    case FieldType::Size: return r.u64(what);
    case FieldType::Float: return r.f32(what);
    case FieldType::Double: return r.f64(what);
    case FieldType::DtypeF: return read_dtype(r, what, ver, mlx_rules);
    case FieldType::String: return r.str(what);
    case FieldType::IntVec:
    case FieldType::ShapeF: {
      uint64_t n = r.count(what, 4);
      std::vector<int32_t> x(static_cast<size_t>(n));
      for (auto& e : x) e = r.i32(what);
      return x;
    }
    case FieldType::StridesF: {
      uint64_t n = r.count(what, 8);
      std::vector<int64_t> x(static_cast<size_t>(n));
      for (auto& e : x) e = r.i64(what);
      return x;
    }
    case FieldType::SizeVec: {
      uint64_t n = r.count(what, 8);
      std::vector<uint64_t> x(static_cast<size_t>(n));
      for (auto& e : x) e = r.u64(what);
      return x;
    }
    case FieldType::OptFloat: {
      // Read correctly, unless reproducing MLX 0.30.0 - 0.31.0, whose reader re-reads the presence
      // flag in place of the value until it finds a false one (spec 5.1 B2).
      if (mlx_rules && ver >= FormatVersion{0, 30, 0} && ver < FormatVersion{0, 31, 1}) {
        while (r.u8(what) != 0) {
        }
        return std::optional<float>{};
      }
      if (!r.boolean(what)) return std::optional<float>{};
      return std::optional<float>{r.f32(what)};
    }
    case FieldType::BoolTripleVec: {
      uint64_t n = r.count(what, 3);
      std::vector<std::array<bool, 3>> x(static_cast<size_t>(n));
      for (auto& t : x) {
        t[0] = r.boolean(what);
        t[1] = r.boolean(what);
        t[2] = r.boolean(what);
      }
      return x;
    }
    case FieldType::ScalarVec: {
      uint64_t n = r.count(what, 5);
      std::vector<ScalarArg> x;
      x.reserve(static_cast<size_t>(n));
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t at = r.pos();
        int32_t tag = r.i32(what);
        if (tag == 0) {
          x.emplace_back(r.i32(what));
        } else if (tag == 1) {
          x.emplace_back(r.f32(what));
        } else if (tag == 2) {
          x.emplace_back(r.boolean(what));
        } else {
          std::ostringstream os;
          os << "Invalid variant tag in " << what << " at offset " << at
             << ": expected 0 (int), 1 (float) or 2 (bool) but found " << tag << ".";
          r.fail(os.str());
        }
      }
      return x;
    }
  }
  r.fail("Unknown field type in the schema of " + prim + ".");
}

void write_state(ByteWriter& w, const PrimitiveDef& def, const State& s, const FormatVersion& v,
                 const std::vector<ArraySpec>& outputs) {
  const auto& fields = disk_fields(def, v);
  auto values = from_schema(def, v, s, outputs);  // the writer has checked that `v` can express `s`
  if (values.size() != fields.size()) {
    throw std::logic_error("[export_function] " + def.name + " has " + std::to_string(values.size()) +
                           " state values but its schema has " + std::to_string(fields.size()) + " fields.");
  }
  for (size_t i = 0; i < fields.size(); ++i) write_field(w, fields[i], values[i], def.name, v);
}

std::vector<Value> read_disk_state(ByteReader& r, const PrimitiveDef& def, const FormatVersion& v, bool mlx_rules) {
  const auto& fields = disk_fields(def, v);
  std::vector<Value> values;
  values.reserve(fields.size());
  for (auto& f : fields) values.push_back(read_field(r, f, def.name, v, mlx_rules));
  return values;
}

State read_state(ByteReader& r, const PrimitiveDef& def, const FormatVersion& v) {
  return to_schema(def, v, read_disk_state(r, def, v), {}, {});
}

namespace {

template <typename T>
void list_text(std::ostream& os, const std::vector<T>& x) {
  os << "[";
  for (size_t i = 0; i < x.size(); ++i) {
    if (i) os << ", ";
    if constexpr (std::is_same_v<T, std::array<bool, 3>>) {
      os << "(" << x[i][0] << ", " << x[i][1] << ", " << x[i][2] << ")";
    } else if constexpr (std::is_same_v<T, ScalarArg>) {
      std::visit([&](auto s) { os << s; }, x[i]);
    } else {
      os << x[i];
    }
  }
  os << "]";
}

}  // namespace

std::string value_text(const Value& v) {
  std::ostringstream os;
  os << std::boolalpha;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          os << "<placeholder>";
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << (x.size() > 60 ? x.substr(0, 57) + "..." : x) << '"';
        } else if constexpr (std::is_same_v<T, Dtype>) {
          os << dtype_name(x);
        } else if constexpr (std::is_same_v<T, std::optional<float>>) {
          if (x) {
            os << *x;
          } else {
            os << "none";
          }
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>> || std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<uint64_t>> ||
                             std::is_same_v<T, std::vector<std::array<bool, 3>>> ||
                             std::is_same_v<T, std::vector<ScalarArg>>) {
          list_text(os, x);
        } else {
          os << x;
        }
      },
      v);
  return os.str();
}

std::string state_text(const PrimitiveDef& def, const State& s) {
  std::string out;
  for (size_t i = 0; i < def.fields.size() && i < s.values.size(); ++i) {
    if (def.fields[i].type == FieldType::Placeholder) continue;
    if (!out.empty()) out += ", ";
    out += std::string(def.fields[i].name) + "=" + value_text(s.values[i]);
  }
  return out;
}

std::string spec_text(const ArraySpec& s) {
  std::ostringstream os;
  os << s.shape << " " << dtype_name(s.dtype);
  return os.str();
}

}  // namespace kiln::format
