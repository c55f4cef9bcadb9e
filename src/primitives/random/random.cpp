// RandomBits' row and the kiln::random ops built on it (the threefry kernel, bit-exact with MLX:
// src/backend/cpu/kernels/random/random.cpp).
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>

#include "kiln/ops/elementwise.h"
#include "kiln/linalg.h"
#include "kiln/ops/index.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "kiln/random.h"
#include "primitives/common.h"

namespace kiln {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

Dtype bits_dtype(int width, const char* api) {
  switch (width) {
    case 4: return uint32;
    case 2: return uint16;
    case 1: return uint8;
    default:
      fail(std::string("[") + api + "] Bit width must be in {1, 2, 4} but got " + std::to_string(width) + ".");
  }
}

// Keys: uint32 pairs, (..., 2) in row-major order; the output is split evenly between them.
std::vector<ArraySpec> random_bits_infer(const State& st, const std::vector<ArraySpec>& in) {
  const Shape& shape = st.ints(0);
  const Dtype dt = bits_dtype(st.i(1), "RandomBits");
  const ArraySpec& k = in[0];
  if (k.dtype != uint32) fail("[RandomBits] Expected key type uint32 but received " + dtype_name(k.dtype) + ".");
  const size_t ksize = shape_size(k.shape, "RandomBits");
  if (k.shape.empty() || k.shape.back() != 2) {
    fail("[RandomBits] Expected keys of shape (..., 2) but received " + detail::shape_str(k.shape) + ".");
  }
  const size_t n = shape_size(shape, "RandomBits");
  const size_t nk = ksize / 2;
  if ((nk == 0 && n != 0) || (nk != 0 && n % nk != 0)) {
    fail("[RandomBits] Output shape " + detail::shape_str(shape) + " cannot be split between " + std::to_string(nk) +
         " keys.");
  }
  return {{shape, dt}};
}

}  // namespace

namespace primitives {
void register_random() {
  registry::define(detail::row("RandomBits", 1, {{"shape", FieldType::ShapeF}, {"width", FieldType::Int}},
                               random_bits_infer, {.shapeless = false}));
}
}  // namespace primitives

// ---------------------------------------------------------------------------------------------
// Ops

namespace random {

namespace {
std::mutex& key_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

KeySequence::KeySequence(uint64_t s) : key_(key(s)) {}

void KeySequence::seed(uint64_t s) {
  std::lock_guard<std::mutex> lock(key_mutex());
  key_ = key(s);
}

array KeySequence::next() {
  std::lock_guard<std::mutex> lock(key_mutex());
  auto [k, sub] = split(key_);
  key_ = k;
  return sub;
}

KeySequence& KeySequence::default_() {
  static KeySequence ks(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count()));
  return ks;
}

array key(uint64_t s) {
  return array({static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(s)});
}

void seed(uint64_t s) { KeySequence::default_().seed(s); }

array bits(const Shape& shape, int width, const std::optional<array>& key_in, StreamOrDevice s) {
  array k = key_in ? *key_in : KeySequence::default_().next();
  if (k.dtype() != uint32) fail("[bits] Expected key type uint32 but received " + dtype_name(k.dtype()) + ".");
  if (k.shape() != Shape{2}) fail("[bits] Expected key shape (2) but received " + detail::shape_str(k.shape()) + ".");
  const Dtype dt = bits_dtype(width, "bits");
  shape_size(shape, "bits");
  static const PrimitiveDef& d = detail::def("RandomBits");
  return make_array(d, State{std::vector<int32_t>(shape), int32_t(width)}, {k}, {{shape, dt}}, to_stream(s));
}

std::pair<array, array> split(const array& key, StreamOrDevice s) {
  auto parts = kiln::split(random::split(key, 2, s), 2, s);
  return {reshape(parts[0], {2}, s), reshape(parts[1], {2}, s)};
}

array split(const array& key, int num, StreamOrDevice s) { return bits({num, 2}, 4, key, s); }

namespace {
// The largest value below 1 of a 16-bit float type, as a float32 (uniform's upper clamp).
template <typename T>
float below_one() {
  T one(1.0f);
  return static_cast<float>(T::from_bits(static_cast<uint16_t>(one.bits - 1)));
}
}  // namespace

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype, const std::optional<array>& key,
              StreamOrDevice s) {
  if (!is_floating_point(dtype)) {
    fail("[uniform] Can only generate uniform numbers with real floating point type.");
  }
  array lo = astype(low, dtype, s);
  array hi = astype(high, dtype, s);
  array range = subtract(hi, lo, s);
  Shape out_shape = broadcast_shapes(shape, range.shape());
  if (out_shape != shape) {
    fail("[uniform] Cannot generate random values of shape " + detail::shape_str(shape) +
         " from broadcasted shape " + detail::shape_str(out_shape) + ".");
  }
  // Samples lie in [0, largest float below 1], so the result stays below `high`.
  float upper_v;
  if (dtype == float16) upper_v = below_one<float16_t>();
  else if (dtype == bfloat16) upper_v = below_one<bfloat16_t>();
  else if (dtype == float32) upper_v = std::nextafter(1.0f, 0.0f);
  else fail("[uniform] Unsupported type.");
  array upper(upper_v, float32);
  array maxval(static_cast<float>(std::numeric_limits<uint32_t>::max()), float32);
  array u = divide(bits(shape, 4, key, s), maxval, s);
  u = astype(minimum(u, upper, s), dtype, s);
  return add(multiply(range, u, s), lo, s);
}

