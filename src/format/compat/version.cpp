// src/format/compat/: what each MLX release does differently with the file and with a primitive's
// state (fields.h says more). This file: the release list and the per-version layout table (spec 5.0
// and 5.1), whose facts name registry fields by name (resolved by fields.h on first use).
//
// The per-version layout table. Each versioned primitive lists its on-disk layouts,
// each valid from one release on, as a permutation of its registry fields plus disk-only fields;
// registry fields a layout lacks get a default on read, and writing refuses a state whose value there
// differs from that default (unless the field is only a performance hint).
#include "format/compat/version.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <stdexcept>

#include "format/codec.h"
#include "format/compat/fields.h"

namespace kiln::format {

namespace {

constexpr FormatVersion V(int a, int b, int c) { return FormatVersion{a, b, c}; }

// Release tags with export (spec 5.0: there is no 0.26.4, 0.27.0 or 0.30.2), then the later releases
// (spec 5.1). 0.32.2 - 0.32.4 are newer than the spec; their changes were found by comparing the
// wheels' files: 0.32.2 SDPA force_fused and DivMod's flooring, 0.32.4 FFT odd_out and FloorDivide.
const std::vector<FormatVersion>& releases() {
  static const std::vector<FormatVersion> r = {
      V(0, 22, 0), V(0, 22, 1), V(0, 23, 0), V(0, 23, 1), V(0, 23, 2), V(0, 24, 0), V(0, 24, 1), V(0, 24, 2),
      V(0, 25, 0), V(0, 25, 1), V(0, 25, 2), V(0, 26, 0), V(0, 26, 1), V(0, 26, 2), V(0, 26, 3), V(0, 26, 5),
      V(0, 27, 1), V(0, 28, 0), V(0, 29, 0), V(0, 29, 1), V(0, 29, 2), V(0, 29, 3), V(0, 29, 4), V(0, 30, 0),
      V(0, 30, 1), V(0, 30, 3), V(0, 30, 4), V(0, 30, 5), V(0, 30, 6), V(0, 31, 0), V(0, 31, 1), V(0, 31, 2),
      V(0, 32, 0), V(0, 32, 1), V(0, 32, 2), V(0, 32, 3), V(0, 32, 4)};
  return r;
}

// Releases that introduced a layout change (spec 5.0.2 A1-A17, 5.1 A1-A6).
constexpr FormatVersion kNewDtypeCodes = V(0, 23, 0);
constexpr FormatVersion kMetadata = V(0, 32, 1);
constexpr FormatVersion kConvHighPadding = V(0, 25, 2);      // padding_lo and padding_hi both stored
constexpr FormatVersion kConvConstructorOrder = V(0, 26, 2);  // stored in the constructor's order
constexpr FormatVersion kOptionalBug = V(0, 30, 0);         // optional<float> misread, until 0.31.1
constexpr FormatVersion kOptionalFix = V(0, 31, 1);
constexpr FormatVersion kReduceType = V(0, 31, 2);          // SliceUpdate gains a leading reduce_type
constexpr FormatVersion kFloorDivMod = V(0, 32, 2);         // DivMod floors the quotient (Python's divmod)

// ---- versioned primitives ----
//
// Every fact below names registry fields (PrimitiveDef::fields) by name; table() resolves the names
// against the registry rows on first use and throws std::logic_error naming the primitive, the field
// and the release when a row has no such field (fields.h).

enum class Policy {
  Require,  // the value must equal the default to be written where the field is missing
  Hint,     // a performance hint: dropped where missing (results do not change)
  Derived,  // recomputed on read from the node's recorded shapes (Convolution's padding_hi)
};

struct Default {
  const char* field;  // registry field name
  Value value;
  Policy policy;
  int index = -1;     // resolved position in the registry schema
};

// A field that exists only on disk (not in the registry schema).
struct Extra {
  Field field;
  Value write;        // what kiln writes
  bool must_match;    // on read: other values have no kiln representation (else they are dropped)
  const char* note;   // why, for the error text
  bool derived = false;  // written as recomputed from the node (derive_extra), not `write`
};

// A registry field that no layout stores: its value is implied by the release (DivMod's rounding,
// which MLX changed in 0.32.2 without a state field). Read as the value of the file's release;
// writing refuses a node whose value differs from the target release's.
struct Implied {
  const char* field;  // registry field name
  FormatVersion since;
  Value before, after;
  const char* why;  // what the target release would compute instead, for the error text
  int index = -1;   // resolved position in the registry schema
};

struct Layout {
  FormatVersion since;
  std::vector<std::string> names;  // the on-disk fields in order: registry field names or names of `extras`
  std::vector<Extra> extras = {};
  const char* name = nullptr;  // on-disk name when it differs from the registry's
  // Resolved from the registry row (table()):
  std::vector<int> order = {};     // disk field i is registry field order[i], or extras[-order[i] - 1]
  std::vector<Field> fields = {};  // the on-disk fields' types
};

struct Versioned {
  std::string name;
  std::vector<Layout> layouts;  // oldest first
  std::vector<Default> defaults;
  std::vector<Implied> implied = {};
};

// An enum value that a release range cannot encode.
struct ValueLimit {
  const char* prim;
  const char* field;  // registry field name
  int32_t value;
  FormatVersion since;
  const char* meaning;
};

const std::vector<ValueLimit> kValueLimits = {
    {"Scan", "type", 4, V(0, 25, 0), "LogAddExp"},
    {"Quantize", "mode", 2, V(0, 29, 4), "mxfp8"},
    {"Quantize", "mode", 3, V(0, 29, 4), "nvfp4"},
    {"QuantizedMatmul", "mode", 2, V(0, 29, 4), "mxfp8"},
    {"QuantizedMatmul", "mode", 3, V(0, 29, 4), "nvfp4"},
    {"GatherQMM", "mode", 2, V(0, 29, 4), "mxfp8"},
    {"GatherQMM", "mode", 3, V(0, 29, 4), "nvfp4"},
};

// Table entries added after 0.22.0 (spec 5.0.4, 5.1 A5).
const std::map<std::string, FormatVersion> kAddedNames = {
    {"LogSumExp", V(0, 24, 2)},  {"Eig", V(0, 26, 0)},          {"GatherAxis", V(0, 26, 2)},
    {"ScatterAxis", V(0, 26, 2)}, {"CustomKernel", V(0, 30, 0)}, {"MaskedScatter", V(0, 30, 1)},
    {"SearchSorted", V(0, 32, 1)}, {"FloorDivide", V(0, 32, 4)},
};

const char* const kSliceUpdateTypes[] = {"Max", "Min", "Sum", "Prod", "None"};

// Registry fields that the code below reads outside the tables, resolved on first use.
const compat::FieldRef kConvStrides{"Convolution", "kernel_strides", "the Convolution layouts before MLX 0.26.2"};
const compat::FieldRef kConvPaddingLo{"Convolution", "padding_lo", "the Convolution layouts before MLX 0.26.2"};
const compat::FieldRef kConvPaddingHi{"Convolution", "padding_hi", "the Convolution layouts before MLX 0.26.2"};
const compat::FieldRef kConvKernelDilation{"Convolution", "kernel_dilation",
                                           "the high padding of the Convolution layouts before MLX 0.25.2"};
const compat::FieldRef kConvInputDilation{"Convolution", "input_dilation",
                                          "the high padding of the Convolution layouts before MLX 0.25.2"};
const compat::FieldRef kKernelInitValue{"CustomKernel", "init_value", "the optional<float> bug of MLX 0.30.0 - 0.31.0"};
const compat::FieldRef kFftAxes{"FFT", "axes", "the odd_out field of the MLX 0.32.4 FFT layout"};
const compat::FieldRef kFftInverse{"FFT", "inverse", "the odd_out field of the MLX 0.32.4 FFT layout"};
const compat::FieldRef kFftReal{"FFT", "real", "the odd_out field of the MLX 0.32.4 FFT layout"};

std::vector<Versioned> make_table() {
  std::vector<Versioned> t;
  t.push_back({"ScaledDotProductAttention",
               {{V(0, 22, 0), {"fallback", "scale"}},
                {V(0, 24, 0), {"fallback", "scale", "do_causal"}},
                {V(0, 29, 1), {"fallback", "scale", "do_causal", "has_sinks"}},
                {V(0, 30, 0), {"fallback", "scale", "do_causal", "has_sinks", "output_logsumexp"}},
                {V(0, 32, 2),
                 {"fallback", "scale", "do_causal", "has_sinks", "output_logsumexp", "force_fused"},
                 {{{"force_fused", FieldType::Bool}, false, false, "GPU kernel choice"}}}},
               {{"do_causal", false, Policy::Require},
                {"has_sinks", false, Policy::Require},
                {"output_logsumexp", false, Policy::Require}}});
  t.push_back({"Convolution",
               {{V(0, 22, 0), {"padding_lo", "kernel_strides", "kernel_dilation", "input_dilation", "groups", "flip"}},
                {V(0, 25, 2),
                 {"padding_lo", "padding_hi", "kernel_strides", "kernel_dilation", "input_dilation", "groups", "flip"}},
                {V(0, 26, 2),
                 {"kernel_strides", "padding_lo", "padding_hi", "kernel_dilation", "input_dilation", "groups", "flip"}}},
               {{"padding_hi", std::vector<int32_t>{}, Policy::Derived}}});
  t.push_back({"GatherMM",
               {{V(0, 22, 0), {}}, {V(0, 25, 0), {"left_sorted", "right_sorted"}}},
               {{"left_sorted", false, Policy::Hint}, {"right_sorted", false, Policy::Hint}}});
  t.push_back({"GatherQMM",
               {{V(0, 22, 0), {"group_size", "bits", "transpose"}},
                {V(0, 25, 0), {"group_size", "bits", "transpose", "left_sorted", "right_sorted"}},
                {V(0, 29, 0), {"group_size", "bits", "mode", "transpose", "left_sorted", "right_sorted"}}},
               {{"mode", int32_t(0), Policy::Require},
                {"left_sorted", false, Policy::Hint},
                {"right_sorted", false, Policy::Hint}}});
  t.push_back({"QuantizedMatmul",
               {{V(0, 22, 0), {"group_size", "bits", "transpose"}},
                {V(0, 29, 0), {"group_size", "bits", "mode", "transpose"}}},
               {{"mode", int32_t(0), Policy::Require}}});
  t.push_back({"Quantize",
               {{V(0, 22, 0), {"fallback", "group_size", "bits", "dequantize"}, {}, "AffineQuantize"},
                {V(0, 29, 0), {"fallback", "group_size", "bits", "mode", "dequantize"}}},
               {{"mode", int32_t(0), Policy::Require}}});
  t.push_back({"SVD", {{V(0, 22, 0), {}}, {V(0, 23, 2), {"compute_uv"}}}, {{"compute_uv", true, Policy::Require}}});
  t.push_back({"SliceUpdate",
               {{V(0, 22, 0), {"start", "stop", "strides"}},
                {V(0, 31, 2),
                 {"reduce_type", "start", "stop", "strides"},
                 {{{"reduce_type", FieldType::Int}, int32_t(4), true, "reduce type (Max 0, Min 1, Sum 2, Prod 3, None 4)"}}}},
               {}});
  // odd_out (0.32.4): whether an inverse real transform's last axis is odd. The recorded output shape
  // already says so, and older releases take that shape from the file: dropped on read, recomputed
  // when writing, and nothing is lost writing for older releases.
  t.push_back({"FFT",
               {{V(0, 22, 0), {"axes", "inverse", "real"}},
                {V(0, 32, 4),
                 {"axes", "inverse", "real", "odd_out"},
                 {{{"odd_out", FieldType::Bool}, false, false, "odd inverse real length", true}}}},
               {}});
  t.push_back({"DivMod", {{V(0, 22, 0), {}}}, {},
               {{"floor", kFloorDivMod, false, true,
                 "before 0.32.2 MLX's DivMod truncates the quotient (C-style), from 0.32.2 it floors it (Python's "
                 "divmod), so that release would compute other values"}}});
  // CustomKernel (in the table from 0.30.0): 0.32.0 appends compile_options.
  const std::vector<std::string> ck = {"name",          "source",        "grid_x",
                                       "grid_y",        "grid_z",        "threadgroup_x",
                                       "threadgroup_y", "threadgroup_z", "shape_infos",
                                       "ensure_row_contiguous",          "init_value",
                                       "scalar_arguments",               "is_precompiled",
                                       "shared_memory"};
  std::vector<std::string> ck32 = ck;
  ck32.push_back("compile_options");
  t.push_back({"CustomKernel",
               {{V(0, 30, 0), ck},
                {V(0, 32, 0), ck32, {{{"compile_options", FieldType::Int}, int32_t(0), false, "Metal math mode"}}}},
               {}});
  return t;
}

// Where a name is used, for the error texts.
std::string layout_where(const Layout& l) { return "the MLX " + l.since.str() + " layout"; }
std::string defaults_where(const Versioned& row) {
  return "the defaults of the MLX " + row.layouts.front().since.str() + " - " + releases().back().str() + " layouts";
}
std::string implied_where(const Implied& d) { return "the implied value (changed in MLX " + d.since.str() + ")"; }
std::string limit_where(const ValueLimit& lim) {
  return "the value limit " + std::to_string(lim.value) + " (" + lim.meaning + ", added in MLX " + lim.since.str() + ")";
}

int extra_of(const Layout& l, const std::string& name) {
  for (size_t x = 0; x < l.extras.size(); ++x) {
    if (name == l.extras[x].field.name) return static_cast<int>(x);
  }
  return -1;
}

// Resolves a row's names against its registry row (in place), checking that each layout uses every
// registry field and disk-only field at most once, and every disk-only field it defines.
void resolve(Versioned& row, const PrimitiveDef& def) {
  for (auto& l : row.layouts) {
    const std::string where = layout_where(l);
    std::vector<bool> extra_used(l.extras.size(), false);
    for (auto& n : l.names) {
      int k = compat::find_field(def, n);
      int x = extra_of(l, n);
      if (k >= 0 && x >= 0) {
        throw std::logic_error("[format] Disk-only field '" + n + "' of " + row.name + " in " + where +
                               " is also a field of the registry row.");
      }
      if (x < 0) k = compat::resolve_field(def, n, where);  // throws when the row has no such field
      bool twice = x >= 0 ? extra_used[x] : std::find(l.order.begin(), l.order.end(), k) != l.order.end();
      if (twice) throw std::logic_error("[format] " + where + " of " + row.name + " lists field '" + n + "' twice.");
      if (x >= 0) extra_used[x] = true;
      l.order.push_back(x >= 0 ? -x - 1 : k);
      l.fields.push_back(x >= 0 ? l.extras[x].field : def.fields[k]);
    }
    for (size_t x = 0; x < l.extras.size(); ++x) {
      if (!extra_used[x]) {
        throw std::logic_error("[format] " + where + " of " + row.name + " defines disk-only field '" +
                               l.extras[x].field.name + "' but does not list it.");
      }
    }
  }
  for (auto& d : row.defaults) d.index = compat::resolve_field(def, d.field, defaults_where(row));
  for (auto& d : row.implied) d.index = compat::resolve_field(def, d.field, implied_where(d));
}

struct Table {
  std::map<std::string, Versioned> rows;  // by registry name
};

const Table& table() {
  static const Table t = [] {
    Table out;
    for (auto& row : make_table()) {
      const PrimitiveDef* def = registry::find(row.name);
      if (!def) continue;  // a family that is not linked in
      resolve(row, *def);
      for (auto& l : row.layouts) {
        // Every registry field is either on disk or has a default (a table that drifted from its
        // registry row would otherwise drop a field silently).
        for (int k = 0; k < static_cast<int>(def->fields.size()); ++k) {
          bool on_disk = std::find(l.order.begin(), l.order.end(), k) != l.order.end();
          bool has_default = std::any_of(row.defaults.begin(), row.defaults.end(), [&](auto& d) { return d.index == k; }) ||
                             std::any_of(row.implied.begin(), row.implied.end(), [&](auto& d) { return d.index == k; });
          if (!on_disk && !has_default) {
            throw std::logic_error("[format] The " + l.since.str() + " layout of " + row.name + " misses field " +
                                   def->fields[k].name + ".");
          }
        }
      }
      out.rows.emplace(row.name, std::move(row));
    }
    // The names used outside the tables too, so that a stale one fails here, on first use.
    for (const compat::FieldRef* ref : compat::detail::field_refs()) {
      if (registry::find(ref->prim)) ref->index();
    }
    return out;
  }();
  return t;
}

struct ResolvedLimit {
  const ValueLimit* limit;
  int index;  // the limited field's position in the registry schema
};

// kValueLimits with their fields resolved (rows that are not linked in are left out).
const std::vector<ResolvedLimit>& value_limits() {
  static const std::vector<ResolvedLimit> r = [] {
    std::vector<ResolvedLimit> out;
    for (auto& lim : kValueLimits) {
      const PrimitiveDef* def = registry::find(lim.prim);
      if (def) out.push_back({&lim, compat::resolve_field(*def, lim.field, limit_where(lim))});
    }
    return out;
  }();
  return r;
}

const Versioned* versioned(const PrimitiveDef& def) {
  auto& rows = table().rows;
  auto it = rows.find(def.name);
  return it == rows.end() ? nullptr : &it->second;
}

// The layout of `row` in force at `v`, and the release that added registry field `k` (or nullopt).
const Layout& layout_at(const Versioned& row, const FormatVersion& v) {
  const Layout* l = &row.layouts.front();
  for (auto& x : row.layouts) {
    if (x.since <= v) l = &x;
  }
  return *l;
}

std::optional<FormatVersion> field_added(const Versioned& row, int k) {
  for (auto& l : row.layouts) {
    if (std::find(l.order.begin(), l.order.end(), k) != l.order.end()) return l.since;
  }
  return std::nullopt;
}

[[noreturn]] void refuse(const std::string& api, const std::string& what, const FormatVersion& v,
                         const std::string& why) {
  throw std::invalid_argument("[" + api + "] " + what + " cannot be written for MLX " + v.str() + ": " + why + ".");
}

// Convolution layouts before 0.25.2 keep only the low padding; the high padding is what makes the
// recorded output size. Any value in a window of `stride` gives that size; prefer the low padding
// (symmetric padding is the common case), else the window end nearest to it.
std::vector<int32_t> derive_padding_hi(const State& s, const std::vector<ArraySpec>& in,
                                       const std::vector<ArraySpec>& out) {
  auto& strides = s.ints(kConvStrides());
  auto& lo = s.ints(kConvPaddingLo());
  auto& kdil = s.ints(kConvKernelDilation());
  auto& idil = s.ints(kConvInputDilation());
  size_t nd = lo.size();
  if (in.size() != 2 || out.size() != 1 || in[0].shape.size() != nd + 2 || in[1].shape.size() != nd + 2 ||
      out[0].shape.size() != nd + 2 || strides.size() != nd || kdil.size() != nd || idil.size() != nd) {
    throw std::invalid_argument("[import_function] Invalid Convolution node: its padding, strides and dilations do "
                                "not match the ranks of its inputs and output.");
  }
  std::vector<int32_t> hi(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t n = in[0].shape[i + 1], k = in[1].shape[i + 1], o = out[0].shape[i + 1];
    int64_t in_d = n > 0 ? (n - 1) * int64_t(idil[i]) + 1 : 0;
    int64_t k_d = k > 0 ? (k - 1) * int64_t(kdil[i]) + 1 : 0;
    int64_t st = std::max<int64_t>(1, strides[i]);
    int64_t least = (o - 1) * st + k_d - in_d - lo[i];
    int64_t h = lo[i];
    if (h < least) h = least;
    if (h > least + st - 1) h = least + st - 1;
    hi[i] = static_cast<int32_t>(std::clamp<int64_t>(h, INT32_MIN, INT32_MAX));
  }
  return hi;
}

// The value of a derived disk-only field (FFT's odd_out: an inverse real transform whose last
// transformed axis has an odd recorded length). Without output specs it is false.
Value derive_extra(const PrimitiveDef& def, const State& s, const std::vector<ArraySpec>& outputs) {
  if (def.name == "FFT") {
    auto& axes = std::get<std::vector<uint64_t>>(s.values.at(kFftAxes()));
    bool inverse = std::get<bool>(s.values.at(kFftInverse())), real = std::get<bool>(s.values.at(kFftReal()));
    if (!inverse || !real || axes.empty() || outputs.size() != 1) return false;
    auto& shape = outputs[0].shape;
    return axes.back() < shape.size() && shape[axes.back()] % 2 == 1;
  }
  return Value{};
}

}  // namespace

std::string FormatVersion::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

bool FormatVersion::parse(const std::string& text, FormatVersion& out) {
  int parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int k = 0; k < 3; ++k) {
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && v < 100000) {
      v = v * 10 + (text[i++] - '0');
    }
    parts[k] = static_cast<int>(v);
    if (k < 2) {
      if (i >= text.size() || text[i] != '.') return false;
      ++i;
    }
  }
  out = FormatVersion{parts[0], parts[1], parts[2]};
  return true;
}

