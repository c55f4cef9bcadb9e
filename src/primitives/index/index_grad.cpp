// Derivative rules of the index rows (autodiff_rules.h): a gather's cotangent is scattered back (added)
// into zeros, a scatter's is gathered from the written windows. Indices are never differentiable:
// they get zeros under vjp (Gather, as MLX) or MLX's error.
#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::refuse_from;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using detail::autodiff::zeros_of;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

enum ScatterType { kMax = 0, kMin = 1, kSum = 2, kProd = 3, kNone = 4 };

std::vector<int> axes_of(const State& st, size_t i) { return std::vector<int>(st.ints(i).begin(), st.ints(i).end()); }

array tangent_or_zeros(const Application& app, const Arrays& tan, const Ints& argnums, int i) {
  array t = tangent_of(tan, argnums, i);
  return t.valid() ? t : zeros_of(app.inputs[i], app.s());
}

Arrays gather_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays idx(app.inputs.begin() + 1, app.inputs.end());
  Arrays out;
  for (int i : argnums) {
    if (i > 0) {
      out.push_back(zeros_of(app.inputs[i], app.s()));
    } else {
      out.push_back(scatter_add(zeros_like(app.inputs[0], app.s()), idx, cot[0], axes_of(app.state(), 0), app.s()));
    }
  }
  return out;
}
Arrays gather_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  refuse_from(argnums, 1, "gather", "JVP", "indices");
  Arrays idx(app.inputs.begin() + 1, app.inputs.end());
  return {gather(tan[0], idx, axes_of(app.state(), 0), app.state().ints(1), app.s())};
}

Arrays gather_axis_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  const int axis = app.state().i(0);
  for (int i : argnums) {
    if (i > 0) {
      out.push_back(zeros_of(app.inputs[i], app.s()));
    } else {
      out.push_back(scatter_add_axis(zeros_like(app.inputs[0], app.s()), app.inputs[1], cot[0], axis, app.s()));
    }
  }
  return out;
}
Arrays gather_axis_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  refuse_from(argnums, 1, "gather_axis", "JVP", "indices");
  return {take_along_axis(tan[0], app.inputs[1], app.state().i(0), app.s())};
}

// Scatter(a, indices..., updates).
Arrays scatter_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const int type = app.state().i(0);
  if (type == kProd) throw std::invalid_argument("[scatter] VJP not implemented for scatter_prod");
  const auto axes = axes_of(app.state(), 1);
  const int last = static_cast<int>(app.inputs.size()) - 1;
  Arrays idx(app.inputs.begin() + 1, app.inputs.end() - 1);
  const array& a = app.inputs[0];
  const array& upd = app.inputs[last];
  const array& result = app.outputs[0];
  auto s = app.s();
  Shape window = cot[0].shape();
  for (int ax : axes) window[ax] = 1;
  Arrays out;
  for (int i : argnums) {
    if (i == 0) {
      if (type == kNone) {
        out.push_back(scatter(cot[0], idx, zeros_like(upd, s), axes, s));
      } else if (type == kSum) {
        out.push_back(cot[0]);
      } else {
        out.push_back(where(equal(result, a, s), cot[0], array(0, cot[0].dtype()), s));
      }
    } else if (i == last) {
      array g = gather(cot[0], idx, axes, window, s);
      if (type == kMax || type == kMin) {
        g = multiply(g, astype(equal(gather(result, idx, axes, window, s), upd, s), g.dtype(), s), s);
      }
      out.push_back(reshape(g, upd.shape(), s));
    } else {
      throw std::invalid_argument("[scatter] Cannot calculate VJP with respect to indices.");
    }
  }
  return out;
}
Arrays scatter_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  const int type = app.state().i(0);
  const int last = static_cast<int>(app.inputs.size()) - 1;
  for (int i : argnums) {
    if (i > 0 && i < last) throw std::invalid_argument("[scatter] Cannot calculate JVP with respect to indices.");
  }
  if (type == kProd) throw std::invalid_argument("[scatter] JVP not implemented for scatter_prod");
  Arrays idx(app.inputs.begin() + 1, app.inputs.end() - 1);
  const auto axes = axes_of(app.state(), 1);
  auto s = app.s();
  array ta = tangent_or_zeros(app, tan, argnums, 0), tu = tangent_or_zeros(app, tan, argnums, last);
  if (type == kNone) return {scatter(ta, idx, tu, axes, s)};
  if (type == kSum) return {scatter_add(ta, idx, tu, axes, s)};
  // Max / Min: the tangent of whichever value won (the transpose of the vjp above, ties included).
  const array& a = app.inputs[0];
  const array& upd = app.inputs[last];
  const array& result = app.outputs[0];
  Shape window = result.shape();
  for (int ax : axes) window[ax] = 1;
  array won = astype(equal(reshape(gather(result, idx, axes, window, s), upd.shape(), s), upd, s), tu.dtype(), s);
  array from_a = where(equal(result, a, s), ta, array(0, ta.dtype()), s);
  return {scatter_add(from_a, idx, multiply(tu, won, s), axes, s)};
}

