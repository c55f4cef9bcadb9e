// Derivative rules of the misc rows (autodiff_rules.h): Depends forwards its real inputs (the
// dependencies get zeros); compile's fused group is differentiated through its members (the fallback);
// a custom kernel and a file's constant have none.
#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"
#include "primitives/misc/compiled.h"
#include "primitives/misc/imported_call.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using detail::autodiff::zeros_of;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

Arrays depends_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  for (int i : argnums) {
    out.push_back(i < static_cast<int>(app.outputs.size()) ? cot[i] : zeros_of(app.inputs[i], app.s()));
  }
  return out;
}
Arrays depends_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  Arrays out;
  for (size_t i = 0; i < app.outputs.size(); ++i) {
    array t = tangent_of(tan, argnums, static_cast<int>(i));
    out.push_back(t.valid() ? t : zeros_of(app.outputs[i], app.s()));
  }
  return out;
}

// CustomTransforms(args..., outputs...): the user's rules, on the arguments.
const detail::autodiff::CustomRules& custom_rules(const Application& app) {
  if (!app.node.extra) {
    throw std::invalid_argument("[CustomTransforms] The node has no rules (it was not built by custom_function).");
  }
  return *static_cast<const detail::autodiff::CustomRules*>(app.node.extra.get());
}

Arrays custom_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const auto& r = custom_rules(app);
  const size_t n_in = app.inputs.size() - r.num_outputs;
  Arrays primals(app.inputs.begin(), app.inputs.begin() + n_in);
  Arrays all = r.vjp(primals, cot, app.outputs);
  if (all.size() != n_in) {
    throw std::invalid_argument("[custom_vjp] The vjp function returned " + std::to_string(all.size()) +
                                " arrays for a function of " + std::to_string(n_in) + " inputs.");
  }
  Arrays out;
  for (int i : argnums) {
    if (i >= static_cast<int>(n_in)) {
      out.push_back(cot[i - n_in]);  // an output slot (stopped: reached only through the forwarding)
      continue;
    }
    if (all[i].shape() != app.inputs[i].shape()) {
      throw std::invalid_argument("[custom_vjp] The vjp function's result " + std::to_string(i) +
                                  " does not have the shape of input " + std::to_string(i) + ".");
    }
    out.push_back(all[i]);
  }
  return out;
}

Arrays custom_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  const auto& r = custom_rules(app);
  const size_t n_in = app.inputs.size() - r.num_outputs;
  Arrays primals(app.inputs.begin(), app.inputs.begin() + n_in);
  Arrays t;
  Ints args;
  for (size_t j = 0; j < argnums.size(); ++j) {
    if (argnums[j] < static_cast<int>(n_in)) {
      args.push_back(argnums[j]);
      t.push_back(tan[j]);
    }
  }
  Arrays out = r.jvp(primals, t, args);
  if (out.size() != r.num_outputs) {
    throw std::invalid_argument("[custom_function] The jvp function returned " + std::to_string(out.size()) +
                                " arrays for a function of " + std::to_string(r.num_outputs) + " outputs.");
  }
  return out;
}

// Compiled: the fused group's members, whose own rules the machinery applies.
Arrays compiled_fallback(const Application& app, const Arrays& inputs) {
  return detail::compiled_tape(app.node).run(inputs, app.node.stream);
}

// ImportedCall: the call's graph (its record's nodes), whose own rules the machinery applies.
Arrays imported_call_fallback(const Application& app, const Arrays& inputs) {
  return detail::imported_call_body(app.node).expand(inputs);
}

}  // namespace

namespace primitives {
void register_misc_grad(RuleTable& t) {
  t.add("Depends", depends_vjp, depends_jvp);
  t.add("CustomTransforms", custom_vjp, custom_jvp);
  t.add("Compiled", nullptr, nullptr, compiled_fallback);
  t.add("ImportedCall", nullptr, nullptr, imported_call_fallback);
  t.none("CustomKernel", "user kernel source; MLX 0.30.1's CustomKernel has no vjp or jvp");
  t.none("Load", "a file's constant (no inputs); kiln only, MLX has no such primitive");
}
}  // namespace primitives

}  // namespace kiln