array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  return uniform(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, s);
}

array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc, const std::optional<array>& scale,
             const std::optional<array>& key, StreamOrDevice s) {
  array low(std::nextafter(-1.0f, 0.0f), float32);
  array high(1.0f, float32);
  if (dtype == complex64) {
    // Real and imaginary parts from one uniform draw of shape + (2,), viewed as complex.
    Shape sh = shape;
    sh.push_back(2);
    array z = erfinv(uniform(low, high, sh, float32, key, s), s);
    z = squeeze(view(z, complex64, s), -1, s);
    if (scale) z = multiply(*scale, z, s);
    if (loc) z = add(*loc, z, s);
    return z;
  }
  if (!is_floating_point(dtype)) fail("[normal] Can only generate uniform numbers with floating point type.");
  array samples = uniform(low, high, shape, float32, key, s);
  array applied_scale(std::sqrt(2.0), dtype);
  if (scale) applied_scale = multiply(applied_scale, astype(*scale, dtype, s), s);
  samples = astype(erfinv(samples, s), dtype, s);
  samples = multiply(applied_scale, samples, s);
  if (loc) samples = add(astype(*loc, dtype, s), samples, s);
  return samples;
}

array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const std::optional<array>& key, StreamOrDevice s) {
  if (dtype != float32) fail("[multivariate_normal] dtype must be float32.");
  if (mean.ndim() < 1) fail("[multivariate_normal] mean must have at least one dimension.");
  if (cov.ndim() < 2) fail("[multivariate_normal] cov must have at least two dimensions.");
  const int n = mean.shape(-1);
  if (cov.shape(-1) != cov.shape(-2)) fail("[multivariate_normal] last two dimensions of cov must be equal.");
  if (n != cov.shape(-1)) fail("[multivariate_normal] mean and cov must have compatible shapes.");
  Shape out_shape = broadcast_shapes(Shape(cov.shape().begin(), cov.shape().end() - 2),
                                     Shape(mean.shape().begin(), mean.shape().end() - 1));
  out_shape = broadcast_shapes(out_shape, shape);
  out_shape.push_back(n);
  // A square root of cov from its SVD (U diag(sqrt(S)) Vt), applied to standard normal samples.
  auto usv = linalg::svd(astype(cov, float32, s), true, s);
  array root = astype(matmul(multiply(usv[0], expand_dims(sqrt(usv[1], s), -2, s), s), usv[2], s), dtype, s);
  array z = normal(out_shape, dtype, 0.0f, 1.0f, key, s);
  array scaled = squeeze(matmul(expand_dims(z, -2, s), root, s), -2, s);
  return add(mean, scaled, s);
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype, const std::optional<array>& key,
              StreamOrDevice s) {
  if (is_inexact(dtype)) fail("[randint] randint only accepts integer dtypes and bool.");
  array u = uniform(low, high, shape, float32, key, s);
  return astype(maximum(u, low, s), dtype, s);
}

array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(p.dtype())) fail("[bernoulli] bernoulli probability `p` must be a float type.");
  // p scaled to [0, just above UINT32_MAX]: p >= 1 gives all true, p <= 0 all false.
  array upper(std::nextafter(static_cast<float>(std::numeric_limits<uint32_t>::max()),
                             std::numeric_limits<float>::max()),
              float32);
  array res = less(bits(shape, key, s), multiply(p, upper, s), s);
  if (res.shape() != shape) fail("[bernoulli] shape of `p` is incompatible with argument `shape`.");
  return res;
}

array bernoulli(const array& p, const std::optional<array>& key, StreamOrDevice s) {
  return bernoulli(p, p.shape(), key, s);
}

