// AutodiffCheck: every differentiable row's vjp and jvp against central finite differences. A case
// is a function of some float inputs whose graph holds the row; the check draws random directions v
// (per input) and weights w (per output), and compares the directional derivative of
// phi(x) = sum_k <f_k(x), w_k>, (phi(x + h v) - phi(x - h v)) / 2h, with sum_i <vjp(w)_i, v_i> and with
// sum_k <jvp(v)_k, w_k>. float64 where every row of the case runs in float64 on the CPU; float32 with a
// looser tolerance otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <unordered_set>

#include "kiln/fast.h"
#include "unit/autodiff_test_util.h"
#include "unit/test_util.h"

namespace autodiff_test {

namespace {

using mx::array;
using A = std::vector<array>;

array rnd(const mx::Shape& shape, double lo, double hi, mx::Dtype t = mx::float64, unsigned seed = 0) {
  static std::mt19937 gen(1234);
  if (seed) gen.seed(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  size_t n = 1;
  for (int s : shape) n *= s;
  std::vector<double> v(n);
  for (auto& x : v) x = d(gen);
  return mx::astype(array(v.data(), shape, mx::float64), t);
}

Case unary(const char* prim, const char* label, array (*op)(const array&, mx::StreamOrDevice), double lo, double hi) {
  return {prim, label, [op](const A& x) { return A{op(x[0], {})}; }, {rnd({2, 3}, lo, hi)}};
}
// The rows whose float64 CPU kernels compute in float32 precision (a finite difference in float64 would
// measure the rounding): checked in float32.
Case unary32(const char* prim, const char* label, array (*op)(const array&, mx::StreamOrDevice), double lo,
             double hi) {
  return {prim, label, [op](const A& x) { return A{op(x[0], {})}; }, {rnd({2, 3}, lo, hi, mx::float32)}, 1e-2};
}

std::vector<Case> build() {
  std::vector<Case> c;
  // ---- element-wise ----
  c.push_back({"Copy", "copy", [](const A& x) { return A{mx::copy(x[0]) * x[0]}; }, {rnd({2, 3}, -1, 1)}});
  c.push_back({"AsType", "float32 -> float64", [](const A& x) { return A{mx::square(mx::astype(x[0], mx::float64))}; },
               {rnd({2, 3}, -1, 1, mx::float32)}, 1e-3});
  c.push_back(unary("Abs", "abs", mx::abs, 0.2, 1));
  c.push_back({"Abs", "abs of negatives", [](const A& x) { return A{mx::abs(x[0])}; }, {rnd({3}, -1, -0.2)}});
  c.push_back(unary("Negative", "negative", mx::negative, -1, 1));
  for (const char* p : {"Sign", "Floor", "Ceil", "Round"}) {
    c.push_back({p, std::string(p) + " times x",
                 [p](const A& x) {
                   std::string s = p;
                   array y = s == "Sign" ? mx::sign(x[0]) : s == "Floor" ? mx::floor(x[0]) : s == "Ceil" ? mx::ceil(x[0]) : mx::round(x[0]);
                   return A{mx::multiply(y, x[0])};
                 },
                 {rnd({2, 3}, 1.1, 1.4)}});
  }
  c.push_back({"LogicalNot", "not(x > 0.5) * x",
               [](const A& x) { return A{mx::astype(mx::logical_not(x[0] > 0.5), mx::float64) * x[0]}; },
               {rnd({2, 3}, 0, 1)}});
  c.push_back(unary("Square", "square", mx::square, -1, 1));
  c.push_back(unary32("Exp", "exp", mx::exp, -1, 1));
  c.push_back(unary("Expm1", "expm1", mx::expm1, -1, 1));
  c.push_back(unary("Log1p", "log1p", mx::log1p, -0.5, 1));
  c.push_back({"Log", "log, log2, log10",
               [](const A& x) { return A{mx::log(x[0]), mx::log2(x[0]), mx::log10(x[0])}; }, {rnd({2, 3}, 0.5, 2)}});
  c.push_back(unary32("Sin", "sin", mx::sin, -2, 2));
  c.push_back(unary32("Cos", "cos", mx::cos, -2, 2));
  c.push_back(unary("Tan", "tan", mx::tan, -1, 1));
  c.push_back(unary("Sinh", "sinh", mx::sinh, -1, 1));
  c.push_back(unary("Cosh", "cosh", mx::cosh, -1, 1));
  c.push_back(unary("Tanh", "tanh", mx::tanh, -1, 1));
  c.push_back(unary("ArcSin", "arcsin", mx::arcsin, -0.8, 0.8));
  c.push_back(unary("ArcCos", "arccos", mx::arccos, -0.8, 0.8));
  c.push_back(unary("ArcTan", "arctan", mx::arctan, -2, 2));
  c.push_back(unary("ArcSinh", "arcsinh", mx::arcsinh, -2, 2));
  c.push_back(unary("ArcCosh", "arccosh", mx::arccosh, 1.2, 3));
  c.push_back(unary("ArcTanh", "arctanh", mx::arctanh, -0.8, 0.8));
  c.push_back(unary32("Sigmoid", "sigmoid", mx::sigmoid, -2, 2));
  c.push_back(unary32("Erf", "erf", mx::erf, -1.5, 1.5));
  c.push_back({"ErfInv", "erfinv", [](const A& x) { return A{mx::erfinv(x[0])}; }, {rnd({2, 3}, -0.8, 0.8, mx::float32)},
               2e-2});
  c.push_back({"Sqrt", "sqrt and rsqrt", [](const A& x) { return A{mx::sqrt(x[0]), mx::rsqrt(x[0])}; },
               {rnd({2, 3}, 0.5, 2)}});
  c.push_back({"Real", "real(x * c)",
               [](const A& x) { return A{mx::real(mx::astype(x[0], mx::complex64) * array(mx::complex64_t{1.5f, -2.f}))}; },
               {rnd({2, 3}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"Imag", "imag(x * c)",
               [](const A& x) { return A{mx::imag(mx::astype(x[0], mx::complex64) * array(mx::complex64_t{1.5f, -2.f}))}; },
               {rnd({2, 3}, -1, 1, mx::float32)}, 1e-2});
  // binary: a (2, 3) against a broadcast b (3)
  auto bin = [&](const char* p, array (*op)(const array&, const array&, mx::StreamOrDevice), double lo, double hi,
                 double blo, double bhi) {
    c.push_back({p, std::string(p) + " with broadcasting", [op](const A& x) { return A{op(x[0], x[1], {})}; },
                 {rnd({2, 3}, lo, hi), rnd({3}, blo, bhi)}});
  };
  bin("Add", mx::add, -1, 1, -1, 1);
  bin("Subtract", mx::subtract, -1, 1, -1, 1);
  bin("Multiply", mx::multiply, -1, 1, -1, 1);
  bin("Divide", mx::divide, -1, 1, 0.5, 2);
  bin("Remainder", mx::remainder, 2.3, 2.7, 1.0, 1.05);
  bin("Power", mx::power, 0.5, 2, -1.5, 1.5);
  bin("Maximum", mx::maximum, -1, 1, -1, 1);
  bin("Minimum", mx::minimum, -1, 1, -1, 1);
  bin("ArcTan2", mx::arctan2, -1, 1, 0.3, 1);
  c.push_back({"LogAddExp", "logaddexp with broadcasting", [](const A& x) { return A{mx::logaddexp(x[0], x[1])}; },
               {rnd({2, 3}, -1, 1, mx::float32), rnd({3}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"DivMod", "divmod: quotient and remainder",
               [](const A& x) {
                 auto qr = mx::divmod(x[0], x[1]);
                 return A{qr[0] * x[0], qr[1]};
               },
               {rnd({2, 3}, 2.3, 2.7), rnd({3}, 1.0, 1.05)}});
  c.push_back({"FloorDivide", "a file's FloorDivide node times a",
               [](const A& x) {
                 return A{mx::make_array(mx::registry::get("FloorDivide"), {}, {x[0], x[1]}) * x[0]};
               },
               {rnd({2, 3}, 2.3, 2.7), rnd({3}, 1.0, 1.05)}});
  for (const char* p : {"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual"}) {
    c.push_back({p, std::string(p) + "(a, b) * a",
                 [p](const A& x) {
                   std::string s = p;
                   array m = s == "Equal"          ? mx::equal(x[0], x[1])
                             : s == "NotEqual"     ? mx::not_equal(x[0], x[1])
                             : s == "Greater"      ? mx::greater(x[0], x[1])
                             : s == "GreaterEqual" ? mx::greater_equal(x[0], x[1])
                             : s == "Less"         ? mx::less(x[0], x[1])
                                                   : mx::less_equal(x[0], x[1]);
                   return A{mx::astype(m, mx::float64) * x[0] * x[1]};
                 },
                 {rnd({2, 3}, -1, 1), rnd({3}, -1, 1)}});
  }
  c.push_back({"LogicalAnd", "and/or of comparisons",
               [](const A& x) {
                 array p = x[0] > 0.0, q = x[1] > 0.0;
                 return A{mx::astype(mx::logical_and(p, q), mx::float64) * x[0] +
                          mx::astype(mx::logical_or(p, q), mx::float64) * x[1]};
               },
               {rnd({2, 3}, -1, 1), rnd({2, 3}, -1, 1)}});
  c.push_back({"LogicalOr", "or of comparisons",
               [](const A& x) { return A{mx::astype(mx::logical_or(x[0] > 0.0, x[1] > 0.0), mx::float64) * x[1]}; },
               {rnd({2, 3}, -1, 1), rnd({2, 3}, -1, 1)}});
  c.push_back({"BitwiseBinary", "bitwise and of integer masks",
               [](const A& x) {
                 array p = mx::astype(x[0] > 0.0, mx::int32), q = mx::astype(x[1] > 0.0, mx::int32);
                 return A{mx::astype(mx::bitwise_and(p, q), mx::float64) * x[0] * x[1]};
               },
               {rnd({2, 3}, -1, 1), rnd({2, 3}, -1, 1)}});
  c.push_back({"Select", "where(c, a, b) with broadcasting",
               [](const A& x) { return A{mx::where(x[0] > 0.0, x[0] * 2.0, x[1])}; },
               {rnd({2, 3}, -1, 1), rnd({3}, -1, 1)}});
  // ---- reduce ----
  c.push_back({"Reduce", "sum, prod (with a zero), max, min",
               [](const A& x) {
                 return A{mx::sum(x[0], std::vector<int>{0}), mx::prod(x[0], std::vector<int>{1}),
                          mx::prod(x[0]), mx::max(x[0], 0), mx::min(x[0])};
               },
               {mx::astype(array({0.5, -1.2, 0.0, 1.5, 0.7, -0.3}, {2, 3}), mx::float64)}});
  c.push_back({"Reduce", "prod over two axes", [](const A& x) { return A{mx::prod(x[0], {0, 2}, true)}; },
               {rnd({2, 3, 2}, 0.5, 1.5)}});
  c.push_back({"Reduce", "all / any times x",
               [](const A& x) {
                 return A{mx::astype(mx::all(x[0] > 0.0, 1, true), mx::float64) * x[0] +
                          mx::astype(mx::any(x[0] > 0.5, 1, true), mx::float64) * x[0]};
               },
               {rnd({2, 3}, -1, 1)}});
  c.push_back({"ArgReduce", "argmax as a weight",
               [](const A& x) { return A{mx::astype(mx::argmax(x[0], 1), mx::float64) * mx::sum(x[0], 1)}; },
               {rnd({2, 3}, -1, 1)}});
  c.push_back({"LogSumExp", "logsumexp over the last axis", [](const A& x) { return A{mx::logsumexp(x[0], -1)}; },
               {rnd({2, 3}, -1, 1)}});
  c.push_back({"Softmax", "softmax over the last axis", [](const A& x) { return A{mx::softmax(x[0], std::vector<int>{-1})}; },
               {rnd({2, 4}, -1, 1)}});
  c.push_back({"Scan", "cumsum forward and reverse exclusive",
               [](const A& x) { return A{mx::cumsum(x[0], 1), mx::cumsum(x[0], 0, true, false)}; },
               {rnd({3, 4}, -1, 1)}});
  c.push_back({"Scan", "logcumsumexp forward and reverse",
               [](const A& x) { return A{mx::logcumsumexp(x[0], 1), mx::logcumsumexp(x[0], 1, true)}; },
               {rnd({2, 4}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"Scan", "cumprod, all four directions",
               [](const A& x) {
                 return A{mx::cumprod(x[0], 1), mx::cumprod(x[0], 1, true, true), mx::cumprod(x[0], 0, false, false),
                          mx::cumprod(x[0], 1, true, false)};
               },
               {rnd({3, 4}, 0.5, 1.5)}});
  // Exact zeros: the first zero of a line (in scan order) has a nonzero derivative, the later ones and the
  // inputs past them none; rows with one zero, two zeros and none, in every direction.
  c.push_back({"Scan", "cumprod through zeros, all four directions",
               [](const A& x) {
                 return A{mx::cumprod(x[0], 1), mx::cumprod(x[0], 1, true, true), mx::cumprod(x[0], 1, false, false),
                          mx::cumprod(x[0], 1, true, false)};
               },
               {array({0.9, 0.0, 1.3, 0.7, 1.1, 0.0, 1.2, 0.0, 0.8, 1.4, 0.6, 1.2, 0.0, 0.5, 0.0},
                      {3, 5}, mx::float64)}});
  // An exclusive scan's first output is the identity (the dtype's lowest or highest value): sliced off, as
  // it would swamp the weighted sum.
  for (bool is_max : {true, false}) {
    c.push_back({"Scan", std::string(is_max ? "cummax" : "cummin") + ", all four directions",
                 [is_max](const A& x) {
                   auto f = [is_max](const array& a, int axis, bool reverse, bool inclusive) {
                     return is_max ? mx::cummax(a, axis, reverse, inclusive) : mx::cummin(a, axis, reverse, inclusive);
                   };
                   return A{f(x[0], 1, false, true), f(x[0], 1, true, true),
                            mx::slice(f(x[0], 0, false, false), {1, 0}, {3, 5}),
                            mx::slice(f(x[0], 1, true, false), {0, 0}, {3, 4})};
                 },
                 {rnd({3, 5}, -1, 1)}});
  }
  // ---- shape ----
  c.push_back({"Reshape", "reshape", [](const A& x) { return A{mx::reshape(x[0], {3, 2}) * 2.0}; }, {rnd({2, 3}, -1, 1)}});
  c.push_back({"Transpose", "transpose", [](const A& x) { return A{mx::transpose(x[0], {2, 0, 1}) * 2.0}; },
               {rnd({2, 3, 2}, -1, 1)}});
  c.push_back({"ExpandDims", "expand_dims", [](const A& x) { return A{mx::expand_dims(x[0], 1) * 2.0}; },
               {rnd({2, 3}, -1, 1)}});
  c.push_back({"Squeeze", "squeeze", [](const A& x) { return A{mx::squeeze(x[0], 1) * 2.0}; }, {rnd({2, 1, 3}, -1, 1)}});
  c.push_back({"Flatten", "flatten", [](const A& x) { return A{mx::flatten(x[0], 0, 1) * 2.0}; }, {rnd({2, 3, 2}, -1, 1)}});
  c.push_back({"Unflatten", "unflatten", [](const A& x) { return A{mx::unflatten(x[0], 1, {2, 3}) * 2.0}; },
               {rnd({2, 6}, -1, 1)}});
  c.push_back({"Broadcast", "broadcast_to", [](const A& x) { return A{mx::broadcast_to(x[0], {4, 2, 3}) * 2.0}; },
               {rnd({2, 1}, -1, 1)}});
  c.push_back({"BroadcastAxes", "a shapeless trace's BroadcastAxes (the last axis ignored)",
               [](const A& x) {
                 const auto& d = mx::registry::get("BroadcastAxes");
                 array other = mx::zeros({4, 1, 5}, mx::float64);
                 return A{mx::make_array(d, mx::State{std::vector<int32_t>{-1}}, {x[0], other}) * 2.0};
               },
               {rnd({2, 3}, -1, 1)}});
  c.push_back({"AsStrided", "overlapping windows", [](const A& x) { return A{mx::as_strided(x[0], {3, 3}, {1, 1}, 1) * 2.0}; },
               {rnd({6}, -1, 1)}});
  c.push_back({"Contiguous", "contiguous of a transpose",
               [](const A& x) { return A{mx::contiguous(mx::transpose(x[0])) * 2.0}; }, {rnd({2, 3}, -1, 1)}});
  c.push_back({"Full", "full from a row", [](const A& x) { return A{mx::full({2, 3}, x[0]) * 2.0}; }, {rnd({3}, -1, 1)}});
  c.push_back({"Slice", "strided slice", [](const A& x) { return A{mx::slice(x[0], {0, 1}, {3, 5}, {2, 2}) * 2.0}; },
               {rnd({3, 5}, -1, 1)}});
  c.push_back({"SliceUpdate", "slice_update of both operands",
               [](const A& x) { return A{mx::slice_update(x[0], x[1] * 3.0, {1, 0}, {3, 4}, {1, 2}) * x[0]}; },
               {rnd({3, 4}, -1, 1), rnd({2, 2}, -1, 1)}});
  c.push_back({"DynamicSlice", "slice at an array start",
               [](const A& x) { return A{mx::slice(x[0], array({1}, mx::int32), {0}, {2, 3}) * 2.0}; },
               {rnd({4, 3}, -1, 1)}});
  c.push_back({"DynamicSliceUpdate", "slice_update at an array start",
               [](const A& x) { return A{mx::slice_update(x[0], x[1] * 3.0, array({1}, mx::int32), {0}) * x[0]}; },
               {rnd({4, 3}, -1, 1), rnd({2, 3}, -1, 1)}});
  c.push_back({"Split", "split, one piece unused",
               [](const A& x) {
                 auto parts = mx::split(x[0], 3, 1);
                 return A{parts[0] * parts[2]};
               },
               {rnd({2, 6}, -1, 1)}});
  c.push_back({"Concatenate", "concatenate", [](const A& x) { return A{mx::concatenate({x[0], x[1] * 2.0, x[0]}, 1)}; },
               {rnd({2, 3}, -1, 1), rnd({2, 2}, -1, 1)}});
  c.push_back({"Pad", "pad with a differentiable value",
               [](const A& x) { return A{mx::pad(x[0], {{1, 0}, {0, 2}}, x[1]) * 2.0}; },
               {rnd({2, 3}, -1, 1), rnd({}, -1, 1)}});
  // ---- index ----
  c.push_back({"Gather", "take with repeated indices",
               [](const A& x) { return A{mx::take(x[0], array({2, 0, 2}, mx::int32), 0) * 2.0}; },
               {rnd({3, 4}, -1, 1)}});
  c.push_back({"GatherAxis", "take_along_axis",
               [](const A& x) { return A{mx::take_along_axis(x[0], array({0, 2, 1, 1}, {2, 2}, mx::int32), 1) * 2.0}; },
               {rnd({2, 3}, -1, 1)}});
  c.push_back({"Scatter", "scatter and scatter_add",
               [](const A& x) {
                 array idx = array({2, 0}, mx::int32);
                 array upd = mx::reshape(x[1], {2, 1, 3});
                 return A{mx::scatter(x[0], idx, upd, 0) * x[0], mx::scatter_add(x[0], idx, upd * 2.0, 0)};
               },
               {rnd({3, 3}, -1, 1), rnd({2, 3}, -1, 1)}});
  c.push_back({"Scatter", "scatter_max and scatter_min",
               [](const A& x) {
                 array idx = array({2, 0}, mx::int32);
                 array upd = mx::reshape(x[1], {2, 1, 3});
                 return A{mx::scatter_max(x[0], idx, upd, 0), mx::scatter_min(x[0], idx, upd, 0)};
               },
               {rnd({3, 3}, -1, 1), rnd({2, 3}, -1, 1)}});
  c.push_back({"ScatterAxis", "put_along_axis and scatter_add_axis",
               [](const A& x) {
                 array idx = array({0, 2, 1, 0}, {2, 2}, mx::int32);
                 return A{mx::put_along_axis(x[0], idx, x[1], 1) * x[0], mx::scatter_add_axis(x[0], idx, x[1], 1)};
               },
               {rnd({2, 3}, -1, 1), rnd({2, 2}, -1, 1)}});
  c.push_back({"MaskedScatter", "masked_scatter, spare values",
               [](const A& x) {
                 array mask = array({true, false, true, true, false, false, true, false}, {2, 4});
                 return A{mx::masked_scatter(x[0], mask, x[1]) * x[0]};
               },
               {rnd({2, 4}, -1, 1), rnd({6}, -1, 1)}});
  // ---- linalg ----
  c.push_back({"Matmul", "batched matmul with a broadcast operand",
               [](const A& x) { return A{mx::matmul(x[0], x[1])}; }, {rnd({2, 2, 3}, -1, 1), rnd({3, 4}, -1, 1)}});
  c.push_back({"AddMM", "addmm with alpha and beta",
               [](const A& x) { return A{mx::addmm(x[2], x[0], x[1], 0.5f, 2.0f)}; },
               {rnd({2, 3}, -1, 1, mx::float32), rnd({3, 4}, -1, 1, mx::float32), rnd({4}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"Hadamard", "hadamard_transform", [](const A& x) { return A{mx::hadamard_transform(x[0])}; },
               {rnd({2, 4}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"GatherMM", "gather_mm with repeated indices",
               [](const A& x) {
                 return A{mx::gather_mm(x[0], x[1], array({0, 2, 2}, mx::int32), array({1, 0, 1}, mx::int32))};
               },
               {rnd({3, 2, 3}, -1, 1, mx::float32), rnd({2, 3, 4}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"Convolution", "1-D: stride, uneven padding, dilation",
               [](const A& x) { return A{mx::conv_general(x[0], x[1], {2}, {1}, {2}, {2}, {1}, 1, false)}; },
               {rnd({2, 9, 3}, -1, 1, mx::float32), rnd({4, 3, 3}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"Convolution", "2-D flipped, stride 2",
               [](const A& x) { return A{mx::conv_general(x[0], x[1], {2, 1}, {0, 1}, {1, 0}, {1, 2}, {1, 1}, 1, true)}; },
               {rnd({1, 6, 5, 2}, -1, 1, mx::float32), rnd({3, 2, 2, 2}, -1, 1, mx::float32)}, 1e-2});
  // Groups and input dilation, 1-D to 3-D, in float64 (the CPU convolution accumulates in float64).
  c.push_back({"Convolution", "1-D: two groups, input dilation 2, stride 2, padding",
               [](const A& x) { return A{mx::conv_general(x[0], x[1], {2}, {1}, {2}, {1}, {2}, 2, false)}; },
               {rnd({2, 7, 4}, -1, 1), rnd({6, 3, 2}, -1, 1)}});
  c.push_back({"Convolution", "2-D flipped: three groups, input dilation (2, 3), kernel dilation (1, 2)",
               [](const A& x) { return A{mx::conv_general(x[0], x[1], {1, 2}, {1, 0}, {0, 2}, {1, 2}, {2, 3}, 3, true)}; },
               {rnd({1, 4, 3, 3}, -1, 1), rnd({3, 2, 2, 1}, -1, 1)}});
  // 3-D: one group (a grouped 3-D convolution is refused by the forward op, as MLX's).
  c.push_back({"Convolution", "3-D: input dilation (1, 2, 2), stride (1, 1, 2), flipped",
               [](const A& x) { return A{mx::conv_general(x[0], x[1], {1, 1, 2}, {0, 1, 1}, {0, 1, 0}, {1, 1, 1}, {1, 2, 2}, 1, true)}; },
               {rnd({1, 3, 3, 3, 2}, -1, 1), rnd({3, 2, 2, 2, 2}, -1, 1)}});
  c.push_back({"Convolution", "2-D depthwise (groups = channels), input dilation 2",
               [](const A& x) { return A{mx::conv_general(x[0], x[1], {1, 1}, {0, 0}, {0, 0}, {1, 1}, {2, 2}, 3, false)}; },
               {rnd({2, 3, 3, 3}, -1, 1), rnd({3, 2, 2, 1}, -1, 1)}});
  // FFTs: complex values built from two real inputs, both parts of complex outputs checked.
  auto cplx = [](const array& re, const array& im) {
    return mx::astype(re, mx::complex64) + mx::astype(im, mx::complex64) * array(mx::complex64_t{0.f, 1.f});
  };
  auto parts = [](const array& y) { return A{mx::real(y), mx::imag(y)}; };
  c.push_back({"FFT", "c2c fftn over two axes",
               [cplx, parts](const A& x) { return parts(mx::fft::fftn(cplx(x[0], x[1]), {0, 1})); },
               {rnd({3, 4}, -1, 1, mx::float32), rnd({3, 4}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"FFT", "c2c ifft along the first axis",
               [cplx, parts](const A& x) { return parts(mx::fft::ifft(cplx(x[0], x[1]), 0)); },
               {rnd({4, 3}, -1, 1, mx::float32), rnd({4, 3}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"FFT", "rfftn over two axes (even last size)",
               [parts](const A& x) { return parts(mx::fft::rfftn(x[0], {0, 1})); },
               {rnd({3, 6}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"FFT", "irfft to even and odd sizes",
               [cplx](const A& x) {
                 array z = cplx(x[0], x[1]);
                 return A{mx::fft::irfftn(z, {6}, {1}), mx::fft::irfftn(z, {7}, {1})};
               },
               {rnd({2, 4}, -1, 1, mx::float32), rnd({2, 4}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"FFT", "irfftn over two axes",
               [cplx](const A& x) { return A{mx::fft::irfftn(cplx(x[0], x[1]), {3, 4}, {0, 1})}; },
               {rnd({3, 3}, -1, 1, mx::float32), rnd({3, 3}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"BlockMaskedMM", "block masks on the output and both operands (ragged blocks)",
               [](const A& x) {
                 array mo = array({true, false, true, true}, {2, 2});
                 array ml = array({1.f, 0.5f, 0.f, 2.f}, {2, 2});
                 array mr = array({true, true, false, true}, {2, 2});
                 return A{mx::block_masked_mm(x[0], x[1], 32, mo, ml, mr),
                          mx::block_masked_mm(x[0], x[1], 32, mo)};
               },
               {rnd({40, 36}, -1, 1, mx::float32), rnd({36, 33}, -1, 1, mx::float32)}, 1e-2});
  // ---- sort ----
  c.push_back({"Sort", "sort along the last axis", [](const A& x) { return A{mx::sort(x[0], -1) * 2.0}; },
               {rnd({2, 5}, -1, 1)}});
  c.push_back({"Partition", "partition", [](const A& x) { return A{mx::partition(x[0], 2, -1) * 2.0}; },
               {rnd({2, 5}, -1, 1)}});
  c.push_back({"ArgSort", "argsort as a weight",
               [](const A& x) { return A{mx::astype(mx::argsort(x[0], -1), mx::float64) * x[0]}; }, {rnd({2, 5}, -1, 1)}});
  c.push_back({"ArgPartition", "argpartition as a weight",
               [](const A& x) { return A{mx::astype(mx::argpartition(x[0], 1, -1), mx::float64) * x[0]}; },
               {rnd({2, 5}, -1, 1)}});
  // ---- fast ----
  c.push_back({"RMSNorm", "rms_norm with a weight",
               [](const A& x) { return A{mx::fast::rms_norm(x[0], x[1], 1e-5f)}; },
               {rnd({2, 3, 8}, -1, 1, mx::float32), rnd({8}, 0.5, 1.5, mx::float32)}, 1e-2});
  c.push_back({"RMSNormVJP", "rms_norm_vjp (second derivatives)",
               [](const A& x) { return mx::fast::detail::rms_norm_vjp(x[0], x[1], x[2], 1e-5f); },
               {rnd({2, 8}, -1, 1, mx::float32), rnd({8}, 0.5, 1.5, mx::float32), rnd({2, 8}, -1, 1, mx::float32)},
               1e-2});
  c.push_back({"LayerNorm", "layer_norm with weight and bias",
               [](const A& x) { return A{mx::fast::layer_norm(x[0], x[1], x[2], 1e-5f)}; },
               {rnd({2, 3, 8}, -1, 1, mx::float32), rnd({8}, 0.5, 1.5, mx::float32), rnd({8}, -1, 1, mx::float32)},
               1e-2});
  c.push_back({"LayerNormVJP", "layer_norm_vjp (second derivatives)",
               [](const A& x) { return mx::fast::detail::layer_norm_vjp(x[0], x[1], x[2], x[3], 1e-5f); },
               {rnd({2, 8}, -1, 1, mx::float32), rnd({8}, 0.5, 1.5, mx::float32), rnd({8}, -1, 1, mx::float32),
                rnd({2, 8}, -1, 1, mx::float32)},
               1e-2});
  c.push_back({"RoPE", "rope, traditional and not",
               [](const A& x) {
                 return A{mx::fast::rope(x[0], 8, false, 10000.f, 1.f, 3),
                          mx::fast::rope(x[0], 4, true, 10000.f, 0.5f, 1)};
               },
               {rnd({1, 2, 3, 8}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"ScaledDotProductAttention", "grouped heads, causal",
               [](const A& x) { return A{mx::fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.5f, "causal")}; },
               {rnd({1, 2, 3, 4}, -1, 1, mx::float32), rnd({1, 1, 5, 4}, -1, 1, mx::float32),
                rnd({1, 1, 5, 4}, -1, 1, mx::float32)},
               1e-2});
  c.push_back({"ScaledDotProductAttention", "additive mask and sinks",
               [](const A& x) {
                 return A{mx::fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.7f, "array",
                                                                 rnd({3, 4}, -1, 0, mx::float32, 77), x[3])};
               },
               {rnd({1, 2, 3, 4}, -1, 1, mx::float32), rnd({1, 2, 4, 4}, -1, 1, mx::float32),
                rnd({1, 2, 4, 4}, -1, 1, mx::float32), rnd({2}, -1, 1, mx::float32)},
               1e-2});
  // More queries than keys: the causal offset max(Lk - Lq, 0) is 0 (the diagonal starts at key 0).
  c.push_back({"ScaledDotProductAttention", "causal, more queries than keys",
               [](const A& x) { return A{mx::fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.5f, "causal")}; },
               {rnd({1, 2, 5, 4}, -1, 1, mx::float32), rnd({1, 1, 3, 4}, -1, 1, mx::float32),
                rnd({1, 1, 3, 4}, -1, 1, mx::float32)},
               1e-2});
  // A boolean mask with a row that sees no key: that row averages the values (lowest finite score).
  c.push_back({"ScaledDotProductAttention", "boolean mask with an all-false row",
               [](const A& x) {
                 static const array m = array({true, false, true, true, false, false, false, false, true, true, false, true},
                                              {3, 4}, mx::bool_);
                 return A{mx::fast::scaled_dot_product_attention(x[0], x[1], x[2], 0.7f, "array", m)};
               },
               {rnd({1, 2, 3, 4}, -1, 1, mx::float32), rnd({1, 2, 4, 4}, -1, 1, mx::float32),
                rnd({1, 2, 4, 4}, -1, 1, mx::float32)},
               1e-2});
  // ---- quantized ----
  c.push_back({"QuantizedMatmul", "quantized_matmul with respect to x",
               [](const A& x) {
                 static const std::vector<array> q = mx::quantize(rnd({8, 64}, -1, 1, mx::float32, 99), 64, 4);
                 return A{mx::quantized_matmul(x[0], q[0], q[1], q[2], true, 64, 4)};
               },
               {rnd({2, 64}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"GatherQMM", "gather_qmm with respect to x, both index sets",
               [](const A& x) {
                 static const std::vector<array> q = mx::quantize(rnd({3, 8, 64}, -1, 1, mx::float32, 98), 64, 4);
                 return A{mx::gather_qmm(x[0], q[0], q[1], q[2], array({1, 0, 1}, mx::uint32),
                                         array({2, 0, 2}, mx::uint32), true, 64, 4)};
               },
               {rnd({2, 2, 64}, -1, 1, mx::float32)}, 1e-2});
  // Affine scales and biases are differentiable (the codes are captured constants).
  {
    static const std::vector<array> qt = mx::quantize(rnd({8, 64}, -1, 1, mx::float32, 97), 64, 4);
    c.push_back({"QuantizedMatmul", "quantized_matmul (transposed) with respect to x, scales and biases",
                 [](const A& x) { return A{mx::quantized_matmul(x[0], qt[0], x[1], x[2], true, 64, 4)}; },
                 {rnd({2, 3, 64}, -1, 1, mx::float32), qt[1], qt[2]}, 1e-2});
    static const std::vector<array> qn = mx::quantize(rnd({6, 64}, -1, 1, mx::float32, 96), 32, 8);
    c.push_back({"QuantizedMatmul", "quantized_matmul (not transposed) with respect to x, scales and biases",
                 [](const A& x) { return A{mx::quantized_matmul(x[0], qn[0], x[1], x[2], false, 32, 8)}; },
                 {rnd({3, 6}, -1, 1, mx::float32), qn[1], qn[2]}, 1e-2});
    static const std::vector<array> qg = mx::quantize(rnd({3, 8, 64}, -1, 1, mx::float32, 95), 64, 4);
    c.push_back({"GatherQMM", "gather_qmm with respect to x, scales and biases (a matrix used twice, one unused)",
                 [](const A& x) {
                   return A{mx::gather_qmm(x[0], qg[0], x[1], x[2], array({1, 0, 1}, mx::uint32),
                                           array({2, 0, 2}, mx::uint32), true, 64, 4)};
                 },
                 {rnd({2, 2, 64}, -1, 1, mx::float32), qg[1], qg[2]}, 1e-2});
    static const std::vector<array> qh = mx::quantize(rnd({2, 4, 32}, -1, 1, mx::float32, 94), 32, 4);
    c.push_back({"GatherQMM", "gather_qmm (not transposed) with respect to x, scales and biases",
                 [](const A& x) {
                   return A{mx::gather_qmm(x[0], qh[0], x[1], x[2], array({0, 0, 1}, mx::uint32),
                                           array({1, 0, 1}, mx::uint32), false, 32, 4)};
                 },
                 {rnd({2, 3, 4}, -1, 1, mx::float32), qh[1], qh[2]}, 1e-2});
  }
  // ---- misc ----
  c.push_back({"Depends", "depends: the real inputs pass through",
               [](const A& x) {
                 auto d = mx::depends({x[0] * 2.0, x[1]}, {x[0] * 3.0});
                 return A{d[0] * d[1]};
               },
               {rnd({2, 3}, -1, 1), rnd({2, 3}, -1, 1)}});
  c.push_back({"CustomTransforms", "custom_vjp with the true rule (jvp from the function)",
               [](const A& x) {
                 static const auto f = mx::custom_vjp(
                     [](const A& in) { return A{mx::sin(in[0]) * in[1], in[1] * 2.0}; },
                     [](const A& p, const A& cot, const A&) {
                       return A{cot[0] * mx::cos(p[0]) * p[1], cot[0] * mx::sin(p[0]) + cot[1] * 2.0};
                     });
                 return f(x);
               },
               {rnd({2, 3}, -1, 1, mx::float32), rnd({2, 3}, -1, 1, mx::float32)}, 1e-2});
  c.push_back({"Compiled", "compile's fused group, through its members",
               [](const A& x) {
                 static const auto f = mx::compile([](const A& in) {
                   return A{mx::sin(in[0]) * in[1] + mx::exp(in[1] * in[0]), mx::square(in[0])};
                 });
                 return f(x);
               },
               // float32: MLX's CPU kernels of sin and exp compute float64 at float32 precision.
               {rnd({2, 3}, -1, 1, mx::float32), rnd({2, 3}, -1, 1, mx::float32)}, 1e-2});
  // An imported function's call: through the record's own nodes. A signature's first call replays the
  // record as a graph; later ones build the ImportedCall node.
  c.push_back({"ImportedCall", "an imported function's call, through its record's nodes",
               [](const A& x) {
                 static const mx::ImportedFunction g = [] {
                   const std::string path =
                       (std::filesystem::temp_directory_path() / "kiln_autodiff_imported_call.mlxfn").string();
                   mx::export_function(path, [](const mx::Args& in) {
                     return A{mx::sin(in[0]) * in[1] + mx::exp(in[1] * in[0]), mx::sum(mx::square(in[0]), -1, true)};
                   }, {mx::zeros({2, 3}), mx::zeros({2, 3})});
                   return mx::import_function(path);  // the file stays: constants load lazily from it
                 }();
                 g(x);
                 return g(x);
               },
               // float32, as the Compiled case: the CPU's sin and exp of float64 have float32 precision.
               {rnd({2, 3}, -1, 1, mx::float32), rnd({2, 3}, -1, 1, mx::float32)}, 1e-2});
  return c;
}

double dot_all(const std::vector<array>& a, const std::vector<array>& b) {
  double acc = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    auto x = test_util::vals<double>(mx::astype(a[k], mx::float64));
    auto y = test_util::vals<double>(mx::astype(b[k], mx::float64));
    for (size_t i = 0; i < x.size(); ++i) acc += x[i] * y[i];
  }
  return acc;
}

class AutodiffCheck : public ::testing::TestWithParam<size_t> {};

TEST_P(AutodiffCheck, VjpAndJvpMatchFiniteDifferences) {
  const Case& c = cases()[GetParam()];
  SCOPED_TRACE(c.primitive + ": " + c.label);
  auto outs = c.f(c.inputs);
  auto rows = rows_in(outs);
  ASSERT_NE(std::find(rows.begin(), rows.end(), c.primitive), rows.end())
      << "the case's graph has no " << c.primitive << " node";
  const bool f64 = c.inputs[0].dtype() == mx::float64;
  const double h = f64 ? 1e-5 : 3e-3;
  for (unsigned trial = 0; trial < 2; ++trial) {
    std::vector<array> w, v;
    for (auto& o : outs) w.push_back(mx::astype(rnd(o.shape(), -1, 1, mx::float64, 500 + trial), o.dtype()));
    for (auto& x : c.inputs) v.push_back(mx::astype(rnd(x.shape(), -1, 1, mx::float64, 700 + trial), x.dtype()));
    auto phi = [&](double t) {
      std::vector<array> xs;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        xs.push_back(mx::astype(mx::astype(c.inputs[i], mx::float64) + mx::astype(v[i], mx::float64) * t,
                                c.inputs[i].dtype()));
      }
      return dot_all(c.f(xs), w);
    };
    const double fd = (phi(h) - phi(-h)) / (2 * h);
    auto [vouts, grads] = mx::vjp(c.f, c.inputs, w);
    ASSERT_EQ(grads.size(), c.inputs.size());
    for (size_t i = 0; i < grads.size(); ++i) EXPECT_EQ(grads[i].shape(), c.inputs[i].shape()) << "vjp " << i;
    const double rev = dot_all(grads, v);
    auto [jouts, tans] = mx::jvp(c.f, c.inputs, v);
    ASSERT_EQ(tans.size(), outs.size());
    for (size_t k = 0; k < tans.size(); ++k) EXPECT_EQ(tans[k].shape(), outs[k].shape()) << "jvp " << k;
    const double fwd = dot_all(tans, w);
    const double scale = 1 + std::abs(fd);
    EXPECT_NEAR(rev, fd, c.tol * scale) << "vjp, trial " << trial;
    EXPECT_NEAR(fwd, fd, c.tol * scale) << "jvp, trial " << trial;
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  return cases()[info.param].primitive + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Rows, AutodiffCheck, ::testing::Range<size_t>(0, cases().size()), case_name);

}  // namespace

const std::vector<Case>& cases() {
  static const std::vector<Case> all = build();
  return all;
}

const std::vector<std::pair<std::string, std::string>>& dedicated() {
  static const std::vector<std::pair<std::string, std::string>> d = {
      {"StopGradient", "its derivative is zero by definition: AutodiffTransforms.StopGradient*"},
  };
  return d;
}

std::vector<std::string> rows_in(const std::vector<mx::array>& outs) {
  std::vector<std::string> names;
  test_util::for_each_node(outs, [&](const mx::array& a) { names.push_back(a.node()->def->name); });
  return names;
}

}  // namespace autodiff_test
