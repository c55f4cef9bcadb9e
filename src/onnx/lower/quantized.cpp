// Quantized rows (src/primitives/quantized/): constant affine 4- and 8-bit weights as ONNX's blockwise
// DequantizeLinear (opset 21) plus the per-group bias; otherwise the packed codes unpacked with integer ops
// (uint64 words, so that 3-, 5- and 6-bit codes that straddle two words come out too), dequantized exactly as MLX
// defines each mode (affine: scale * q + bias; mxfp4 / nvfp4: the E2M1 value times the E8M0 / E4M3 scale;
// mxfp8: the E4M3 value times the E8M0 scale, through lookup tables), then MatMul in float32.
#include <cmath>
#include <limits>

#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

float e4m3(uint8_t c) {
  const float sign = (c & 0x80) ? -1.0f : 1.0f;
  const int e = (c >> 3) & 0xf, m = c & 7;
  if ((c & 0x7f) == 0x7f) return std::nanf("");
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -9);
  return sign * std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
}

// A float32 lookup table initializer.
std::string table_of(Context& c, const std::vector<float>& v) {
  return c.constant(array(v.data(), Shape{static_cast<int32_t>(v.size())}));
}

// The codes (..., R, K) of packed words w (..., R, K * bits / 32), as int64. Code e sits at bit e * bits:
// in word lo = e * bits / 32, shifted by e * bits % 32, and, where it straddles, in word lo + 1.
std::string unpack(Context& c, const Tensor& w, int bits) {
  std::string lo_v, hi_v, sh;
  const Dims words = dim_of(c, w, -1);
  if (words.is_known()) {
    const int64_t nw = words.known[0];
    const int64_t k = nw * 32 / bits;
    std::vector<int64_t> lo(k), hi(k), shift(k);
    for (int64_t e = 0; e < k; ++e) {
      const int64_t pos = e * bits;
      lo[e] = pos / 32;
      hi[e] = std::min(lo[e] + 1, nw - 1);
      shift[e] = pos % 32;
    }
    lo_v = c.ints(lo);
    hi_v = c.ints(hi);
    sh = c.constant(astype(array(shift.data(), Shape{static_cast<int32_t>(k)}), uint64));
  } else {
    // The same positions at run time (a shapeless function's words per row are not fixed).
    std::string nw = scalar_of(c, words);
    std::string k = c.op("Div", {c.op("Mul", {nw, c.ints({32}, true)}), c.ints({bits}, true)});
    std::string pos = c.op("Mul", {c.op("Range", {c.ints({0}, true), k, c.ints({1}, true)}), c.ints({bits}, true)});
    lo_v = c.op("Div", {pos, c.ints({32}, true)});
    hi_v = c.op("Min", {c.op("Add", {lo_v, c.ints({1}, true)}), c.op("Sub", {nw, c.ints({1}, true)})});
    sh = c.cast(c.op("Mod", {pos, c.ints({32}, true)}), uint64);
  }
  std::string w64 = c.cast(w.name, uint64);
  std::string a = c.op("Gather", {w64, lo_v}, {{"axis", -1}});
  std::string b = c.op("Gather", {w64, hi_v}, {{"axis", -1}});
  std::string two = c.op("BitShift", {b, c.constant(astype(array(static_cast<int64_t>(32), int64), uint64))},
                         {{"direction", "LEFT"}});
  std::string both = c.op("BitwiseOr", {a, two});
  std::string v = c.op("BitShift", {both, sh}, {{"direction", "RIGHT"}});
  std::string mask = c.constant(astype(array(static_cast<int64_t>((1 << bits) - 1), int64), uint64));
  return c.cast(c.op("BitwiseAnd", {v, mask}), int64);
}

// A per-group tensor v (..., R, G), of t's shape, repeated to the elements (..., R, G * gs).
std::string per_element(Context& c, const std::string& v, const Tensor& t, int gs) {
  std::string r = c.op("Unsqueeze", {v, c.ints({-1})});
  r = c.op("Expand", {r, value_of(c, cat_dims(c, {dims_of(c, t), fixed_dims({gs})}))});
  return reshape_to(c, r, cat_dims(c, {dims_of(c, t, 0, -1), dims_op(c, "Mul", dim_of(c, t, -1), fixed_dims({gs}))}));
}

