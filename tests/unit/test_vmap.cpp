// vmap (include/kiln/vmap.h) and the batching rules (src/primitives/vmap_rules.h).
//
// VmapCase.*: one case per row with a batching rule, in a table keyed by the row's name. Each case builds
// its primitive from unbatched example inputs (the test checks that the function's graph holds that
// row), then runs vmap over several in_axes / out_axes combinations (batch axis first, last, in the
// middle, each input unmapped in turn) and compares with a loop over the batch (the stack of
// per-example results). VmapCoverage fails when a row has no rule and is not in kNoRule, when kNoRule
// goes stale, or when a row with a rule has no case.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <unordered_set>

#include "kiln/kiln.h"
#include "primitives/vmap_rules.h"
#include "unit/test_export_util.h"
#include "unit/test_util.h"

namespace {

using namespace kiln;
using test_util::message_of;
using Fn = std::function<std::vector<array>(const std::vector<array>&)>;
using Gen = std::function<array()>;

// ---- example inputs (each call a fresh draw) ----

std::mt19937& rng() {
  static std::mt19937 g(1234);
  return g;
}
array F(const Shape& s, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(shape_size(s));
  for (auto& x : v) x = d(rng());
  return array(v, s);
}
array I(const Shape& s, int lo, int hi, Dtype t = int32) {
  std::uniform_int_distribution<int> d(lo, hi - 1);
  std::vector<int32_t> v(shape_size(s));
  for (auto& x : v) x = d(rng());
  array a = astype(array(v, s), t);
  a.eval();
  return a;
}
array Bo(const Shape& s) { return astype(I(s, 0, 2), bool_); }
array C(const Shape& s) {  // complex64 with random real and imaginary parts
  Shape t = s;
  t.back() *= 2;
  array a = contiguous(view(F(t), complex64));
  a.eval();
  return a;
}
array SPD(int n) {
  array a = F({n, n});
  array m = add(matmul(a, transpose(a)), multiply(eye(n), array(static_cast<float>(n))));
  m.eval();
  return m;
}
Gen f(Shape s, float lo = -1.f, float hi = 1.f) {
  return [=] { return F(s, lo, hi); };
}
Gen ints(Shape s, int lo, int hi, Dtype t = int32) {
  return [=] { return I(s, lo, hi, t); };
}
Gen bools(Shape s) {
  return [=] { return Bo(s); };
}

struct Case {
  std::string primitive;
  std::vector<Gen> inputs;
  Fn fn;
  double rtol = 1e-4, atol = 1e-5;
};

Fn one(std::function<array(const array&)> g) {
  return [g](const std::vector<array>& x) { return std::vector<array>{g(x[0])}; };
}
Fn two(std::function<array(const array&, const array&)> g) {
  return [g](const std::vector<array>& x) { return std::vector<array>{g(x[0], x[1])}; };
}
Fn three(std::function<array(const array&, const array&, const array&)> g) {
  return [g](const std::vector<array>& x) { return std::vector<array>{g(x[0], x[1], x[2])}; };
}

const Shape kS{2, 3, 4};

std::vector<Case> cases() {
  std::vector<Case> cs;
  auto unary = [&](const char* name, std::function<array(const array&)> g, Gen in = f(kS)) {
    cs.push_back({name, {in}, one(g)});
  };
  auto binary = [&](const char* name, std::function<array(const array&, const array&)> g, Gen a = f(kS),
                    Gen b = f({4})) { cs.push_back({name, {a, b}, two(g)}); };
  // element-wise
  unary("AsType", [](const array& x) { return astype(x, int32); }, f(kS, -5, 5));
  unary("View", [](const array& x) { return view(x, int8); });
  unary("Copy", [](const array& x) { return copy(x); });
  unary("StopGradient", [](const array& x) { return stop_gradient(x); });
  unary("Abs", [](const array& x) { return abs(x); });
  unary("Negative", [](const array& x) { return negative(x); });
  unary("Sign", [](const array& x) { return sign(x); });
  unary("Square", [](const array& x) { return square(x); });
  unary("Floor", [](const array& x) { return floor(x); }, f(kS, -3, 3));
  unary("Ceil", [](const array& x) { return ceil(x); }, f(kS, -3, 3));
  unary("Round", [](const array& x) { return round(x); }, f(kS, -3, 3));
  unary("LogicalNot", [](const array& x) { return logical_not(x); }, bools(kS));
  unary("BitwiseInvert", [](const array& x) { return bitwise_invert(x); }, ints(kS, -50, 50));
  unary("Conjugate", [](const array& x) { return conjugate(x); }, [] { return C(kS); });
  unary("Real", [](const array& x) { return real(x); }, [] { return C(kS); });
  unary("Imag", [](const array& x) { return imag(x); }, [] { return C(kS); });
  unary("Exp", [](const array& x) { return exp(x); });
  unary("Expm1", [](const array& x) { return expm1(x); });
  unary("Log1p", [](const array& x) { return log1p(x); }, f(kS, 0, 2));
  unary("Sin", [](const array& x) { return sin(x); });
  unary("Cos", [](const array& x) { return cos(x); });
  unary("Tan", [](const array& x) { return tan(x); });
  unary("Sinh", [](const array& x) { return sinh(x); });
  unary("Cosh", [](const array& x) { return cosh(x); });
  unary("Tanh", [](const array& x) { return tanh(x); });
  unary("ArcSin", [](const array& x) { return arcsin(x); }, f(kS, -0.9f, 0.9f));
  unary("ArcCos", [](const array& x) { return arccos(x); }, f(kS, -0.9f, 0.9f));
  unary("ArcTan", [](const array& x) { return arctan(x); });
  unary("ArcSinh", [](const array& x) { return arcsinh(x); });
  unary("ArcCosh", [](const array& x) { return arccosh(x); }, f(kS, 1.1f, 3));
  unary("ArcTanh", [](const array& x) { return arctanh(x); }, f(kS, -0.9f, 0.9f));
  unary("Sigmoid", [](const array& x) { return sigmoid(x); });
  unary("Erf", [](const array& x) { return erf(x); });
  unary("ErfInv", [](const array& x) { return erfinv(x); }, f(kS, -0.9f, 0.9f));
  unary("Log", [](const array& x) { return log(x); }, f(kS, 0.1f, 3));
  unary("Sqrt", [](const array& x) { return rsqrt(x); }, f(kS, 0.1f, 3));
  binary("Add", [](const array& a, const array& b) { return add(a, b); });
  binary("Subtract", [](const array& a, const array& b) { return subtract(a, b); }, f({3, 1}), f(kS));
  binary("Multiply", [](const array& a, const array& b) { return multiply(a, b); }, f(kS), f(kS));
  binary("Divide", [](const array& a, const array& b) { return divide(a, b); }, f(kS), f({4}, 0.5f, 2));
  binary("Remainder", [](const array& a, const array& b) { return remainder(a, b); }, f(kS, -5, 5), f({4}, 0.5f, 2));
  binary("Power", [](const array& a, const array& b) { return power(a, b); }, f(kS, 0.1f, 2), f({4}));
  binary("Maximum", [](const array& a, const array& b) { return maximum(a, b); });
  binary("Minimum", [](const array& a, const array& b) { return minimum(a, b); });
  binary("ArcTan2", [](const array& a, const array& b) { return arctan2(a, b); });
  binary("LogAddExp", [](const array& a, const array& b) { return logaddexp(a, b); });
  cs.push_back({"DivMod", {f(kS, -5, 5), f({4}, 0.5f, 2)}, [](const std::vector<array>& x) { return divmod(x[0], x[1]); }});
  // No op builds FloorDivide (files of some releases record it): the row directly, on operands of one shape.
  binary("FloorDivide", [](const array& a, const array& b) {
    return make_array(registry::get("FloorDivide"), {}, {a, broadcast_to(b, a.shape())});
  }, ints(kS, -20, 20), ints({4}, 1, 5));
  binary("Equal", [](const array& a, const array& b) { return equal(a, b); }, ints(kS, 0, 3), ints({4}, 0, 3));
  binary("NotEqual", [](const array& a, const array& b) { return not_equal(a, b); }, ints(kS, 0, 3), ints({4}, 0, 3));
  binary("Greater", [](const array& a, const array& b) { return greater(a, b); });
  binary("GreaterEqual", [](const array& a, const array& b) { return greater_equal(a, b); });
  binary("Less", [](const array& a, const array& b) { return less(a, b); });
  binary("LessEqual", [](const array& a, const array& b) { return less_equal(a, b); });
  binary("LogicalAnd", [](const array& a, const array& b) { return logical_and(a, b); }, bools(kS), bools({4}));
  binary("LogicalOr", [](const array& a, const array& b) { return logical_or(a, b); }, bools(kS), bools({4}));
  binary("BitwiseBinary", [](const array& a, const array& b) { return bitwise_and(a, b); }, ints(kS, 0, 64),
         ints({4}, 0, 64));
  cs.push_back({"Select", {bools(kS), f(kS), f({4})}, three([](const array& c, const array& a, const array& b) {
                  return where(c, a, b);
                })});
  // reduce
  unary("Reduce", [](const array& x) { return sum(x, std::vector<int>{0, 2}); });
  unary("ArgReduce", [](const array& x) { return argmax(x, 1); });
  unary("LogSumExp", [](const array& x) { return logsumexp(x, -1); });
  unary("Softmax", [](const array& x) { return softmax(x, -1); });
  // Outside a shapeless trace the op folds the count into a constant: the row directly.
  unary("NumberOfElements", [](const array& x) {
    const PrimitiveDef& d = registry::get("NumberOfElements");
    array n = make_array(d, State{std::vector<int32_t>{0, 2}, false, float32}, {x}, {{Shape{}, float32}});
    array r = make_array(d, State{std::vector<int32_t>{1}, true, float32}, {x}, {{Shape{}, float32}});
    return multiply(divide(sum(x, std::vector<int>{0, 2}), n), r);
  });
  unary("Scan", [](const array& x) { return cumsum(x, 1); });
  // shape
  unary("Reshape", [](const array& x) { return reshape(x, {6, 4}); });
  unary("Transpose", [](const array& x) { return transpose(x, {2, 0, 1}); });
  unary("ExpandDims", [](const array& x) { return expand_dims(x, 1); });
  unary("Squeeze", [](const array& x) { return squeeze(x, 1); }, f({2, 1, 4}));
  unary("Flatten", [](const array& x) { return flatten(x, 1, 2); });
  unary("Unflatten", [](const array& x) { return unflatten(x, 2, {2, 2}); });
  unary("Broadcast", [](const array& x) { return broadcast_to(x, {2, 3, 4}); }, f({3, 1}));
  cs.push_back({"BroadcastAxes", {f({3, 1, 4}), f({2, 3, 5, 7})}, two([](const array& a, const array& b) {
                  static const PrimitiveDef& d = registry::get("BroadcastAxes");
                  return make_array(d, State{std::vector<int32_t>{-1}}, {a, b});
                })});
  unary("AsStrided", [](const array& x) { return as_strided(x, {3, 4}, {4, 1}, 2); });
  unary("Contiguous", [](const array& x) { return contiguous(transpose(x, {1, 0, 2})); });
  unary("Full", [](const array& x) { return full({2, 3, 4}, x); }, f({4}));
  unary("Slice", [](const array& x) { return slice(x, {0, 1, 0}, {2, 3, 4}, {1, 1, 2}); });
  binary("SliceUpdate", [](const array& x, const array& u) { return slice_update(x, u, {0, 1, 0}, {2, 3, 4}, {1, 1, 2}); },
         f(kS), f({2, 2, 2}));
  unary("DynamicSlice", [](const array& x) { return slice(x, array({1}), {1}, {2, 2, 4}); });
  binary("DynamicSliceUpdate", [](const array& x, const array& u) { return slice_update(x, u, array({1}), {1}); },
         f(kS), f({2, 2, 4}));
  // Mapped starts (out-of-range ones clamped, as the kernels do).
  binary("DynamicSlice", [](const array& x, const array& s) { return slice(x, s, {1, 2}, {2, 2, 3}); }, f(kS),
         ints({2}, -1, 4));
  cs.push_back({"DynamicSliceUpdate", {f(kS), f({1, 2, 4}), ints({2}, -1, 3)},
                three([](const array& x, const array& u, const array& s) { return slice_update(x, u, s, {0, 1}); })});
  cs.push_back({"Split", {f(kS)}, [](const std::vector<array>& x) { return split(x[0], 2, 2); }});
  binary("Concatenate", [](const array& a, const array& b) { return concatenate({a, b}, 1); }, f(kS), f({2, 2, 4}));
  unary("Pad", [](const array& x) { return pad(x, {{0, 1}, {1, 0}, {0, 0}}, array(2.f)); });
  binary("Pad", [](const array& x, const array& v) { return pad(x, {{0, 1}, {1, 0}, {0, 2}}, v); }, f(kS), f({}));
  // index
  binary("Gather", [](const array& a, const array& i) { return gather(a, {i}, std::vector<int>{0}, {1, 4, 2}); },
         f({5, 4, 2}), ints({2, 3}, 0, 5));
  cs.push_back({"Gather", {f({5, 4, 3}), ints({2, 3}, 0, 5), ints({3}, 0, 4)},
                three([](const array& a, const array& i, const array& j) {
                  return gather(a, broadcast_arrays({i, j}), std::vector<int>{0, 1}, {1, 1, 3});
                })});
  binary("GatherAxis", [](const array& a, const array& i) { return take_along_axis(a, i, 1); }, f({3, 4}),
         ints({3, 2}, 0, 4));
  cs.push_back({"Scatter", {f({5, 4}), ints({3}, 0, 5), f({3, 1, 4})}, three([](const array& a, const array& i, const array& u) {
                  return scatter_add(a, i, u, 0);
                })});
  cs.push_back({"Scatter", {f({5, 4}), ints({2}, 0, 5), ints({2}, 0, 4), f({2, 1, 1})},
                [](const std::vector<array>& x) {
                  return std::vector<array>{scatter_max(x[0], {x[1], x[2]}, x[3], std::vector<int>{0, 1})};
                }});
  cs.push_back({"ScatterAxis", {f({3, 4}), ints({3, 2}, 0, 4), f({3, 2})},
                three([](const array& a, const array& i, const array& u) { return scatter_add_axis(a, i, u, 1); })});
  cs.push_back({"MaskedScatter", {f({3, 4}), bools({3, 4}), f({12})},
                three([](const array& a, const array& m, const array& s) { return masked_scatter(a, m, s); })});
  // sort
  unary("Sort", [](const array& x) { return sort(x, 1); });
  unary("ArgSort", [](const array& x) { return argsort(x, 1); });
  unary("Partition", [](const array& x) { return partition(x, 1, 1); });
  unary("ArgPartition", [](const array& x) { return argpartition(x, 1, 2); });
  binary("SearchSorted", [](const array& s, const array& v) { return searchsorted(sort(s), v, "left"); }, f({6}),
         f({2, 3}));
  binary("SearchSorted", [](const array& s, const array& v) { return searchsorted(sort(s), v, "right"); },
         ints({6}, 0, 4, float32), ints({2, 3}, 0, 4, float32));
  // linalg
  binary("Matmul", [](const array& a, const array& b) { return matmul(a, b); }, f(kS), f({4, 5}));
  cs.push_back({"AddMM", {f({5}), f({3, 4}), f({4, 5})},
                three([](const array& c, const array& a, const array& b) { return addmm(c, a, b, 0.5f, 2.f); })});
  unary("Hadamard", [](const array& x) { return hadamard_transform(x); }, f({3, 8}));
  cs.push_back({"QRF", {f({4, 3})}, [](const std::vector<array>& x) {
                  auto [q, r] = linalg::qr(x[0]);
                  return std::vector<array>{q, r};
                }, 1e-3, 1e-4});
  cs.push_back({"SVD", {f({3, 3})}, [](const std::vector<array>& x) { return linalg::svd(x[0]); }, 1e-3, 1e-4});
  cs.push_back({"Inverse", {[] { return SPD(3); }}, one([](const array& x) { return linalg::inv(x); }), 1e-3, 1e-4});
  cs.push_back({"Cholesky", {[] { return SPD(3); }}, one([](const array& x) { return linalg::cholesky(x); }), 1e-3, 1e-4});
  cs.push_back({"Eig", {[] { return SPD(3); }}, one([](const array& x) { return linalg::eigvals(x); }), 1e-3, 1e-4});
  cs.push_back({"Eigh", {[] { return SPD(3); }}, [](const std::vector<array>& x) {
                  auto [w, v] = linalg::eigh(x[0]);
                  return std::vector<array>{w, v};
                }, 1e-3, 1e-4});
  cs.push_back({"LUF", {f({3, 3})}, [](const std::vector<array>& x) { return linalg::lu(x[0]); }, 1e-3, 1e-4});
  cs.push_back({"BlockMaskedMM", {f({64, 32}), f({32, 64}), bools({2, 2})},
                three([](const array& a, const array& b, const array& m) { return block_masked_mm(a, b, 32, m); }),
                1e-4, 1e-4});
  cs.push_back({"GatherMM", {f({3, 2, 4}), f({2, 4, 5}), ints({2}, 0, 3, uint32), ints({2}, 0, 2, uint32)},
                [](const std::vector<array>& x) { return std::vector<array>{gather_mm(x[0], x[1], x[2], x[3])}; }});
  // conv, fft
  binary("Convolution", [](const array& x, const array& w) { return conv1d(x, w, 1, 1); }, f({2, 6, 4}), f({3, 3, 4}));
  binary("Convolution", [](const array& x, const array& w) { return conv2d(x, w, {1, 1}, {0, 0}, {1, 1}, 2); },
         f({1, 4, 4, 4}), f({4, 2, 2, 2}));
  unary("FFT", [](const array& x) { return fft::rfft(x, 1); }, f({2, 8}));
  // quantized
  cs.push_back({"Quantize", {f({4, 64})}, [](const std::vector<array>& x) {
                  auto q = quantize(x[0], 32, 4);
                  q.push_back(dequantize(q[0], q[1], q[2], 32, 4));
                  return q;
                }});
  binary("QuantizedMatmul", [](const array& x, const array& w) {
    auto q = quantize(w, 32, 4);
    return quantized_matmul(x, q[0], q[1], q[2], true, 32, 4);
  }, f({2, 3, 64}), f({8, 64}));
  cs.push_back({"GatherQMM", {f({3, 2, 64}), f({2, 8, 64}), ints({2, 2}, 0, 3, uint32), ints({2, 2}, 0, 2, uint32)},
                [](const std::vector<array>& x) {
                  auto q = quantize(x[1], 32, 4);
                  return std::vector<array>{gather_qmm(x[0], q[0], q[1], q[2], x[2], x[3], true, 32, 4)};
                }, 1e-4, 1e-4});
  // random
  unary("RandomBits", [](const array& k) { return random::bits({2, 4}, 4, k); },
        [] { return random::key(std::uniform_int_distribution<int>(0, 1 << 20)(rng())); });
  // fast
  binary("RMSNorm", [](const array& x, const array& w) { return fast::rms_norm(x, w, 1e-5f); }, f(kS), f({4}));
  cs.push_back({"LayerNorm", {f(kS), f({4}), f({4})},
                three([](const array& x, const array& w, const array& b) { return fast::layer_norm(x, w, b, 1e-5f); })});
  cs.push_back({"RMSNormVJP", {f(kS), f({4}), f(kS)}, [](const std::vector<array>& x) {
                  return fast::detail::rms_norm_vjp(x[0], x[1], x[2], 1e-5f);
                }, 1e-3, 1e-4});
  cs.push_back({"LayerNormVJP", {f(kS), f({4}), f({4}), f(kS)}, [](const std::vector<array>& x) {
                  return fast::detail::layer_norm_vjp(x[0], x[1], x[2], x[3], 1e-5f);
                }, 1e-3, 1e-4});
  binary("RoPE", [](const array& x, const array& off) { return fast::rope(x, 4, false, 10000.f, 1.f, off); },
         f({2, 3, 5, 4}), ints({}, 0, 8));
  binary("RoPE", [](const array& x, const array& off) { return fast::rope(x, 4, true, 10000.f, 1.f, off); },
         f({2, 3, 5, 4}), ints({2}, 0, 8));
  // Mapped frequencies (written with ops), both layouts, both directions, part of the features rotated.
  cs.push_back({"RoPE", {f({2, 3, 5, 8}), ints({2}, 0, 8), f({2}, 0.5f, 4)},
                three([](const array& x, const array& off, const array& fr) {
                  return fast::rope(x, 4, false, std::nullopt, 0.5f, off, fr);
                }), 1e-4, 1e-5});
  cs.push_back({"RoPE", {f({2, 3, 5, 8}), ints({}, 0, 8), f({4}, 0.5f, 4)},
                three([](const array& x, const array& off, const array& fr) {
                  return fast::detail::rope(x, 8, true, 0.f, 1.f, off, fr, false);
                }), 1e-4, 1e-5});
  cs.push_back({"ScaledDotProductAttention", {f({1, 2, 3, 4}), f({1, 2, 5, 4}), f({1, 2, 5, 4}), f({3, 5})},
                [](const std::vector<array>& x) {
                  return std::vector<array>{fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.5f, "", x[3])};
                }, 1e-4, 1e-5});
  cs.push_back({"ScaledDotProductAttention", {f({1, 2, 3, 4}), f({1, 1, 5, 4}), f({1, 1, 5, 4})},
                three([](const array& q, const array& k, const array& v) {
                  return fast::scaled_dot_product_attention(q, k, v, 0.5f, "causal");
                }), 1e-4, 1e-5});
  cs.push_back({"ScaledDotProductAttention", {f({2, 4, 3, 4}), f({2, 2, 5, 4}), f({2, 2, 5, 4}), f({4, 3, 5}), f({4})},
                [](const std::vector<array>& x) {
                  return fast::detail::scaled_dot_product_attention_with_lse(x[0], x[1], x[2], 0.5f, "", x[3], x[4]);
                }, 1e-4, 1e-5});
  // misc
  cs.push_back({"Depends", {f(kS), f({4})}, [](const std::vector<array>& x) { return depends({x[0]}, {x[1]}); }});
  // custom_function: without a batching rule, vmap batches the function itself; with one, the rule runs
  // (here one that computes the same thing with the batch moved to the front).
  auto body = [](const std::vector<array>& x) { return std::vector<array>{sin(x[0]) * x[1], x[0] + 1.0f}; };
  auto cvjp = [](const std::vector<array>& p, const std::vector<array>& c, const std::vector<array>&) {
    return std::vector<array>{c[0] * cos(p[0]) * p[1] + c[1], c[0] * sin(p[0])};
  };
  cs.push_back({"CustomTransforms", {f(kS), f(kS)}, [=](const std::vector<array>& x) {
                  return custom_function(body, cvjp)(x);
                }});
  auto cvmap = [body](const std::vector<array>& in, const std::vector<int>& axes) {
    std::vector<array> front;
    int size = 1;
    for (size_t i = 0; i < in.size(); ++i) {
      if (axes[i] >= 0) size = in[i].shape()[axes[i]];
    }
    for (size_t i = 0; i < in.size(); ++i) {
      if (axes[i] >= 0) {
        front.push_back(moveaxis(in[i], axes[i], 0));
      } else {
        Shape sh = in[i].shape();
        sh.insert(sh.begin(), size);
        front.push_back(broadcast_to(in[i], sh));
      }
    }
    return std::make_pair(body(front), std::vector<int>{0, 0});
  };
  cs.push_back({"CustomTransforms", {f(kS), f(kS)}, [=](const std::vector<array>& x) {
                  return custom_function(body, cvjp, std::nullopt, cvmap)(x);
                }});
  // compile's fused group: batched through its members.
  cs.push_back({"Compiled", {f(kS), f(kS)}, [](const std::vector<array>& x) {
                  static const auto cf = compile([](const std::vector<array>& in) {
                    return std::vector<array>{tanh(in[0]) * in[1] - square(in[0]), abs(in[1])};
                  });
                  return cf(x);
                }});
  // An imported function's call: batched through the record's own nodes. A signature's first call
  // replays the record as a graph; later ones build the ImportedCall node.
  cs.push_back({"ImportedCall", {f(kS), f(kS)}, [](const std::vector<array>& x) {
                  static const ImportedFunction g = [] {
                    const std::string path =
                        (std::filesystem::temp_directory_path() / "kiln_vmap_imported_call.mlxfn").string();
                    export_function(path, [](const Args& in) {
                      return std::vector<array>{tanh(in[0]) * in[1] - square(in[0]), sum(in[1], -1, true) + in[0]};
                    }, {zeros(kS), zeros(kS)});
                    return import_function(path);  // the file stays: constants load lazily from it
                  }();
                  g(x);
                  return g(x);
                }});
  return cs;
}