std::vector<std::string> supported_versions() {
  std::vector<std::string> out;
  for (auto& v : releases()) out.push_back(v.str());
  return out;
}

FormatVersion newest_known() { return releases().back(); }

FormatVersion target_version(const std::string& text, const std::string& api) {
  FormatVersion v;
  bool exact = FormatVersion::parse(text, v) && v.str() == text;
  if (!exact) {
    throw std::invalid_argument("[" + api + "] Invalid MLX version '" + text +
                                "': expected major.minor.patch, for example 0.30.1.");
  }
  if (v < kV0_22_0) {
    throw std::invalid_argument("[" + api + "] MLX " + text + " has no function export (it starts with 0.22.0).");
  }
  if (v > newest_known()) {
    throw std::invalid_argument("[" + api + "] MLX " + text + " is newer than the newest layout kiln knows (" +
                                newest_known().str() + ").");
  }
  return v;
}

FormatVersion reader_layout(const std::string& header) {
  FormatVersion v;
  if (!FormatVersion::parse(header, v)) return kDefaultVersion;
  std::string shown = header.size() > 40 ? header.substr(0, 40) + "..." : header;
  if (v > newest_known()) {
    throw std::invalid_argument("[import_function] The file was written by MLX " + shown +
                                ", which is newer than the newest layout kiln knows (" + newest_known().str() +
                                "); its layout may differ, so it is not read.");
  }
  if (v < kV0_22_0) {
    throw std::invalid_argument("[import_function] The file says it was written by MLX " + shown +
                                ", which has no function export (it starts with 0.22.0).");
  }
  return v;
}

