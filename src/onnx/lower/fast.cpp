// The fused rows (src/primitives/fast/): RMSNorm, LayerNorm, their VJPs, RoPE and
// ScaledDotProductAttention, in float32 (half types computed in float32 and rounded once, as kiln's and
// MLX's kernels accumulate them). As ONNX's own ops where the opset has them and they express the case
// exactly: LayerNormalization (opset 17, so every supported opset), RMSNormalization, RotaryEmbedding
// and Attention (opset 23); as their decompositions otherwise (the VJPs always).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

std::string f32(Context& c, const Tensor& t) { return t.dtype == float32 ? t.name : c.cast(t.name, float32); }

std::string mean_last(Context& c, const std::string& x) {
  return c.op("ReduceMean", {x, c.ints({-1})}, {{"keepdims", 1}});
}

// The sum of `x` (of `shape`) down to the shape of w (the trailing dims; a scalar w sums everything).
std::string sum_to(Context& c, const std::string& x, const Shape& shape, const Shape& w) {
  std::vector<int64_t> ax;
  const size_t lead = shape.size() - std::min(shape.size(), w.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < lead || (w.size() && w[d - lead] == 1 && shape[d] != 1)) ax.push_back(static_cast<int64_t>(d));
  }
  std::string r = ax.empty() ? x : c.op("ReduceSum", {x, c.ints(ax)}, {{"keepdims", 1}});
  return c.op("Reshape", {r, c.ints(dims(w))});
}

// A norm's weight or bias (a scalar when MLX's optional one was not given, else of the last axis's
// size) as a vector of the last axis's size, the shape ONNX's normalization ops take.
// In a shapeless function the size is the input's at run time (its last dimension).
std::string per_feature(Context& c, const std::string& w, const Tensor& tw, const Tensor& tx) {
  if (c.shapeless()) {
    if (tw.ndim() == 1 && tw.shape[0] != 1) return w;  // MLX checked it against x's last axis
    return c.op("Expand", {w, c.op("Shape", {tx.name}, {{"start", -1}})});
  }
  const int64_t D = tx.shape.back();
  if (tw.ndim() == 1 && tw.shape[0] == D) return w;
  return c.op("Expand", {w, c.ints({D})});
}

void rms_norm(Context& c) {
  const float eps = c.float_arg(0);
  std::string x = f32(c, c.in.at(0)), w = f32(c, c.in.at(1));
  if (c.opset() >= 23) {
    const std::string scale = per_feature(c, w, c.in[1], c.in[0]);
    store(c, 0, c.op("RMSNormalization", {x, scale}, {{"axis", -1}, {"epsilon", eps}, {"stash_type", 1}}), float32);
    return;
  }
  std::string r = c.op("Reciprocal", {c.op("Sqrt", {c.op("Add", {mean_last(c, c.op("Mul", {x, x})),
                                                                  c.scalar(eps, float32)})})});
  store(c, 0, c.op("Mul", {c.op("Mul", {x, r}), w}), float32);
}

// LayerNormalization exists from opset 17, older than every opset kiln writes (18 on), so LayerNorm has
// no decomposition. It normalizes the axes from `axis` on; axis -1 is the one MLX normalizes, and its
// epsilon is added to the variance as MLX's is.
void layer_norm(Context& c) {
  const float eps = c.float_arg(0);
  std::string x = f32(c, c.in.at(0)), w = f32(c, c.in.at(1)), b = f32(c, c.in.at(2));
  const std::string scale = per_feature(c, w, c.in[1], c.in[0]), bias = per_feature(c, b, c.in[2], c.in[0]);
  store(c, 0, c.op("LayerNormalization", {x, scale, bias}, {{"axis", -1}, {"epsilon", eps}, {"stash_type", 1}}),
        float32);
}

void rms_norm_vjp(Context& c) {
  const float eps = c.float_arg(0);
  std::string x = f32(c, c.in.at(0)), w = f32(c, c.in.at(1)), g = f32(c, c.in.at(2));
  std::string r = c.op("Reciprocal", {c.op("Sqrt", {c.op("Add", {mean_last(c, c.op("Mul", {x, x})),
                                                                  c.scalar(eps, float32)})})});
  std::string n = c.op("Mul", {x, r});
  std::string gw = c.op("Mul", {g, w});
  std::string dx = c.op("Mul", {r, c.op("Sub", {gw, c.op("Mul", {n, mean_last(c, c.op("Mul", {gw, n}))})})});
  store(c, 0, dx, float32);
  store(c, 1, sum_to(c, c.op("Mul", {g, n}), c.in[0].shape, c.in[1].shape), float32);
}

