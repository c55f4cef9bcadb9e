// src/format/compat/: what each MLX release (0.22.0 - 0.32.4) does differently with the file and with
// a primitive's state; the facts name state fields by name, resolved against the registry on first use
// (fields.h).
//
// This file: format versions. Every layout decision that depends on the MLX version lives here (spec
// section 5), so that the codec, reader and writer only ask. A layout is named by the MLX release that
// writes it; its features follow from comparisons with the releases that introduced each change, so
// versions between two known releases with the same layout need no entry of their own.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::format {

struct FormatVersion {
  int major = 0;
  int minor = 30;
  int patch = 1;
  auto operator<=>(const FormatVersion&) const = default;
  std::string str() const;
  // The leading "major.minor.patch" of a header string ("0.30.1", "0.30.1.dev2025+abc", ...);
  // returns false when the text does not start with three numbers.
  static bool parse(const std::string& text, FormatVersion& out);
};

inline constexpr FormatVersion kV0_22_0{0, 22, 0};  // the first release with export_function
inline constexpr FormatVersion kV0_30_1{0, 30, 1};
inline constexpr FormatVersion kDefaultVersion = kV0_30_1;

// The release versions kiln reads and writes, oldest first ("0.22.0", ..., "0.30.1", ...).
std::vector<std::string> supported_versions();
// The newest release whose layout kiln knows.
FormatVersion newest_known();

// A version given by a user for writing ("0.32.1"): it must be a supported release, or lie between
// two of them (then it has their layout). Throws "[<api>] ..." naming the version otherwise.
FormatVersion target_version(const std::string& text, const std::string& api);

// The layout of a file whose header says `header`. A release kiln knows (or one between two known
// releases) gives itself; a version newer than every known release is refused with an error naming
// it; an older one (before export existed) too. A header that is not a version at all (MLX never
// checks it) is decoded with the default layout.
FormatVersion reader_layout(const std::string& header);

// ---- layout features ----

// Header: whether the metadata string H4 follows the shapeless flag (from 0.32.1).
bool header_has_metadata(const FormatVersion& v);
// Dtype codes (spec 5.0.2 A1): before 0.23.0 code 11 is bfloat16 and 12 complex64, and float64 has none.
int32_t dtype_code(Dtype t, const FormatVersion& v);  // -1 when `v` has no code for `t`
std::optional<Dtype> dtype_of_code(int32_t code, const FormatVersion& v);

// The primitive's name on disk at `v` ("AffineQuantize" for Quantize before 0.29.0), and the
// registry row of an on-disk name (null when `v`'s table has no such entry).
std::string disk_name(const PrimitiveDef& def, const FormatVersion& v);
const PrimitiveDef* find_disk_name(const std::string& name, const FormatVersion& v);
// The first release whose table lists the primitive (kV0_22_0 for the original entries).
FormatVersion serializable_since(const PrimitiveDef& def);

// The on-disk state fields of `def` at `v` (the registry schema at 0.30.1).
const std::vector<Field>& disk_fields(const PrimitiveDef& def, const FormatVersion& v);

// Decoded on-disk values -> the registry state. `inputs`/`outputs` are the node's recorded specs
// (old Convolution layouts keep the high padding only in the output shape). Throws
// std::invalid_argument "[import_function] ..." when a value has no kiln representation.
// `mlx_rules`: the state MLX `v` itself would build (before 0.26.2 its reader passed Convolution's
// fields to the constructor in another order, spec 5.0.2 A8 / A11).
State to_schema(const PrimitiveDef& def, const FormatVersion& v, std::vector<Value> disk,
                const std::vector<ArraySpec>& inputs, const std::vector<ArraySpec>& outputs, bool mlx_rules = false);
// SliceUpdate with a reduce type (MLX 0.31.2 on, for x.at[a:b].add(y) and the like): kiln's SliceUpdate
// only replaces, so the reader expands such a node into Slice -> combine -> SliceUpdate, which every
// layout can express. Returns the registry name of the combining primitive (Add, Multiply, Maximum,
// Minimum) and marks the on-disk value as a plain update; empty for any other node.
std::string reduce_expansion(const PrimitiveDef& def, const FormatVersion& v, std::vector<Value>& disk);

// The registry state -> on-disk values at `v`, in the order MLX `v` writes them. Registry fields the
// layout lacks are left out: check_expressible (called by the writer first) refuses when that loses
// a value.
// `outputs`: the node's specs, from which derived disk-only fields are computed (FFT's odd_out).
std::vector<Value> from_schema(const PrimitiveDef& def, const FormatVersion& v, const State& state,
                               const std::vector<ArraySpec>& outputs = {});
// Whether registry field `k` is one no layout stores, its value implied by the release (DivMod's
// `floor`, MLX's rounding since 0.32.2); such fields are not part of MLX's state.
bool implied_field(const PrimitiveDef& def, int k);

// Whether `v` can express this node (its name in `v`'s table, its state values encodable). Throws
// std::invalid_argument "[<api>] ..." naming the primitive and the version when not.
void check_expressible(const PrimitiveDef& def, const State& state, const FormatVersion& v, const std::string& api);
// Whether MLX `v`'s own reader rebuilds this node as written: before 0.26.2 it passes Convolution's
// strides and paddings to the constructor in another order than it writes them (so only equal values
// survive), and from 0.30.0 to 0.31.0 it misreads a CustomKernel's present init_value (spec 5.1 B2).
// Throws "[<api>] ... cannot be written for MLX <v>: ..." naming the primitive when it does not.
void check_target_reads(const PrimitiveDef& def, const State& state, const FormatVersion& v, const std::string& api);
// Same for a dtype anywhere in a record; `where` says where it was found ("the output of Add").
void check_dtype_expressible(Dtype t, const FormatVersion& v, const std::string& api, const std::string& where);

}  // namespace kiln::format