bool header_has_metadata(const FormatVersion& v) { return v >= kMetadata; }

int32_t dtype_code(Dtype t, const FormatVersion& v) {
  int32_t c = t.code();
  if (v >= kNewDtypeCodes) return c;
  if (c == float64.code()) return -1;
  if (c == bfloat16.code()) return 11;
  if (c == complex64.code()) return 12;
  return c;
}

std::optional<Dtype> dtype_of_code(int32_t code, const FormatVersion& v) {
  if (v < kNewDtypeCodes) {
    if (code == 11) return bfloat16;
    if (code == 12) return complex64;
    if (code < 0 || code > 12) return std::nullopt;
    return dtype_from_code(code);
  }
  if (code < 0 || code >= Dtype::num_types) return std::nullopt;
  return dtype_from_code(code);
}

std::string disk_name(const PrimitiveDef& def, const FormatVersion& v) {
  if (auto* row = versioned(def)) {
    auto& l = layout_at(*row, v);
    if (l.name) return l.name;
  }
  return def.name;
}

FormatVersion serializable_since(const PrimitiveDef& def) {
  auto it = kAddedNames.find(def.name);
  return it == kAddedNames.end() ? kV0_22_0 : it->second;
}

const PrimitiveDef* find_disk_name(const std::string& name, const FormatVersion& v) {
  // Renamed entries first (AffineQuantize -> Quantize before 0.29.0).
  for (auto& [reg, row] : table().rows) {
    auto& l = layout_at(row, v);
    if (l.name && name == l.name) return registry::find(reg);
  }
  const PrimitiveDef* def = registry::find(name);
  if (!def || disk_name(*def, v) != name || serializable_since(*def) > v) return nullptr;
  return def;
}

