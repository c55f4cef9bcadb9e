// Reduction rows (src/primitives/reduce/): Reduce (keep-dims form), ArgReduce, LogSumExp, Softmax,
// NumberOfElements and Scan (CumSum; the other scans through a triangular mask and a reduction).
#include <cmath>
#include <limits>

#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

// The dtype ONNX Runtime's reductions are computed in: half types in float32, small and unsigned
// integers in int64 (sums, products, minima and maxima wrap or compare the same modulo the width).
Dtype reduce_type(Dtype t) {
  if (is_half(t)) return float32;
  if (t == int8 || t == int16 || t == uint8 || t == uint16 || t == uint32 || t == bool_) return int64;
  return t;
}

void reduce(Context& c) {
  no_complex(c);
  const int type = c.int_arg(0);
  const auto& axes = c.ints_arg(1);
  const Tensor& x = c.in.at(0);
  if (axes.empty()) {
    c.op_to(0, "Cast", {x.name}, {{"to", onnx_type(c.out.at(0).dtype)}});
    return;
  }
  static const char* ops[] = {"ReduceMin", "ReduceMax", "ReduceSum", "ReduceProd", "ReduceMin", "ReduceMax"};
  if (type < 0 || type > 5) c.refuse("unknown reduction type " + std::to_string(type));
  // And / Or over bool: the minimum / maximum of 0 and 1.
  const Dtype t = reduce_type(type <= 1 ? bool_ : c.out.at(0).dtype);
  std::string v = x.dtype == t ? x.name : c.cast(x.name, t);
  std::vector<int64_t> ax;
  for (auto a : axes) ax.push_back(axis(a, x.ndim()));
  store(c, 0, c.op(ops[type], {v, c.ints(ax)}, {{"keepdims", 1}}), t);
}

void arg_reduce(Context& c) {
  no_complex(c);
  const Tensor& x = c.in.at(0);
  const Dtype t = reduce_type(x.dtype);
  std::string v = x.dtype == t ? x.name : c.cast(x.name, t);
  const char* op = c.int_arg(0) == 0 ? "ArgMin" : "ArgMax";
  std::string r = c.op(op, {v}, {{"axis", static_cast<int64_t>(c.int_arg(1))}, {"keepdims", 1}});
  store(c, 0, r, int64);
}

// log(sum(exp(x - m))) + m over `ax` with keepdims, m the maximum (an infinite m is the result).
std::string logsumexp(Context& c, const std::string& x, const std::vector<int64_t>& ax) {
  std::string axes = c.ints(ax);
  std::string m = c.op("ReduceMax", {x, axes}, {{"keepdims", 1}});
  std::string safe = c.op("Where", {c.op("IsInf", {m}), c.op("Sub", {m, m}), m});  // 0 where m is infinite
  std::string s = c.op("ReduceSum", {c.op("Exp", {c.op("Sub", {x, safe})}), axes}, {{"keepdims", 1}});
  std::string r = c.op("Add", {c.op("Log", {s}), safe});
  return c.op("Where", {c.op("IsInf", {m}), m, r});
}

void logsumexp_row(Context& c) {
  no_complex(c);
  const Tensor& x = c.in.at(0);
  const Dtype t = compute_type(c.out.at(0).dtype);
  std::string v = x.dtype == t ? x.name : c.cast(x.name, t);
  store(c, 0, logsumexp(c, v, {x.ndim() - 1}), t);
}

void softmax(Context& c) {
  no_complex(c);
  const Tensor& x = c.in.at(0);
  const Dtype t = compute_type(c.out.at(0).dtype);
  std::string v = x.dtype == t ? x.name : c.cast(x.name, t);
  store(c, 0, c.op("Softmax", {v}, {{"axis", -1}}), t);
}

void number_of_elements(Context& c) {
  const auto& axes = c.ints_arg(0);
  const bool inverted = c.bool_arg(1);
  const Dtype t = c.arg<Dtype>(2);
  std::vector<int64_t> ax;
  for (auto a : axes) ax.push_back(axis(a, c.in.at(0).ndim()));
  if (!c.shapeless()) {
    double n = 1;
    for (auto a : ax) n *= c.in[0].shape.at(a);
    c.set_output(0, c.constant(astype(array(inverted ? 1.0 / n : n, float64), t)));
    return;
  }
  // The count in float64 (and its reciprocal there), then one rounding to the dtype, as MLX does.
  std::string sizes = c.op("Gather", {c.op("Shape", {c.in[0].name}), c.ints(ax)}, {{"axis", 0}});
  std::string n = c.cast(c.op("ReduceProd", {sizes}, {{"keepdims", 0}}), float64);
  if (inverted) n = c.op("Reciprocal", {n});
  c.op_to(0, "Cast", {n}, {{"to", onnx_type(t)}});
}