struct Quant {
  int gs, bits, mode;
};

// The dequantized weights (..., R, K) in float32 from w, scales and (affine) biases.
std::string dequantize(Context& c, const Quant& q, const Tensor& w, const Tensor& scales, const Tensor* biases) {
  c.need_opset(18, "BitwiseAnd / BitwiseOr");
  if (q.mode == 0 && (q.bits < 2 || q.bits > 8 || q.bits == 7)) c.refuse("affine quantization with " + std::to_string(q.bits) + " bits");
  if (q.mode != 0 && ((q.mode == 2) != (q.bits == 8) || (q.bits != 4 && q.bits != 8))) {
    c.refuse("quantization mode " + std::to_string(q.mode) + " with " + std::to_string(q.bits) + " bits");
  }
  if (q.mode < 0 || q.mode > 3) c.refuse("unknown quantization mode " + std::to_string(q.mode));
  if (q.mode == 0 && (q.bits == 4 || q.bits == 8) && c.opset() >= 21) {
    if (const array* packed = c.constant_value(w.name)) {
      // Constant 4- or 8-bit weights: ONNX's blockwise DequantizeLinear (opset 21) on the packed codes
      // themselves. MLX packs codes into little-endian uint32 words from the low bits up, so the words'
      // bytes are already ONNX's UINT4 layout (two per byte, the first in the low nibble) or UINT8 array.
      std::vector<int64_t> codes_dims = dims(w.shape);
      codes_dims.back() = codes_dims.back() * 32 / q.bits;
      std::string codes = c.raw_initializer(q.bits == 4 ? 21 : 2, codes_dims, *packed);
      std::string s = scales.dtype == float32 ? scales.name : c.cast(scales.name, float32);
      std::string deq = c.op("DequantizeLinear", {codes, s}, {{"axis", w.ndim() - 1}, {"block_size", q.gs}});
      std::string b = per_element(c, biases->dtype == float32 ? biases->name : c.cast(biases->name, float32),
                                  *biases, q.gs);
      return c.op("Add", {deq, b});
    }
  }
  std::string codes = unpack(c, w, q.bits);
  if (q.mode == 0) {
    std::string s = per_element(c, scales.dtype == float32 ? scales.name : c.cast(scales.name, float32), scales, q.gs);
    std::string b = per_element(c, biases->dtype == float32 ? biases->name : c.cast(biases->name, float32),
                                *biases, q.gs);
    return c.op("Add", {c.op("Mul", {s, c.cast(codes, float32)}), b});
  }
  std::vector<float> values;
  if (q.bits == 8) {
    for (int i = 0; i < 256; ++i) values.push_back(e4m3(static_cast<uint8_t>(i)));
  } else {
    values = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  }
  std::string v = c.op("Gather", {table_of(c, values), codes}, {{"axis", 0}});
  std::vector<float> st;
  for (int i = 0; i < 256; ++i) {
    st.push_back(q.mode == 3 ? e4m3(static_cast<uint8_t>(i)) : std::ldexp(1.0f, i - 127));
  }
  std::string sv = c.op("Gather", {table_of(c, st), c.cast(scales.name, int64)}, {{"axis", 0}});
  return c.op("Mul", {v, per_element(c, sv, scales, q.gs)});
}

Quant quant_args(Context& c) { return {c.int_arg(0), c.int_arg(1), c.int_arg(2)}; }