void layer_norm_vjp(Context& c) {
  const float eps = c.float_arg(0);
  std::string x = f32(c, c.in.at(0)), w = f32(c, c.in.at(1)), g = f32(c, c.in.at(3));
  std::string d = c.op("Sub", {x, mean_last(c, x)});
  std::string r = c.op("Reciprocal", {c.op("Sqrt", {c.op("Add", {mean_last(c, c.op("Mul", {d, d})),
                                                                  c.scalar(eps, float32)})})});
  std::string xh = c.op("Mul", {d, r});
  std::string gw = c.op("Mul", {g, w});
  std::string inner = c.op("Sub", {c.op("Sub", {gw, mean_last(c, gw)}), c.op("Mul", {xh, mean_last(c, c.op("Mul", {gw, xh}))})});
  store(c, 0, c.op("Mul", {r, inner}), float32);
  store(c, 1, sum_to(c, c.op("Mul", {g, xh}), c.in[0].shape, c.in[1].shape), float32);
  store(c, 2, sum_to(c, g, c.in[0].shape, c.in.at(2).shape), float32);
}

void rope(Context& c) {
  const int rd = c.int_arg(0);
  const bool traditional = c.bool_arg(1);
  const float base = c.float_arg(2), scale = c.float_arg(3);
  const bool forward = c.bool_arg(4);
  const Tensor& tx = c.in.at(0);
  const int n = tx.ndim();
  // In a shapeless function the sequence length and the head size are the input's at run time: the
  // positions come from a Range, and the part past `rd` is always carried (it may be empty).
  const Dims L = dim_of(c, tx, n - 2);
  const bool tail = c.shapeless() || rd < tx.shape[n - 1];
  const int half = rd / 2;
  std::string x = f32(c, tx);
  // Positions (offset + t) * scale, shaped (B or 1, 1..., L, 1).
  std::string tt;
  if (L.is_known()) {
    std::vector<float> t(static_cast<size_t>(L.known[0]));
    for (int64_t i = 0; i < L.known[0]; ++i) t[i] = static_cast<float>(i);
    tt = c.constant(array(t.data(), Shape{static_cast<int32_t>(L.known[0]), 1}));
  } else {
    std::string r = c.op("Range", {c.scalar(0, float32), c.cast(scalar_of(c, L), float32), c.scalar(1, float32)});
    tt = c.op("Unsqueeze", {r, c.ints({-1})});
  }
  std::vector<int64_t> oshape(n, 1);
  oshape[0] = -1;
  std::string off = c.op("Reshape", {c.cast(c.in.at(1).name, float32), c.ints(oshape)});
  std::string pos = c.op("Mul", {c.op("Add", {tt, off}), c.scalar(scale, float32)});
  std::string inv;
  if (c.in.size() == 3) {
    inv = c.op("Reciprocal", {c.in[2].name});
  } else {
    std::vector<float> f(half);
    const float k = std::log(base) / static_cast<float>(half);
    for (int i = 0; i < half; ++i) f[i] = std::exp(static_cast<float>(-i) * k);
    inv = c.constant(array(f.data(), Shape{half}));
  }
  std::string th = c.op("Mul", {pos, inv});
  if (c.opset() >= 23) {
    // RotaryEmbedding on (batch, heads, L, D): MLX's leading axes after the first (the one a vector
    // offset runs along) folded into the heads axis. Its caches are (batch, L, rd / 2), computed here
    // from the positions as the decomposition's angles; interleaved pairs are MLX's traditional layout,
    // and the inverse rotation (forward false, the VJP) is the rotation by the negated sine.
    const Dims B = dim_of(c, tx, 0);
    const Dims cache = cat_dims(c, {B, L, fixed_dims({half})});
    std::string angles = c.op("Expand", {reshape_to(c, th, cat_dims(c, {fixed_dims({-1}), L, fixed_dims({half})})),
                                         value_of(c, cache)});
    std::string cs = c.op("Cos", {angles}), sn = c.op("Sin", {angles});
    if (!forward) sn = c.op("Neg", {sn});
    std::string x4 = n == 4 ? x : c.op("Reshape", {x, value_of(c, cat_dims(c, {B, fixed_dims({-1}), dims_of(c, tx, n - 2)}))});
    Attrs attrs{{"interleaved", traditional ? 1 : 0}};
    if (tail) attrs.push_back({"rotary_embedding_dim", static_cast<int64_t>(rd)});
    std::string r = c.op("RotaryEmbedding", {x4, cs, sn}, attrs);
    if (n != 4) r = reshape_to(c, r, dims_of(c, tx));
    store(c, 0, r, float32);
    return;
  }
  std::string cs = c.op("Cos", {th}), sn = c.op("Sin", {th});
  std::string x1, x2;
  auto last = [&](const std::string& v, int64_t b, int64_t e) {
    return c.op("Slice", {v, c.ints({b}), c.ints({e}), c.ints({-1})});
  };
  const Dims lead = dims_of(c, tx, 0, n - 1);
  if (traditional) {
    std::string p = reshape_to(c, last(x, 0, rd), cat_dims(c, {lead, fixed_dims({half, 2})}));
    x1 = c.op("Squeeze", {last(p, 0, 1), c.ints({-1})});
    x2 = c.op("Squeeze", {last(p, 1, 2), c.ints({-1})});
  } else {
    x1 = last(x, 0, half);
    x2 = last(x, half, rd);
  }
  std::string o1, o2;
  if (forward) {
    o1 = c.op("Sub", {c.op("Mul", {x1, cs}), c.op("Mul", {x2, sn})});
    o2 = c.op("Add", {c.op("Mul", {x1, sn}), c.op("Mul", {x2, cs})});
  } else {
    o1 = c.op("Add", {c.op("Mul", {x2, sn}), c.op("Mul", {x1, cs})});
    o2 = c.op("Sub", {c.op("Mul", {x2, cs}), c.op("Mul", {x1, sn})});
  }
  std::string rot;
  if (traditional) {
    std::string both = c.op("Concat", {c.op("Unsqueeze", {o1, c.ints({-1})}), c.op("Unsqueeze", {o2, c.ints({-1})})},
                            {{"axis", -1}});
    rot = reshape_to(c, both, cat_dims(c, {lead, fixed_dims({rd})}));
  } else {
    rot = c.op("Concat", {o1, o2}, {{"axis", -1}});
  }
  if (tail) rot = c.op("Concat", {rot, last(x, rd, INT64_MAX)}, {{"axis", -1}});
  store(c, 0, rot, float32);
}

