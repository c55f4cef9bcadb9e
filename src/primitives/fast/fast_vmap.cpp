// Batching rules of the fast family (vmap_rules.h).
//
// RMSNorm / LayerNorm normalize the last axis and take the others as rows: with shared parameters the
// batch axis is one more row axis; with mapped parameters the normalization runs without them and the
// per-example scale (and shift) is applied after. Their VJP rows sum the parameter gradients over all
// rows, so the batched parameter gradients are summed per example with kiln's ops, and dx comes from the
// row with the weight folded into the cotangent. RoPE and ScaledDotProductAttention merge the batch
// into their first axis (RoPE's per-entry offsets are repeated accordingly; RoPE with mapped frequencies
// is written with kiln's ops; attention with mapped sinks merges the batch into the heads).
#include <optional>

#include "kiln/fast.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

// Keeps the batch axis unless it is the normalized (last) one.
Result rows_rule(const Args& a) {
  const int k = a.axes[0];
  std::vector<array> ins = a.inputs;
  int out_axis = k;
  if (!a.mapped(0) || k == static_cast<int>(a.inputs[0].ndim()) - 1) {
    ins[0] = a.front(0);
    out_axis = 0;
  }
  return {rebuild(a, a.state(), ins), {out_axis}};
}

// A parameter batched in front and aligned to broadcast against x (B, ..., D); unmapped ones unchanged.
array param(const Args& a, size_t i, int rank) { return a.mapped(i) ? align_front(a.front(i), rank) : a.inputs[i]; }

Result rms_norm_rule(const Args& a) {
  if (!a.mapped(1)) return rows_rule(a);
  const float eps = a.state().f(1);
  const array x = a.front(0);
  const int rank = static_cast<int>(x.ndim()) - 1;
  return {{multiply(fast::rms_norm(x, std::nullopt, eps), param(a, 1, rank))}, {0}};
}

Result layer_norm_rule(const Args& a) {
  if (!a.mapped(1) && !a.mapped(2)) return rows_rule(a);
  const float eps = a.state().f(1);
  const array x = a.front(0);
  const int rank = static_cast<int>(x.ndim()) - 1;
  array y = fast::layer_norm(x, std::nullopt, std::nullopt, eps);
  return {{add(multiply(y, param(a, 1, rank)), param(a, 2, rank))}, {0}};
}

// The sum over every axis of t (B, ..., D) but the batch and, for a vector parameter, the last.
array per_example_sum(const array& t, bool vector_param) {
  std::vector<int> axes;
  const int nd = static_cast<int>(t.ndim());
  for (int d = 1; d < nd - (vector_param ? 1 : 0); ++d) axes.push_back(d);
  return axes.empty() ? t : sum(t, axes);
}

Result rms_norm_vjp_rule(const Args& a) {
  const float eps = a.state().f(1);
  const array x = a.front(0), g = a.front(2);
  const int rank = static_cast<int>(x.ndim()) - 1;
  const Shape& ws = a.node.inputs[1].shape();
  const Dtype wt = a.node.specs[1].dtype;
  array dx = fast::detail::rms_norm_vjp(x, ones(ws, wt), multiply(g, param(a, 1, rank)), eps)[0];
  array dw = zeros({a.size}, wt);
  if (!ws.empty()) {
    array n = rsqrt(add(mean(square(x), -1, true), array(eps, x.dtype())));
    dw = astype(per_example_sum(multiply(multiply(g, x), n), true), wt);
  }
  return {{dx, dw}, {0, 0}};
}

Result layer_norm_vjp_rule(const Args& a) {
  const float eps = a.state().f(1);
  const array x = a.front(0), g = a.front(3);
  const int rank = static_cast<int>(x.ndim()) - 1;
  const Shape& ws = a.node.inputs[1].shape();
  const Shape& bs = a.node.inputs[2].shape();
  const Dtype wt = a.node.specs[1].dtype, bt = a.node.specs[2].dtype;
  array dx = fast::detail::layer_norm_vjp(x, ones(ws, wt), zeros(bs, bt), multiply(g, param(a, 1, rank)), eps)[0];
  array dw = zeros({a.size}, wt), db = zeros({a.size}, bt);
  if (!ws.empty()) {
    array xc = subtract(x, mean(x, -1, true));
    array xhat = multiply(xc, rsqrt(add(mean(square(xc), -1, true), array(eps, x.dtype()))));
    dw = astype(per_example_sum(multiply(g, xhat), true), wt);
  }
  if (!bs.empty()) db = astype(per_example_sum(g, true), bt);
  return {{dx, dw, db}, {0, 0, 0}};
}

// x (B, N, ..., L, D) becomes (B * N, ..., L, D); the offset, a scalar or one per entry of N, becomes one
// per entry of B * N unless it is a shared scalar.
// x[..., start:stop:step] along the last axis.
array last_axis_slice(const array& x, int start, int stop, int step) {
  const int nd = static_cast<int>(x.ndim());
  Shape b(nd, 0), e = x.shape(), st(nd, 1);
  b[nd - 1] = start;
  e[nd - 1] = stop;
  st[nd - 1] = step;
  return slice(x, b, e, st);
}