const std::vector<Field>& disk_fields(const PrimitiveDef& def, const FormatVersion& v) {
  if (auto* row = versioned(def)) return layout_at(*row, v).fields;
  return def.fields;
}

State to_schema(const PrimitiveDef& def, const FormatVersion& v, std::vector<Value> disk,
                const std::vector<ArraySpec>& inputs, const std::vector<ArraySpec>& outputs, bool mlx_rules) {
  const Versioned* row = versioned(def);
  if (!row) {
    State s;
    s.values = std::move(disk);
    return s;
  }
  const Layout& l = layout_at(*row, v);
  State s;
  s.values.resize(def.fields.size());
  std::vector<bool> set(def.fields.size(), false);
  int derive = -1;  // the registry field recomputed from the shapes (Convolution's padding_hi)
  for (size_t i = 0; i < l.order.size(); ++i) {
    int k = l.order[i];
    if (k >= 0) {
      s.values[k] = std::move(disk[i]);
      set[k] = true;
      continue;
    }
    const Extra& x = l.extras[-k - 1];
    if (x.must_match && disk[i] != x.write) {
      std::string val = value_text(disk[i]);
      if (def.name == "SliceUpdate") {
        int32_t t = std::get<int32_t>(disk[i]);
        if (t >= 0 && t < 5) val = std::to_string(t) + " (" + kSliceUpdateTypes[t] + ")";
      }
      throw std::invalid_argument("[import_function] " + def.name + " with " + x.field.name + " " + val +
                                  " (MLX " + v.str() + " layout, " + x.note + ") has no kiln equivalent.");
    }
  }
  for (auto& d : row->implied) s.values[d.index] = v >= d.since ? d.after : d.before;
  for (auto& d : row->defaults) {
    if (set[d.index]) continue;
    if (d.policy == Policy::Derived) {
      derive = d.index;
    } else {
      s.values[d.index] = d.value;
    }
  }
  if (mlx_rules && def.name == "Convolution" && v < kConvConstructorOrder) {
    // MLX's reader hands the fields, in the order it wrote them, to a constructor that takes the
    // strides first: before 0.25.2 strides and padding swap, then strides <- lo <- hi <- strides.
    const size_t ks = kConvStrides(), klo = kConvPaddingLo(), khi = kConvPaddingHi();
    auto strides = s.values[ks], lo = s.values[klo], hi = s.values[khi];
    if (v < kConvHighPadding) {
      s.values[ks] = lo;
      s.values[klo] = strides;
    } else {
      s.values[ks] = lo;
      s.values[klo] = hi;
      s.values[khi] = strides;
    }
  }
  if (derive >= 0) s.values[derive] = derive_padding_hi(s, inputs, outputs);  // Convolution's padding_hi
  return s;
}