// MLX's causal mask: query i attends key j when j <= i + max(Lk - Lq, 0) (aligned bottom-right when
// there are fewer queries than keys, top-left otherwise, so that no row is fully masked). A constant
// when the lengths are known, computed from Range at run time in a shapeless function.
std::string causal_mask(Context& c, const Dims& lq, const Dims& lk) {
  if (lq.is_known() && lk.is_known()) {
    const int64_t Lq = lq.known[0], Lk = lk.known[0];
    const int64_t off = std::max<int64_t>(Lk - Lq, 0);
    std::vector<uint8_t> allow(static_cast<size_t>(Lq * Lk));
    for (int64_t i = 0; i < Lq; ++i) {
      for (int64_t j = 0; j < Lk; ++j) allow[i * Lk + j] = j <= i + off;
    }
    return c.constant(astype(array(allow.data(), Shape{static_cast<int32_t>(Lq), static_cast<int32_t>(Lk)}), bool_));
  }
  const std::string zero = c.ints({0}, true), one = c.ints({1}, true);
  std::string nq = scalar_of(c, lq), nk = scalar_of(c, lk);
  std::string i = c.op("Unsqueeze", {c.op("Range", {zero, nq, one}), c.ints({-1})});
  std::string j = c.op("Unsqueeze", {c.op("Range", {zero, nk, one}), c.ints({0})});
  std::string off = c.op("Max", {c.op("Sub", {nk, nq}), zero});
  return c.op("LessOrEqual", {j, c.op("Add", {i, off})});
}