// x @ w.T for constant affine 4-bit weights w (N, K) as ONNX Runtime's com.microsoft.MatMulNBits
// (OnnxOptions::matmul_nbits): B is MLX's packed words as bytes (N, K / gs, gs / 2), the same nibble
// order; it dequantizes (q - zero_point) * scale, so the zero points are -bias / scale in float32 (MLX's
// scale * q + bias up to rounding). False when the case does not fit (the caller lowers it otherwise).
bool matmul_nbits(Context& c, const Quant& q, bool transpose) {
  if (!c.matmul_nbits() || q.mode != 0 || q.bits != 4 || !transpose) return false;
  const Tensor &x = c.in.at(0), &tw = c.in.at(1), &ts = c.in.at(2), &tb = c.in.at(3);
  const array* w = c.constant_value(tw.name);
  const array* s = c.constant_value(ts.name);
  const array* b = c.constant_value(tb.name);
  if (!w || !s || !b || tw.ndim() != 2 || q.gs < 16 || (q.gs & (q.gs - 1)) != 0) return false;
  const int64_t N = tw.shape[0], K = tw.shape[1] * 8, blocks = K / q.gs;
  array s32 = astype(*s, float32);
  if (!all(not_equal(s32, array(0.0f))).item<bool>()) return false;
  array zp = negative(divide(astype(*b, float32), s32));
  std::string B = c.raw_initializer(onnx_type(uint8), {N, blocks, q.gs / 2}, *w);
  std::string xs = x.dtype == float32 ? x.name : c.cast(x.name, float32);
  std::string y = c.fresh();
  c.node("MatMulNBits", {xs, B, c.constant(reshape(s32, {static_cast<int32_t>(N * blocks)})),
                          c.constant(reshape(zp, {static_cast<int32_t>(N * blocks)}))},
         {y}, {{"K", K}, {"N", N}, {"bits", int64_t(4)}, {"block_size", static_cast<int64_t>(q.gs)}},
         "com.microsoft");
  store(c, 0, y, float32);
  return true;
}

void quantized_matmul(Context& c) {
  const Quant q = quant_args(c);
  const bool transpose = c.bool_arg(3);
  if (matmul_nbits(c, q, transpose)) return;
  const Tensor* biases = q.mode == 0 ? &c.in.at(3) : nullptr;
  std::string w = dequantize(c, q, c.in.at(1), c.in.at(2), biases);
  const int nd = c.in[1].ndim();
  if (transpose) {
    std::vector<int64_t> perm;
    for (int d = 0; d < nd - 2; ++d) perm.push_back(d);
    perm.push_back(nd - 1);
    perm.push_back(nd - 2);
    w = c.op("Transpose", {w}, {{"perm", perm}});
  }
  const Tensor& x = c.in.at(0);
  std::string xs = x.dtype == float32 ? x.name : c.cast(x.name, float32);
  store(c, 0, c.op("MatMul", {xs, w}), float32);
}