std::string reduce_expansion(const PrimitiveDef& def, const FormatVersion& v, std::vector<Value>& disk) {
  if (def.name != "SliceUpdate" || v < kReduceType) return "";
  // The position of the disk-only reduce_type in the layout that added it, resolved once.
  static const size_t at = [&] {
    const Layout& l = layout_at(*versioned(def), kReduceType);
    auto it = std::find(l.names.begin(), l.names.end(), "reduce_type");
    if (it == l.names.end()) {
      throw std::logic_error("[format] The MLX " + kReduceType.str() + " layout of SliceUpdate has no field reduce_type.");
    }
    return static_cast<size_t>(it - l.names.begin());
  }();
  if (disk.size() <= at) return "";
  auto* t = std::get_if<int32_t>(&disk[at]);
  if (!t || *t < 0 || *t > 3) return "";  // None (4) or an unknown code (to_schema reports it)
  static const char* const ops[] = {"Maximum", "Minimum", "Add", "Multiply"};
  std::string op = ops[*t];
  disk[at] = int32_t(4);
  return op;
}

void check_expressible(const PrimitiveDef& def, const State& state, const FormatVersion& v, const std::string& api) {
  FormatVersion since = serializable_since(def);
  if (since > v) {
    refuse(api, def.name, v, "MLX can serialize it only from " + since.str());
  }
  for (auto& [lim, k] : value_limits()) {
    if (def.name != lim->prim || v >= lim->since) continue;
    if (auto* x = std::get_if<int32_t>(&state.values.at(k)); x && *x == lim->value) {
      refuse(api, def.name + " with " + def.fields[k].name + "=" + std::to_string(lim->value) + " (" +
                      lim->meaning + ")",
             v, "that value was added in " + lim->since.str());
    }
  }
  const Versioned* row = versioned(def);
  if (!row) return;
  const Layout& l = layout_at(*row, v);
  for (auto& d : row->implied) {
    const Value& want = v >= d.since ? d.after : d.before;
    if (state.values.at(d.index) != want) {
      refuse(api, def.name + " with " + def.fields[d.index].name + "=" + value_text(state.values[d.index]), v, d.why);
    }
  }
  for (auto& d : row->defaults) {
    if (d.policy != Policy::Require) continue;
    if (std::find(l.order.begin(), l.order.end(), d.index) != l.order.end()) continue;
    if (state.values.at(d.index) != d.value) {
      auto added = field_added(*row, d.index);
      refuse(api, def.name + " with " + def.fields[d.index].name + "=" + value_text(state.values[d.index]), v,
             std::string("its layout has no ") + def.fields[d.index].name + " field" +
                 (added ? " (added in " + added->str() + ")" : ""));
    }
  }
}

