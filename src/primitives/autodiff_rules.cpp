// The derivative-rule table (autodiff_rules.h): built once from every family's register_<family>_grad,
// and the helpers the families' rules share.
#include "primitives/autodiff_rules.h"

#include <stdexcept>

#include "kiln/ops.h"
#include "primitives/common.h"

namespace kiln::detail::autodiff {

Rule& RuleTable::slot(const char* primitive) {
  const PrimitiveDef* def = registry::find(primitive);
  if (!def) throw std::logic_error(std::string("[autodiff] A rule names unknown primitive ") + primitive + ".");
  if (by_row_.size() <= def->index) by_row_.resize(registry::all().size());
  Rule& r = by_row_[def->index];
  if (r.declared) throw std::logic_error(std::string("[autodiff] Primitive ") + primitive + " has two rule entries.");
  r.declared = true;
  return r;
}

void RuleTable::add(const char* primitive, VjpFn vjp, JvpFn jvp, FallbackFn fallback) {
  Rule& r = slot(primitive);
  r.vjp = vjp;
  r.jvp = jvp;
  r.fallback = fallback;
}

void RuleTable::none(const char* primitive, const char* why) { slot(primitive).not_differentiable = why; }

const RuleTable& rules() {
  static const RuleTable table = [] {
    RuleTable t;
#define KILN_CALL_GRAD(f) primitives::register_##f##_grad(t);
    KILN_FAMILIES(KILN_CALL_GRAD)
#undef KILN_CALL_GRAD
    return t;
  }();
  return table;
}

array unbroadcast(const array& g, const Shape& shape, StreamOrDevice s) {
  if (g.shape() == shape) return g;
  const int lead = static_cast<int>(g.ndim()) - static_cast<int>(shape.size());
  if (lead < 0) {
    throw std::invalid_argument("[autodiff] Cannot reduce a cotangent of shape " + shape_str(g.shape()) +
                                " to shape " + shape_str(shape) + ".");
  }
  std::vector<int> axes;
  for (int i = 0; i < static_cast<int>(g.ndim()); ++i) {
    if (i < lead || (shape[i - lead] == 1 && g.shape(i) != 1)) axes.push_back(i);
  }
  array r = axes.empty() ? g : sum(g, axes, true, s);
  return reshape(r, shape, s);
}

array zeros_of(const array& a, StreamOrDevice s) { return zeros(a.shape(), a.dtype(), s); }

std::vector<array> zero_vjp(const Application& app, const std::vector<array>&, const std::vector<int>& argnums) {
  std::vector<array> out;
  for (int i : argnums) out.push_back(zeros_of(app.inputs[i], app.s()));
  return out;
}

std::vector<array> zero_jvp(const Application& app, const std::vector<array>&, const std::vector<int>&) {
  std::vector<array> out;
  for (auto& o : app.outputs) out.push_back(zeros_of(o, app.s()));
  return out;
}

array tangent_of(const std::vector<array>& tangents, const std::vector<int>& argnums, int i) {
  for (size_t k = 0; k < argnums.size(); ++k) {
    if (argnums[k] == i) return tangents[k];
  }
  return array();
}

void refuse_from(const std::vector<int>& argnums, int first, const char* api, const char* mode, const char* what) {
  for (int i : argnums) {
    if (i >= first) {
      throw std::invalid_argument(std::string("[") + api + "] Cannot calculate " + mode + " with respect to " + what +
                                  ".");
    }
  }
}

}  // namespace kiln::detail::autodiff
