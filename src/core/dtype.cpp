#include "kiln/dtype.h"

#include <stdexcept>

namespace kiln {

namespace {
constexpr Dtype kAll[Dtype::num_types] = {bool_, uint8, uint16, uint32, uint64, int8, int16,
                                          int32, int64, float16, float32, float64, bfloat16, complex64};
constexpr const char* kNames[Dtype::num_types] = {
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
    "int32", "int64", "float16", "float32", "float64", "bfloat16", "complex64"};

// Appendix A of the format spec, indexed by dtype code.
#define B Dtype::Val::bool_
#define U1 Dtype::Val::uint8
#define U2 Dtype::Val::uint16
#define U4 Dtype::Val::uint32
#define U8 Dtype::Val::uint64
#define I1 Dtype::Val::int8
#define I2 Dtype::Val::int16
#define I4 Dtype::Val::int32
#define I8 Dtype::Val::int64
#define H Dtype::Val::float16
#define F Dtype::Val::float32
#define D Dtype::Val::float64
#define BF Dtype::Val::bfloat16
#define C Dtype::Val::complex64
constexpr Dtype::Val kPromote[14][14] = {
    /* bool */ {B, U1, U2, U4, U8, I1, I2, I4, I8, H, F, D, BF, C},
    /* u8   */ {U1, U1, U2, U4, U8, I2, I2, I4, I8, H, F, D, BF, C},
    /* u16  */ {U2, U2, U2, U4, U8, I4, I4, I4, I8, H, F, D, BF, C},
    /* u32  */ {U4, U4, U4, U4, U8, I8, I8, I8, I8, H, F, D, BF, C},
    /* u64  */ {U8, U8, U8, U8, U8, F, F, F, F, H, F, D, BF, C},
    /* i8   */ {I1, I2, I4, I8, F, I1, I2, I4, I8, H, F, D, BF, C},
    /* i16  */ {I2, I2, I4, I8, F, I2, I2, I4, I8, H, F, D, BF, C},
    /* i32  */ {I4, I4, I4, I8, F, I4, I4, I4, I8, H, F, D, BF, C},
    /* i64  */ {I8, I8, I8, I8, F, I8, I8, I8, I8, H, F, D, BF, C},
    /* f16  */ {H, H, H, H, H, H, H, H, H, H, F, D, F, C},
    /* f32  */ {F, F, F, F, F, F, F, F, F, F, F, D, F, C},
    /* f64  */ {D, D, D, D, D, D, D, D, D, D, D, D, D, C},
    /* bf16 */ {BF, BF, BF, BF, BF, BF, BF, BF, BF, F, F, D, BF, C},
    /* c64  */ {C, C, C, C, C, C, C, C, C, C, C, C, C, C},
};
#undef B
#undef U1
#undef U2
#undef U4
#undef U8
#undef I1
#undef I2
#undef I4
#undef I8
#undef H
#undef F
#undef D
#undef BF
#undef C
}  // namespace

Dtype dtype_from_code(int code) {
  if (code < 0 || code >= Dtype::num_types) {
    throw std::invalid_argument("[dtype] Expected a dtype code in 0..13 but found " + std::to_string(code) + ".");
  }
  return kAll[code];
}

Dtype::Kind kind(Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_: return Dtype::Kind::b;
    case Dtype::Val::uint8:
    case Dtype::Val::uint16:
    case Dtype::Val::uint32:
    case Dtype::Val::uint64: return Dtype::Kind::u;
    case Dtype::Val::int8:
    case Dtype::Val::int16:
    case Dtype::Val::int32:
    case Dtype::Val::int64: return Dtype::Kind::i;
    case Dtype::Val::float16:
    case Dtype::Val::float32:
    case Dtype::Val::float64: return Dtype::Kind::f;
    case Dtype::Val::bfloat16: return Dtype::Kind::V;
    case Dtype::Val::complex64: return Dtype::Kind::c;
  }
  return Dtype::Kind::V;
}

Dtype promote_types(Dtype a, Dtype b) { return dtype_from_code(static_cast<int>(kPromote[a.code()][b.code()])); }

static Dtype::Category category_of(Dtype t) {
  switch (kind(t)) {
    case Dtype::Kind::c: return Dtype::Category::complexfloating;
    case Dtype::Kind::f:
    case Dtype::Kind::V: return Dtype::Category::floating;
    case Dtype::Kind::i: return Dtype::Category::signedinteger;
    case Dtype::Kind::u: return Dtype::Category::unsignedinteger;
    case Dtype::Kind::b: return Dtype::Category::generic;
  }
  return Dtype::Category::generic;
}

bool issubdtype(Dtype a, Dtype b) { return a == b; }
bool issubdtype(Dtype::Category, Dtype) { return false; }
bool issubdtype(Dtype a, Dtype::Category c) {
  if (c == Dtype::Category::generic) return true;
  return issubdtype(category_of(a), c);
}
bool issubdtype(Dtype::Category a, Dtype::Category b) {
  using C = Dtype::Category;
  if (a == b || b == C::generic) return true;
  switch (a) {
    case C::complexfloating:
    case C::floating: return b == C::inexact || b == C::number;
    case C::inexact: return b == C::number;
    case C::signedinteger:
    case C::unsignedinteger: return b == C::integer || b == C::number;
    case C::integer: return b == C::number;
    default: return false;
  }
}

std::string dtype_name(Dtype t) { return kNames[t.code()]; }

Dtype dtype_from_name(const std::string& name) {
  for (int i = 0; i < Dtype::num_types; ++i) {
    if (name == kNames[i]) return kAll[i];
  }
  throw std::invalid_argument("[dtype] Unknown dtype name '" + name + "'.");
}

std::ostream& operator<<(std::ostream& os, Dtype t) { return os << dtype_name(t); }

}  // namespace kiln