// RoPE with mapped frequencies (the row shares one set between all rows): the rotation written with
// kiln's ops. Angle (offset + position) * scale / freq, per example, position along axis -2.
Result rope_mapped_freqs(const Args& a) {
  const State& st = a.state();
  const int dims = st.i(1), half = dims / 2;
  const bool traditional = st.b(2), forward = st.b(5);
  const float scale = st.f(4);
  const array x = a.front(0);  // (B, N, ..., L, D)
  const int nd = static_cast<int>(x.ndim());
  const int L = x.shape(nd - 2);
  // Offsets as (B | 1, N | 1, 1, ..., 1).
  array off = astype(a.mapped(1) ? a.front(1) : expand_dims(a.inputs[1], 0), float32);
  if (off.ndim() == 1) off = expand_dims(off, 1);
  Shape os(nd, 1);
  os[0] = off.shape(0);
  os[1] = off.shape(1);
  off = reshape(off, os);
  Shape ts(nd, 1);
  ts[nd - 2] = L;
  array pos = multiply(add(reshape(astype(arange(L), float32), ts), off), array(scale));
  Shape fs(nd, 1);
  fs[0] = a.size;
  fs[nd - 1] = half;
  array theta = multiply(pos, reshape(reciprocal(a.front(2)), fs));  // (B, N | 1, ..., L, half)
  const array c = astype(cos(theta), x.dtype()), s = astype(sin(theta), x.dtype());
  const array x1 = traditional ? last_axis_slice(x, 0, dims, 2) : last_axis_slice(x, 0, half, 1);
  const array x2 = traditional ? last_axis_slice(x, 1, dims, 2) : last_axis_slice(x, half, dims, 1);
  array o1 = forward ? subtract(multiply(x1, c), multiply(x2, s)) : add(multiply(x1, c), multiply(x2, s));
  array o2 = forward ? add(multiply(x1, s), multiply(x2, c)) : subtract(multiply(x2, c), multiply(x1, s));
  array rotated = traditional ? reshape(stack({o1, o2}, -1), [&] {
    Shape r = o1.shape();
    r.back() = dims;
    return r;
  }())
                              : concatenate({o1, o2}, -1);
  const int D = x.shape(nd - 1);
  if (dims < D) rotated = concatenate({rotated, last_axis_slice(x, dims, D, 1)}, -1);
  return {{rotated}, {0}};
}

Result rope_rule(const Args& a) {
  if (a.inputs.size() == 3 && a.mapped(2)) return rope_mapped_freqs(a);
  array x = a.front(0);
  const Shape xs = x.shape();
  const int n = xs[1];
  Shape merged(xs.begin() + 1, xs.end());
  merged[0] *= a.size;
  std::vector<array> ins{reshape(x, merged), a.inputs[1]};
  if (a.mapped(1) || a.inputs[1].ndim() == 1) {
    array off = a.mapped(1) ? a.front(1) : expand_dims(a.inputs[1], 0);  // (B | 1, [N | 1])
    if (off.ndim() == 1) off = expand_dims(off, 1);
    ins[1] = reshape(broadcast_to(off, {a.size, n}), {a.size * n});
  }
  if (a.inputs.size() == 3) ins.push_back(a.inputs[2]);
  array y = rebuild(a, a.state(), ins)[0];
  return {{reshape(y, with_batch(a.node.specs[0].shape, a.size))}, {0}};
}

// q, k, v (and the mask, broadcast to the scores' shape) have the batch merged into their first axis.
// Mapped sinks (one logit per head and example) merge it into the heads instead: head h of example e
// becomes head e * H + h, and its kv head e * H_kv + h / (H / H_kv) is the merged kv head of that
// example, so grouped-query attention pairs the same heads.
Result sdpa_rule(const Args& a) {
  const bool has_sinks = a.state().b(3);
  const size_t n_in = a.inputs.size();
  const bool has_mask = n_in - 3 - (has_sinks ? 1 : 0) == 1;
  const bool by_heads = has_sinks && a.mapped(n_in - 1);
  const int axis = by_heads ? 1 : 0;  // the axis the batch merges into
  // t (B, N, H, ...) -> (B * N, H, ...) or (N, B * H, ...).
  const auto merge = [&](array t) {
    if (by_heads) t = swapaxes(t, 0, 1);  // (N, B, H, ...)
    Shape s = t.shape();
    s[axis + 1] *= s[axis];
    s.erase(s.begin() + axis);
    return reshape(t, s);
  };
  std::vector<array> ins{merge(a.front(0)), merge(a.front(1)), merge(a.front(2))};
  if (has_mask) {
    const Shape& q = a.node.inputs[0].shape();
    const Shape& k = a.node.inputs[1].shape();
    Shape scores{a.size, q[0], q[1], q[2], k[2]};
    array m = a.mapped(3) ? align_front(a.front(3), 4) : a.inputs[3];
    ins.push_back(merge(broadcast_to(m, scores)));
  }
  if (has_sinks) ins.push_back(by_heads ? flatten(a.front(n_in - 1)) : a.inputs[n_in - 1]);
  std::vector<array> ys = rebuild(a, a.state(), ins);
  Result r;
  for (size_t i = 0; i < ys.size(); ++i) {
    Shape s = a.node.specs[i].shape;
    s.insert(s.begin() + axis, a.size);
    r.outputs.push_back(reshape(ys[i], s));
    r.axes.push_back(axis);
  }
  return r;
}

}  // namespace

void register_vmap_fast(RuleTable& t) {
  t.add({{"RMSNorm", rms_norm_rule},
         {"RMSNormVJP", rms_norm_vjp_rule},
         {"LayerNorm", layer_norm_rule},
         {"LayerNormVJP", layer_norm_vjp_rule},
         {"RoPE", rope_rule},
         {"ScaledDotProductAttention", sdpa_rule}});
}

}  // namespace kiln::vmap_rules