void check_dtype_expressible(Dtype t, const FormatVersion& v, const std::string& api, const std::string& where) {
  if (dtype_code(t, v) < 0) {
    refuse(api, std::string(dtype_name(t)) + " (" + where + ")", v,
           "that layout has no code for it (added in " + kNewDtypeCodes.str() + ")");
  }
}

void check_target_reads(const PrimitiveDef& def, const State& state, const FormatVersion& v, const std::string& api) {
  if (def.name == "Convolution" && v < kConvConstructorOrder) {
    const size_t ks = kConvStrides(), klo = kConvPaddingLo(), khi = kConvPaddingHi();
    auto& strides = state.ints(ks);
    auto& lo = state.ints(klo);
    auto& hi = state.ints(khi);
    bool same = v < kConvHighPadding ? strides == lo : (strides == lo && lo == hi);
    if (!same) {
      refuse(api,
             std::string("Convolution with ") + kConvStrides.field + "=" + value_text(state.values[ks]) + ", " +
                 kConvPaddingLo.field + "=" + value_text(state.values[klo]) + ", " + kConvPaddingHi.field + "=" +
                 value_text(state.values[khi]),
             v,
             "that release's reader passes the strides and paddings to Convolution in another order than it "
             "writes them (fixed in 0.26.2), so it would run other values; only equal strides and paddings "
             "survive");
    }
  }
  if (def.name == "CustomKernel" && v >= kOptionalBug && v < kOptionalFix) {
    const size_t ki = kKernelInitValue();
    auto* init = std::get_if<std::optional<float>>(&state.values.at(ki));
    if (init && init->has_value()) {
      refuse(api, std::string("CustomKernel with ") + kKernelInitValue.field + "=" + value_text(state.values[ki]), v,
             "that release's reader misreads a present init_value (fixed in 0.31.1)");
    }
  }
}