using test_util::graph_has;

// got == want, element by element (complex parts compared separately), within the case's tolerance.
void expect_close(array got, array want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  if (is_complex(got.dtype())) {
    expect_close(real(got), real(want), rtol, atol, what + " (real part)");
    expect_close(imag(got), imag(want), rtol, atol, what + " (imaginary part)");
    return;
  }
  auto g = test_util::vals<double>(got), w = test_util::vals<double>(want);
  const bool exact = !is_inexact(got.dtype());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (exact) {
      ASSERT_EQ(g[i], w[i]) << what << " at " << i;
    } else {
      ASSERT_NEAR(g[i], w[i], atol + rtol * std::abs(w[i])) << what << " at " << i;
    }
  }
}

struct Combo {
  std::string name;
  std::vector<int> in_axes, out_axes;
};

// vmap(fn, in_axes, out_axes) against the stack of fn over the examples, batch size `b`.
void check_against_loop(const Case& c, const Combo& k, int b = 3) {
  const size_t n = c.inputs.size();
  std::vector<std::vector<array>> examples(b);
  std::vector<array> batched;
  for (size_t i = 0; i < n; ++i) {
    if (k.in_axes[i] < 0) {
      array shared = c.inputs[i]();
      batched.push_back(shared);
      for (int e = 0; e < b; ++e) examples[e].push_back(shared);
      continue;
    }
    std::vector<array> xs;
    for (int e = 0; e < b; ++e) {
      xs.push_back(c.inputs[i]());
      examples[e].push_back(xs.back());
    }
    array s = stack(xs, k.in_axes[i]);
    s.eval();
    batched.push_back(s);
  }
  std::vector<array> got = vmap(c.fn, k.in_axes, k.out_axes)(batched);
  std::vector<std::vector<array>> per(b);
  for (int e = 0; e < b; ++e) per[e] = c.fn(examples[e]);
  ASSERT_EQ(got.size(), per[0].size());
  for (size_t j = 0; j < got.size(); ++j) {
    std::vector<array> col;
    for (int e = 0; e < b; ++e) col.push_back(per[e][j]);
    expect_close(got[j], stack(col, k.out_axes[j]), c.rtol, c.atol,
                 c.primitive + " [" + k.name + "] output " + std::to_string(j));
  }
}