array bernoulli(const std::optional<array>& key, StreamOrDevice s) { return bernoulli(array(0.5f), key, s); }

array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype,
                       const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating_point(dtype)) fail("[trunc_normal] trunc_normal only accepts floating point dtypes.");
  // Inverse-CDF sampling between the bounds' CDF values, then clipped (rounding may step outside).
  array sqrt2(std::sqrt(2.0), dtype);
  array lo = astype(lower, dtype, s);
  array hi = astype(upper, dtype, s);
  array a = erf(divide(lo, sqrt2, s), s);
  array b = erf(divide(hi, sqrt2, s), s);
  array u = uniform(a, b, shape, dtype, key, s);
  array out = multiply(sqrt2, erfinv(u, s), s);
  return maximum(minimum(hi, out, s), lo, s);
}

array truncated_normal(const array& lower, const array& upper, Dtype dtype, const std::optional<array>& key,
                       StreamOrDevice s) {
  return truncated_normal(lower, upper, broadcast_shapes(lower.shape(), upper.shape()), dtype, key, s);
}

array gumbel(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  return negative(log(negative(log(uniform(shape, dtype, key, s), s), s), s), s);
}

namespace {

int categorical_axis(int axis, int ndim) {
  int ax = axis < 0 ? axis + ndim : axis;
  if (ax < 0 || ax >= ndim) {
    fail("[categorical] Invalid axis " + std::to_string(axis) + " for logits with " + std::to_string(ndim) +
         " dimensions.");
  }
  return ax;
}

// Gumbel-max: argmax over the category axis of logits plus Gumbel noise of the sample shape.
array categorical_impl(const array& logits, int axis, const Shape& shape, const std::optional<array>& key,
                       StreamOrDevice s) {
  Shape gshape = shape;
  const int offset = axis + static_cast<int>(shape.size()) - static_cast<int>(logits.ndim()) + 1;
  gshape.insert(gshape.begin() + offset, logits.shape()[axis]);
  array g = gumbel(gshape, float32, key, s);
  return argmax(add(g, logits, s), offset, false, s);
}

}  // namespace

array categorical(const array& logits, int axis, const Shape& shape, const std::optional<array>& key,
                  StreamOrDevice s) {
  axis = categorical_axis(axis, static_cast<int>(logits.ndim()));
  Shape reduced = logits.shape();
  reduced.erase(reduced.begin() + axis);
  if (broadcast_shapes(shape, reduced) != shape) {
    fail("[categorical] Requested shape " + detail::shape_str(shape) +
         " is not broadcast compatible with reduced logits shape" + detail::shape_str(reduced) + ".");
  }
  return categorical_impl(logits, axis, shape, key, s);
}

array categorical(const array& logits_in, int axis, int num_samples, const std::optional<array>& key,
                  StreamOrDevice s) {
  axis = categorical_axis(axis, static_cast<int>(logits_in.ndim()));
  array logits = expand_dims(logits_in, -1, s);
  Shape shape = logits.shape();
  shape.erase(shape.begin() + axis);
  shape.back() = num_samples;
  return categorical_impl(logits, axis, shape, key, s);
}

array categorical(const array& logits, int axis, const std::optional<array>& key, StreamOrDevice s) {
  axis = categorical_axis(axis, static_cast<int>(logits.ndim()));
  Shape shape = logits.shape();
  shape.erase(shape.begin() + axis);
  return categorical_impl(logits, axis, shape, key, s);
}

array laplace(const Shape& shape, Dtype dtype, float loc, float scale, const std::optional<array>& key,
              StreamOrDevice s) {
  if (!is_floating_point(dtype)) fail("[laplace] Can only generate uniform numbers with realfloating point type.");
  array low(std::nextafter(-1.0f, 0.0f), float32);
  array high(1.0f, float32);
  array u = uniform(low, high, shape, float32, key, s);
  // Inverse CDF: sign(u) * log(1 - |u|).
  array samples = multiply(sign(u, s), log1p(multiply(array(-1.0f, dtype), abs(u, s), s), s), s);
  samples = astype(samples, dtype, s);
  if (scale != 1.0f) samples = multiply(array(scale, dtype), samples, s);
  if (loc != 0.0f) samples = add(array(loc, dtype), samples, s);
  return samples;
}

array permutation(const array& x, int axis, const std::optional<array>& key, StreamOrDevice s) {
  return take(x, permutation(x.shape(axis), key, s), axis, s);
}

array permutation(int x, const std::optional<array>& key, StreamOrDevice s) {
  return argsort(bits({x}, key, s), s);
}

}  // namespace random

}  // namespace kiln