void sdpa(Context& c) {
  const float scale = c.float_arg(0);
  const bool causal = c.bool_arg(1), has_sinks = c.bool_arg(2), lse = c.bool_arg(3);
  if (lse) c.refuse("the logsumexp output of attention (only written under gradient tracing)");
  const Tensor& tq = c.in.at(0);
  const Tensor& tk = c.in.at(1);
  const Tensor& tv = c.in.at(2);
  const size_t nmask = c.in.size() - 3 - (has_sinks ? 1 : 0);
  // Sizes known here, or in a shapeless function read at run time (Dims).
  const Dims Lq = dim_of(c, tq, 2), Lk = dim_of(c, tk, 2);
  std::string q = f32(c, tq), k = f32(c, tk), v = f32(c, tv);
  if (c.opset() >= 23 && !has_sinks) {
    // Attention (opset 23) takes grouped-query heads and the scale as MLX does. A boolean mask goes in
    // as the additive 0 / -1e30: ONNX reads false as -inf, and ONNX Runtime reads the lowest float as
    // masked too, both giving a fully masked row zeros; -1e30 leaves every score of such a row equal
    // (for scores below 1e22 in magnitude), so the row attends every key equally, as in MLX. Its is_causal is the top-left triangle,
    // MLX's when Lq >= Lk; for Lq < Lk MLX's bottom-right one is given as a mask. ONNX defines a row
    // whose scores are all -inf (an additive mask of -inf everywhere) as zeros where MLX's softmax
    // gives NaN: such rows are set to NaN after it. Sinks it has not: they keep the decomposition.
    std::vector<std::string> ins{q, k, v};
    Attrs attrs{{"scale", scale}};
    std::string dead;
    if (nmask == 1) {
      const Tensor& m = c.in.at(3);
      if (m.dtype == bool_) {
        ins.push_back(c.op("Where", {m.name, c.scalar(0, float32), c.scalar(-1e30, float32)}));
      } else {
        const std::string add = f32(c, m);
        ins.push_back(add);
        dead = c.op("Equal", {c.op("ReduceMax", {add, c.ints({-1})}, {{"keepdims", 1}}),
                              c.scalar(-std::numeric_limits<float>::infinity(), float32)});
      }
    }
    if (causal && Lq.is_known() && Lk.is_known() && Lq.known[0] >= Lk.known[0]) {
      attrs.push_back({"is_causal", 1});
    } else if (causal) {
      ins.push_back(causal_mask(c, Lq, Lk));
    }
    std::string o = c.op("Attention", ins, attrs);
    if (!dead.empty()) o = c.op("Where", {dead, c.scalar(std::numeric_limits<float>::quiet_NaN(), float32), o});
    store(c, 0, o, float32);
    return;
  }
  const Dims Hq = dim_of(c, tq, 1), Hk = dim_of(c, tk, 1);
  if (!Hq.is_known() || Hq.known != Hk.known) {
    // Grouped-query heads: each key / value head repeated for its Hq / Hk query heads.
    const Dims rep = dims_op(c, "Div", Hq, Hk);
    auto repeat = [&](const std::string& a, const Tensor& t) {
      const Dims b = dim_of(c, t, 0), ld = dims_of(c, t, 2);
      std::string r = c.op("Unsqueeze", {a, c.ints({2})});
      r = c.op("Expand", {r, value_of(c, cat_dims(c, {b, Hk, rep, ld}))});
      return reshape_to(c, r, cat_dims(c, {b, Hq, ld}));
    };
    k = repeat(k, tk);
    v = repeat(v, tv);
  }
  std::string s = c.op("MatMul", {c.op("Mul", {q, c.scalar(scale, float32)}),
                                  c.op("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})});
  const std::string ninf = c.scalar(-std::numeric_limits<float>::infinity(), float32);
  if (nmask == 1) {
    const Tensor& m = c.in.at(3);
    if (m.dtype == bool_) {
      // False entries are the lowest finite score, not -inf (kiln's kernel and MLX's): a row masked
      // everywhere attends every key equally.
      s = c.op("Where", {m.name, s, c.scalar(std::numeric_limits<float>::lowest(), float32)});
    } else {
      s = c.op("Add", {s, f32(c, m)});
    }
  }
  if (causal) {
    s = c.op("Where", {causal_mask(c, Lq, Lk), s, ninf});
  }
  std::string p;
  if (has_sinks) {
    // One extra logit per head, in the softmax's normalization only.
    std::string sink = c.op("Reshape", {f32(c, c.in.back()), c.ints({1, -1, 1, 1})});
    sink = c.op("Expand", {sink, value_of(c, cat_dims(c, {dims_of(c, tq, 0, 3), fixed_dims({1})}))});
    std::string all = c.op("Softmax", {c.op("Concat", {s, sink}, {{"axis", -1}})}, {{"axis", -1}});
    p = c.op("Slice", {all, c.ints({0}), value_of(c, Lk), c.ints({-1})});
  } else {
    p = c.op("Softmax", {s}, {{"axis", -1}});
  }
  store(c, 0, c.op("MatMul", {p, v}), float32);
}

}  // namespace

void register_fast_onnx(LoweringTable& table) {
  table.add({{"RMSNorm", rms_norm},
             {"LayerNorm", layer_norm},
             {"RMSNormVJP", rms_norm_vjp},
             {"LayerNormVJP", layer_norm_vjp},
             {"RoPE", rope},
             {"ScaledDotProductAttention", sdpa}});
  // The norms read no recorded shape in shapeless functions (their axis is the last); RoPE and
  // attention take their sizes as Dims. The VJPs have no shape rule for shapeless replay in MLX.
  table.polymorphic({"RMSNorm", "LayerNorm", "RoPE", "ScaledDotProductAttention"});
}

}  // namespace kiln::onnx_export
