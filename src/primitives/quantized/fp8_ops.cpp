// to_fp8 / from_fp8: E4M3 float8 codes in uint8, composed of bit operations on the float32 pattern (no
// row of their own: MLX's ConvertFP8 cannot be exported by MLX 0.30.1 either, spec 3.6, and the
// composition runs on every backend). The rounding and saturation are those of the quantized kernels'
// codec (src/backend/cpu/kernels/quantized/quantized_kernels.h), which follows MLX's.
#include <limits>
#include <sstream>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/quantized.h"

namespace kiln {

namespace {

array u32(uint32_t v) { return array(v, uint32); }

}  // namespace

array to_fp8(array x, StreamOrDevice s) {
  if (!issubdtype(x.dtype(), floating)) {
    std::ostringstream msg;
    msg << "[to_fp8] Only real floating types are supported but x.dtype() == " << x.dtype() << ".";
    throw std::invalid_argument(msg.str());
  }
  array f = astype(x, float32, s);
  array bits = view(f, uint32, s);
  array sign = bitwise_and(right_shift(bits, u32(24), s), u32(0x80), s);
  array a = bitwise_and(bits, u32(0x7fffffffu), s);
  // Magnitudes below 2^-6 are subnormal codes in units of 2^-9 (round half to even, as round does).
  array sub = astype(round(multiply(abs(f, s), array(512.0f), s), 0, s), uint32, s);
  // Normal codes: rebias the exponent (127 -> 7) and round the mantissa to 3 bits, ties to even; the
  // sum wraps in uint32 as intended.
  array odd = bitwise_and(right_shift(a, u32(20), s), u32(1), s);
  array normal = right_shift(add(add(a, u32(0xc407ffffu), s), odd, s), u32(20), s);
  array code = where(greater_equal(a, u32(0x43e00000u), s), u32(0x7e),
                     where(less(a, u32(121u << 23), s), sub, normal, s), s);
  return astype(bitwise_or(code, sign, s), uint8, s);
}

array from_fp8(array x, Dtype dtype, StreamOrDevice s) {
  if (x.dtype() != uint8) {
    std::ostringstream msg;
    msg << "[from_fp8] Input must have type uint8 but x.dtype() == " << x.dtype() << ".";
    throw std::invalid_argument(msg.str());
  }
  if (!issubdtype(dtype, floating)) {
    std::ostringstream msg;
    msg << "[from_fp8] Only real floating types are supported but dtype == " << dtype << ".";
    throw std::invalid_argument(msg.str());
  }
  array c = astype(x, uint32, s);
  array e = bitwise_and(right_shift(c, u32(3), s), u32(15), s);
  array m = bitwise_and(c, u32(7), s);
  // A normal code's float32 pattern: exponent e - 7 + 127, the 3 mantissa bits on top of float32's 23.
  array normal = view(bitwise_or(left_shift(add(e, u32(120), s), u32(23), s), left_shift(m, u32(20), s), s), float32, s);
  array subnormal = multiply(astype(m, float32, s), array(1.0f / 512.0f), s);
  array mag = where(equal(e, u32(0), s), subnormal, normal, s);
  mag = where(equal(bitwise_and(c, u32(0x7f), s), u32(0x7f), s), array(std::numeric_limits<float>::quiet_NaN()), mag, s);
  array v = where(not_equal(bitwise_and(c, u32(0x80), s), u32(0), s), negative(mag, s), mag, s);
  return astype(v, dtype, s);
}

}  // namespace kiln