std::vector<Combo> combos(const Case& c) {
  std::vector<array> ex;
  for (auto& g : c.inputs) ex.push_back(g());
  std::vector<array> out = c.fn(ex);
  const size_t n = ex.size();
  std::vector<Combo> ks;
  Combo first{"batch axis first", std::vector<int>(n, 0), std::vector<int>(out.size(), 0)};
  Combo last{"batch axis last", {}, {}}, middle{"batch axis in the middle", {}, {}};
  for (auto& x : ex) {
    last.in_axes.push_back(static_cast<int>(x.ndim()));
    middle.in_axes.push_back(static_cast<int>(x.ndim() + 1) / 2);
  }
  for (auto& o : out) {
    last.out_axes.push_back(static_cast<int>(o.ndim()));
    middle.out_axes.push_back(static_cast<int>(o.ndim() + 1) / 2);
  }
  ks = {first, last, middle};
  if (n > 1) {
    for (size_t i = 0; i < n; ++i) {
      Combo u{"input " + std::to_string(i) + " unmapped", std::vector<int>(n, 0), last.out_axes};
      u.in_axes[i] = -1;
      for (size_t j = 0; j < n; ++j) {
        if (j != i) u.in_axes[j] = last.in_axes[j];
      }
      ks.push_back(u);
    }
  }
  return ks;
}