void gather_qmm(Context& c) {
  const Quant q = quant_args(c);
  const bool transpose = c.bool_arg(3);
  const bool affine = q.mode == 0;
  const Tensor& x = c.in.at(0);
  const Tensor& tw = c.in.at(1);
  const Tensor& lhs = c.in.at(affine ? 4 : 3);
  const Tensor& rhs = c.in.at(affine ? 5 : 4);
  std::string w = dequantize(c, q, tw, c.in.at(2), affine ? &c.in.at(3) : nullptr);
  const Dims rows = dim_of(c, tw, -2), k = dims_op(c, "Div", dims_op(c, "Mul", dim_of(c, tw, -1), fixed_dims({32})),
                                                    fixed_dims({q.bits}));
  w = c.op("Reshape", {w, value_of(c, cat_dims(c, {fixed_dims({-1}), rows, k}))});
  if (transpose) w = c.op("Transpose", {w}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  w = c.op("Gather", {w, c.cast(rhs.name, int64)}, {{"axis", 0}});
  std::string xs = x.dtype == float32 ? x.name : c.cast(x.name, float32);
  xs = c.op("Reshape", {xs, value_of(c, cat_dims(c, {fixed_dims({-1}), dims_of(c, x, -2)}))});
  xs = c.op("Gather", {xs, c.cast(lhs.name, int64)}, {{"axis", 0}});
  store(c, 0, c.op("MatMul", {xs, w}), float32);
}

// Affine quantization with MLX's arithmetic step for step in float32 (each group's min and max, the
// scale snapped so that the edge value is exact, codes rounded half to even and clamped), so the codes,
// scales and biases are MLX's bit for bit; the codes packed low bits first.
void affine_quantize(Context& c, const Quant& q) {
  const Tensor& w = c.in.at(0);
  if (w.dtype == float64) c.refuse("quantizing float64 (MLX computes it in double)");
  if (32 % q.bits != 0) c.refuse("quantizing to " + std::to_string(q.bits) + " bits (codes that straddle words)");
  const Dims lead = dims_of(c, w, 0, -1), last = dim_of(c, w, -1);
  const Dims groups = dims_op(c, "Div", last, fixed_dims({q.gs}));
  std::string x = reshape_to(c, w.dtype == float32 ? w.name : c.cast(w.name, float32),
                             cat_dims(c, {lead, groups, fixed_dims({q.gs})}));
  // Each group's max and min skip NaN (MLX's std::max / std::min loop keeps the running value when it
  // meets one; an all-NaN group has max -inf and min +inf). ONNX leaves NaN in ReduceMax / ReduceMin
  // unspecified and ONNX Runtime's result depends on where it sits, so NaN is replaced first by the
  // value the reduction ignores.
  const std::string nan = c.op("IsNaN", {x});
  const float inf = std::numeric_limits<float>::infinity();
  auto red = [&](const char* op, float skip) {
    return c.op(op, {c.op("Where", {nan, c.scalar(skip, float32), x}), c.ints({-1})}, {{"keepdims", 1}});
  };
  std::string wmax = red("ReduceMax", -inf), wmin = red("ReduceMin", inf);
  const std::string zero = c.scalar(0, float32), n_bins = c.scalar((1 << q.bits) - 1, float32);
  std::string mask = c.op("Greater", {c.op("Abs", {wmin}), c.op("Abs", {wmax})});
  std::string scale = c.op("Max", {c.op("Div", {c.op("Sub", {wmax, wmin}), n_bins}), c.scalar(1e-7f, float32)});
  scale = c.op("Where", {mask, scale, c.op("Neg", {scale})});
  std::string edge = c.op("Where", {mask, wmin, wmax});
  std::string q0 = c.op("Round", {c.op("Div", {edge, scale})});
  std::string nz = c.op("Not", {c.op("Equal", {q0, zero})});
  scale = c.op("Where", {nz, c.op("Div", {edge, q0}), scale});
  std::string bias = c.op("Where", {nz, edge, zero});
  std::string codes = c.op("Round", {c.op("Div", {c.op("Sub", {x, bias}), scale})});
  codes = c.op("Min", {c.op("Max", {codes, zero}), n_bins});
  codes = c.op("Where", {c.op("IsNaN", {codes}), zero, codes});
  // Pack: (..., K / per, per) codes times 2^(bits * j), summed (the bit fields do not overlap).
  const int per = 32 / q.bits;
  std::vector<int64_t> weights(per);
  for (int j = 0; j < per; ++j) weights[j] = int64_t(1) << (q.bits * j);
  std::string ci = reshape_to(c, c.cast(codes, int64),
                              cat_dims(c, {lead, dims_op(c, "Div", last, fixed_dims({per})), fixed_dims({per})}));
  std::string word = c.op("ReduceSum", {c.op("Mul", {ci, c.ints(weights)}), c.ints({-1})}, {{"keepdims", 0}});
  c.op_to(0, "Cast", {word}, {{"to", onnx_type(uint32)}});
  const Dims gshape = cat_dims(c, {lead, groups});
  store(c, 1, reshape_to(c, scale, gshape), float32);
  store(c, 2, reshape_to(c, bias, gshape), float32);
}

void quantize(Context& c) {
  const Quant q = quant_args(c);
  if (!c.bool_arg(3)) {
    if (q.mode != 0) c.refuse("quantizing to the mxfp4 / mxfp8 / nvfp4 modes (dequantizing them is lowered)");
    affine_quantize(c, q);
    return;
  }
  const Tensor* biases = q.mode == 0 ? &c.in.at(2) : nullptr;
  store(c, 0, dequantize(c, q, c.in.at(0), c.in.at(1), biases), float32);
}

}  // namespace

void register_quantized_onnx(LoweringTable& table) {
  table.add({{"QuantizedMatmul", quantized_matmul}, {"GatherQMM", gather_qmm}, {"Quantize", quantize}});
  table.polymorphic({"QuantizedMatmul", "GatherQMM", "Quantize"});
}

}  // namespace kiln::onnx_export