std::vector<Value> from_schema(const PrimitiveDef& def, const FormatVersion& v, const State& state,
                               const std::vector<ArraySpec>& outputs) {
  const Versioned* row = versioned(def);
  if (!row) return state.values;
  const Layout& l = layout_at(*row, v);
  std::vector<Value> out;
  out.reserve(l.order.size());
  for (int k : l.order) {
    if (k >= 0) {
      out.push_back(state.values.at(k));
    } else {
      const Extra& x = l.extras[-k - 1];
      out.push_back(x.derived ? derive_extra(def, state, outputs) : x.write);
    }
  }
  return out;
}

bool implied_field(const PrimitiveDef& def, int k) {
  const Versioned* row = versioned(def);
  return row && std::any_of(row->implied.begin(), row->implied.end(), [&](auto& d) { return d.index == k; });
}

namespace compat {

std::vector<FieldUse> field_uses() {
  std::vector<FieldUse> out;
  for (auto& row : make_table()) {
    for (auto& l : row.layouts) {
      for (auto& n : l.names) out.push_back({row.name, n, layout_where(l), extra_of(l, n) >= 0});
    }
    for (auto& d : row.defaults) out.push_back({row.name, d.field, defaults_where(row)});
    for (auto& d : row.implied) out.push_back({row.name, d.field, implied_where(d)});
  }
  for (auto& lim : kValueLimits) out.push_back({lim.prim, lim.field, limit_where(lim)});
  for (const FieldRef* ref : detail::field_refs()) out.push_back({ref->prim, ref->field, ref->release});
  return out;
}

void check_names() {
  table();  // the layouts, defaults, implied values and every FieldRef
  value_limits();
}

}  // namespace compat

}  // namespace kiln::format