class VmapCase : public ::testing::TestWithParam<size_t> {};

TEST_P(VmapCase, MatchesLoop) {
  static const std::vector<Case> all = cases();
  const Case& c = all.at(GetParam());
  std::vector<array> ex;
  for (auto& g : c.inputs) ex.push_back(g());
  ASSERT_TRUE(graph_has(c.fn(ex), c.primitive)) << "the case for " << c.primitive << " does not build it";
  for (const Combo& k : combos(c)) {
    SCOPED_TRACE(c.primitive + " [" + k.name + "]");
    check_against_loop(c, k);
    if (HasFatalFailure()) return;
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  static const std::vector<Case> all = cases();
  return all.at(info.param).primitive + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Rows, VmapCase, ::testing::Range<size_t>(0, cases().size()), case_name);

// ---- coverage ----

// Rows without a batching rule, and why (the reason the table declares is the error's text).
const std::map<std::string, std::string> kNoRule = {
    {"Arange", "no inputs: never depends on a mapped input"},
    {"Load", "no inputs: an imported file's constant"},
    {"CustomKernel", "the kernel source is opaque to kiln"},
};

TEST(VmapCoverage, EveryRowHasARuleOrADeclaredReason) {
  const auto& table = vmap_rules::rules();
  std::set<std::string> with_case;
  for (const Case& c : cases()) with_case.insert(c.primitive);
  for (const PrimitiveDef* def : registry::all()) {
    const bool rule = table.find(*def) != nullptr;
    const std::string* why = table.reason(*def);
    if (rule) {
      EXPECT_TRUE(with_case.count(def->name)) << def->name << " has a batching rule but no case in test_vmap.cpp";
      EXPECT_FALSE(kNoRule.count(def->name)) << def->name << " has a rule: remove it from kNoRule";
    } else if (why) {
      EXPECT_FALSE(why->empty()) << def->name;
      EXPECT_TRUE(kNoRule.count(def->name)) << def->name << " is declared unbatchable (" << *why
                                             << ") but kNoRule does not list it";
    } else {
      ADD_FAILURE() << def->name << " has no batching rule and is not declared unbatchable";
    }
  }
  for (auto& [name, why] : kNoRule) {
    const PrimitiveDef* def = registry::find(name);
    ASSERT_NE(def, nullptr) << "kNoRule names " << name << ", which is not a row";
    EXPECT_EQ(table.find(*def), nullptr) << name << " now has a rule: remove it from kNoRule";
    EXPECT_NE(table.reason(*def), nullptr) << name << " is in kNoRule but not declared in its family's vmap file";
  }
}


// ---- the API ----

array loop_stack(const std::function<array(const array&)>& g, const array& x, int in_axis, int out_axis) {
  std::vector<array> ys;
  for (int b = 0; b < x.shape(in_axis); ++b) ys.push_back(g(take(x, b, in_axis)));
  return stack(ys, out_axis);
}

TEST(VmapApi, UnaryOverload) {
  auto g = [](const array& x) { return sum(exp(x), -1); };
  array x = F({3, 4, 5});
  expect_close(vmap(g)(x), loop_stack(g, x, 0, 0), 1e-5, 1e-6, "vmap(g)");
  expect_close(vmap(g, 2, 1)(x), loop_stack(g, x, 2, 1), 1e-5, 1e-6, "vmap(g, 2, 1)");
}

TEST(VmapApi, BinaryOverloadMatchesLoop) {
  auto h = [](const array& a, const array& b) { return matmul(a, b); };
  array a = F({3, 2, 4}), b = F({4, 5, 3});  // a batched on axis 0, b on axis 2
  std::vector<array> ys;
  for (int i = 0; i < 3; ++i) ys.push_back(h(take(a, i, 0), take(b, i, 2)));
  expect_close(vmap(h, 0, 2, 1)(a, b), stack(ys, 1), 1e-5, 1e-6, "vmap(h, 0, 2, 1)");
}

TEST(VmapApi, NestedVmap) {
  // f: x (4, 5), w (5, 6) -> softmax(x w) gathered at a fixed index set.
  auto f = [](const std::vector<array>& xs) {
    array y = softmax(matmul(xs[0], xs[1]), -1);
    return std::vector<array>{take(y, array({2, 0}), 1), sum(y, 0)};
  };
  array x = F({3, 4, 2, 5});  // outer batch on axis 0 (3), inner on axis 2 of the rest (2)
  array w = F({5, 6});
  auto inner = vmap(f, {1, -1}, {0, 1});
  auto outer = vmap(inner, {0, -1}, {2, 0});
  std::vector<array> got = outer({x, w});
  for (int o = 0; o < 2; ++o) {
    std::vector<array> outer_col;
    for (int i = 0; i < 3; ++i) {
      std::vector<array> inner_col;
      array xi = take(x, i, 0);  // (4, 2, 5)
      for (int j = 0; j < 2; ++j) inner_col.push_back(f({take(xi, j, 1), w})[o]);
      outer_col.push_back(stack(inner_col, o == 0 ? 0 : 1));
    }
    expect_close(got[o], stack(outer_col, o == 0 ? 2 : 0), 1e-5, 1e-6, "nested output " + std::to_string(o));
  }
}

TEST(VmapApi, OutputsThatDoNotDependOnMappedInputsAreRepeated) {
  auto f = [](const std::vector<array>& xs) {
    return std::vector<array>{multiply(xs[0], array(2.f)), add(xs[1], array(1.f)), xs[0]};
  };
  array x = F({3, 4}), y = F({2, 5});
  auto got = vmap(f, {0, -1}, {0, 1, 1})({x, y});
  expect_close(got[0], multiply(x, array(2.f)), 1e-6, 0, "mapped output");
  expect_close(got[1], repeat(expand_dims(add(y, array(1.f)), 1), 3, 1), 1e-6, 0, "unmapped output");
  expect_close(got[2], transpose(x), 0, 0, "an input returned as it is, moved to out axis 1");
}

TEST(VmapApi, ResultIsALazyGraphOfRows) {
  // No evaluation during vmap: the result's graph is made of the rows themselves.
  array x = F({3, 4, 5});
  array y = vmap([](const array& a) { return sum(a, 0); }, 1, 0)(x);
  ASSERT_TRUE(y.has_primitive());
  EXPECT_TRUE(graph_has({y}, "Reduce"));
  expect_close(y, sum(x, 0), 1e-5, 1e-6, "sum over the unbatched axis 0");
}

TEST(VmapApi, DeepGraphs) {
  // The walk is iterative: a chain of 20000 nodes does not touch the call stack.
  auto chain = [](const array& x) {
    array y = x;
    for (int i = 0; i < 20000; ++i) y = add(y, array(1e-4f));
    return y;
  };
  array x = F({3, 2});
  expect_close(vmap(chain, 1, 0)(x), loop_stack(chain, x, 1, 0), 1e-6, 1e-6, "deep chain");
}

// ---- imported and exported functions ----

TEST(VmapImport, BatchesAnImportedFunction) {
  auto f = [](const Args& xs) {
    array h = matmul(xs[0], xs[1]);
    return std::vector<array>{sum(exp(h), -1), take(h, array({1, 0}), 1)};
  };
  for (bool shapeless : {false, true}) {
    SCOPED_TRACE(shapeless ? "shapeless" : "shaped");
    const std::string path = kiln_test::temp_file("vmap_import");
    array x0 = F({3, 4}), w = F({4, 5});
    export_function(path, f, {x0, w}, shapeless);
    ImportedFunction imported = import_function(path);
    Fn fn = [&imported](const std::vector<array>& xs) { return imported(Args(xs)); };
    array x = F({6, 3, 4});  // batch on axis 2 below
    array xt = moveaxis(x, 0, 2);
    auto got = vmap(fn, {2, -1}, {0, 1})({xt, w});
    for (int o = 0; o < 2; ++o) {
      std::vector<array> col;
      for (int b = 0; b < 6; ++b) col.push_back(f({take(x, b, 0), w})[o]);
      expect_close(got[o], stack(col, o == 0 ? 0 : 1), 1e-5, 1e-6, "imported output " + std::to_string(o));
    }
    std::filesystem::remove(path);
  }
}

TEST(VmapExport, ExportsAFunctionThatCallsVmap) {
  auto per_example = [](const array& x) { return softmax(matmul(x, transpose(x)), -1); };
  auto g = [&](const Args& xs) { return std::vector<array>{vmap(per_example, 1, 0)(xs[0])}; };
  const std::string path = kiln_test::temp_file("vmap_export");
  array x = F({4, 5, 3});
  export_function(path, g, {x});
  ImportedFunction imported = import_function(path);
  array x2 = F({4, 5, 3});
  auto got = imported({x2});
  ASSERT_EQ(got.size(), 1u);
  expect_close(got[0], loop_stack(per_example, x2, 1, 0), 1e-5, 1e-6, "exported vmap");
  std::filesystem::remove(path);
}

// ---- errors ----

TEST(VmapErrors, BadAxesAndSizes) {
  auto id = [](const std::vector<array>& xs) { return xs; };
  array x = F({3, 4}), y = F({2, 4});
  EXPECT_EQ(message_of([&] { vmap(id, {0})({x, y}); }),
            "[vmap] The number of in axes (1) must match the number of inputs (2).");
  EXPECT_EQ(message_of([&] { vmap(id, {2})({x}); }), "[vmap] Axis 2 invalid for input with 2 dimensions.");
  EXPECT_EQ(message_of([&] { vmap(id, {0, -2})({x, x}); }), "[vmap] Axis -2 invalid for input with 2 dimensions.");
  EXPECT_EQ(message_of([&] { vmap(id, {0})({array(1.f)}); }), "[vmap] Cannot vmap an input with zero dimensions.");
  EXPECT_EQ(message_of([&] { vmap(id, {0, 0})({x, y}); }), "[vmap] Inconsistent axis sizes: 2 and 3.");
  EXPECT_EQ(message_of([&] { vmap(id, {0}, {0, 1})({x}); }),
            "[vmap] The number of out axes (2) must match the number of outputs (1).");
  EXPECT_EQ(message_of([&] { vmap(id, {0}, {2})({x}); }), "[vmap] Axis 2 invalid for output with 2 dimensions.");
  EXPECT_EQ(message_of([&] { vmap(id, {-1}, {0}); }),
            "[vmap] Input (or output) axes must be specified if output (or input) axes are.");
  EXPECT_EQ(message_of([&] { vmap(id, {-1}, {-1})({x}); }), "At least one of in_axes must be non-None.");
}

TEST(VmapErrors, NonArrayOutputs) {
  auto bad = [](const std::vector<array>&) { return std::vector<array>{array()}; };
  EXPECT_EQ(message_of([&] { vmap(bad)({F({3})}); }),
            "[vmap] The function returned an empty (default-constructed) array.");
  auto id = [](const std::vector<array>& xs) { return xs; };
  EXPECT_EQ(message_of([&] { vmap(id)({array()}); }), "[vmap] Input 0 is an empty (default-constructed) array.");
}

TEST(VmapErrors, RowsAndInputsWithoutRules) {
  // A row declared without a rule names itself and the reason.
  auto ck = [](const array& x) {
    fast::detail::CustomKernelSpec spec{"scale", "out[0] = 2 * in[0];"};
    return fast::detail::custom_kernel(spec, {x}, {x.shape()}, {x.dtype()})[0];
  };
  EXPECT_EQ(message_of([&] { vmap(ck)(F({3, 4})); }),
            "[vmap] Primitive CustomKernel cannot be batched: a custom kernel's source is opaque to kiln, so no "
            "batching rule can be derived for it (call it on batched inputs instead).");
  // Rules that do not cover every mapped input say which.
  array seqs = stack({C({6}), C({6})}, 0);
  EXPECT_EQ(message_of([&] {
              vmap([](const array& sq, const array& v) { return searchsorted(sq, v); }, 0, -1)(seqs, C({3}));
            }),
            "[vmap] SearchSorted: a mapped sorted sequence of complex values is not supported in kiln yet.");
}

}  // namespace