// The identity of a scan's combination in dtype t (what an empty window gives).
double scan_identity(int type, Dtype t) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (type) {
    case 0:  // max
      if (is_float(t)) return -inf;
      if (t == int64) return static_cast<double>(std::numeric_limits<int64_t>::min());
      return t == uint64 ? 0.0 : static_cast<double>(std::numeric_limits<int64_t>::min());
    case 1:  // min
      if (is_float(t)) return inf;
      return t == uint64 ? 1.8446744073709552e19 : static_cast<double>(std::numeric_limits<int64_t>::max());
    case 2: return 0;
    case 3: return 1;
    default: return -inf;  // logaddexp
  }
}

void scan(Context& c) {
  no_complex(c);
  const int type = c.int_arg(0);
  const Tensor& x = c.in.at(0);
  const int nd = x.ndim();
  const int64_t ax = axis(c.int_arg(1), nd);
  const bool reverse = c.bool_arg(2), inclusive = c.bool_arg(3);
  const Dtype t = reduce_type(c.out.at(0).dtype);
  std::string v = x.dtype == t ? x.name : c.cast(x.name, t);
  if (type == 2) {
    store(c, 0,
          c.op("CumSum", {v, c.ints({ax}, true)}, {{"exclusive", inclusive ? 0 : 1}, {"reverse", reverse ? 1 : 0}}), t);
    return;
  }
  if (type < 0 || type > 4) c.refuse("unknown scan type " + std::to_string(type));
  // No cumulative max / min / product / logaddexp in ONNX: out[i] reduces x over the window of i, a
  // Where over an (L, L) mask of the axis moved last.
  const int64_t len = x.shape.at(ax);
  if (len > 2048) c.refuse("a " + std::string(type == 3 ? "cumprod" : "cummax/cummin/logcumsumexp") +
                           " over an axis of " + std::to_string(len) + " (the L x L window mask is too large)");
  std::vector<int64_t> perm;
  for (int d = 0; d < nd; ++d) {
    if (d != ax) perm.push_back(d);
  }
  perm.push_back(ax);
  std::vector<int64_t> inv(nd);
  for (int d = 0; d < nd; ++d) inv[perm[d]] = d;
  std::string moved = c.op("Transpose", {v}, {{"perm", perm}});
  std::string un = c.op("Unsqueeze", {moved, c.ints({-2})});
  std::vector<int64_t> big;
  for (int d = 0; d < nd; ++d) big.push_back(x.shape[perm[d]]);
  big.insert(big.end() - 1, len);
  std::string wide = c.op("Expand", {un, c.ints(big)});
  std::vector<uint8_t> mask(static_cast<size_t>(len * len));
  for (int64_t i = 0; i < len; ++i) {
    for (int64_t j = 0; j < len; ++j) {
      const bool in = reverse ? (inclusive ? j >= i : j > i) : (inclusive ? j <= i : j < i);
      mask[i * len + j] = in;
    }
  }
  std::string m = c.constant(astype(array(mask.data(), Shape{static_cast<int32_t>(len), static_cast<int32_t>(len)}),
                                    bool_));
  std::string masked = c.op("Where", {m, wide, c.scalar(scan_identity(type, t), t)});
  std::string r;
  if (type == 4) {
    r = c.op("Squeeze", {logsumexp(c, masked, {nd}), c.ints({-1})});
  } else {
    static const char* ops[] = {"ReduceMax", "ReduceMin", "", "ReduceProd"};
    r = c.op(ops[type], {masked, c.ints({-1})}, {{"keepdims", 0}});
  }
  store(c, 0, c.op("Transpose", {r}, {{"perm", inv}}), t);
}

}  // namespace

void register_reduce_onnx(LoweringTable& table) {
  table.add({{"Reduce", reduce},
             {"ArgReduce", arg_reduce},
             {"LogSumExp", logsumexp_row},
             {"Softmax", softmax},
             {"NumberOfElements", number_of_elements},
             {"Scan", scan}});
  table.polymorphic({"Reduce", "ArgReduce", "LogSumExp", "Softmax", "NumberOfElements"});
}

}  // namespace kiln::onnx_export