// ScatterAxis(a, indices, updates): type 0 adds, 1 overwrites.
Arrays scatter_axis_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const bool add = app.state().i(0) == 0;
  const int axis = app.state().i(1);
  const array& idx = app.inputs[1];
  const array& upd = app.inputs[2];
  auto s = app.s();
  Arrays out;
  for (int i : argnums) {
    if (i == 0) {
      out.push_back(add ? cot[0] : put_along_axis(cot[0], idx, zeros_like(upd, s), axis, s));
    } else if (i == 2) {
      out.push_back(take_along_axis(cot[0], idx, axis, s));
    } else {
      throw std::invalid_argument("[scatter_axis] Cannot calculate VJP with respect to indices.");
    }
  }
  return out;
}
Arrays scatter_axis_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  for (int i : argnums) {
    if (i == 1) throw std::invalid_argument("[scatter_axis] Cannot calculate JVP with respect to indices.");
  }
  const bool add = app.state().i(0) == 0;
  const int axis = app.state().i(1);
  array ta = tangent_or_zeros(app, tan, argnums, 0), tu = tangent_or_zeros(app, tan, argnums, 2);
  return {add ? scatter_add_axis(ta, app.inputs[1], tu, axis, app.s())
              : put_along_axis(ta, app.inputs[1], tu, axis, app.s())};
}

// MaskedScatter(a, mask, values): in each batch b, the k-th true position of mask[b] takes values[b]'s
// k-th element.
Arrays masked_scatter_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  auto s = app.s();
  const array &mask = app.inputs[1], &vals = app.inputs[2];
  const int batches = mask.shape(0);
  Arrays out;
  for (int i : argnums) {
    if (i == 1) throw std::invalid_argument("[masked_scatter] Cannot calculate VJP with respect to mask.");
    array zero = array(0, cot[0].dtype());
    if (i == 0) {
      out.push_back(where(mask, zero, cot[0], s));
      continue;
    }
    // The value index each true position reads: its rank among the batch's true positions.
    array m = reshape(mask, {batches, -1}, s);
    array rank = subtract(cumsum(astype(m, int32, s), 1, false, true, s), array(1, int32), s);
    array idx = where(m, rank, array(0, int32), s);
    array g = where(m, reshape(cot[0], {batches, -1}, s), zero, s);
    array dv = zeros({batches, static_cast<int>(vals.size() / batches)}, vals.dtype(), s);
    out.push_back(reshape(scatter_add_axis(dv, idx, g, 1, s), vals.shape(), s));
  }
  return out;
}
Arrays masked_scatter_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  for (int i : argnums) {
    if (i == 1) throw std::invalid_argument("[masked_scatter] Cannot calculate JVP with respect to mask.");
  }
  // The node itself, on the tangents (the op builder's argument forms are not the node's).
  array ta = tangent_or_zeros(app, tan, argnums, 0);
  return {make_array(*app.node.def, {}, {ta, app.inputs[1], tangent_or_zeros(app, tan, argnums, 2)},
                     {{ta.shape(), ta.dtype()}}, app.node.stream)};
}

}  // namespace

namespace primitives {
void register_index_grad(RuleTable& t) {
  t.add("Gather", gather_vjp, gather_jvp);
  t.add("GatherAxis", gather_axis_vjp, gather_axis_jvp);
  t.add("Scatter", scatter_vjp, scatter_jvp);
  t.add("ScatterAxis", scatter_axis_vjp, scatter_axis_jvp);
  t.add("MaskedScatter", masked_scatter_vjp, masked_scatter_jvp);
}
}  // namespace primitives

}  // namespace kiln
