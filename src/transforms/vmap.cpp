// vmap (include/kiln/vmap.h): trace the function on unbatched placeholders, then rebuild every node that
// depends on a mapped input with its row's batching rule (src/primitives/vmap_rules.h), in topological
// order, each value carrying the axis of its batch dimension. The walk is iterative, so deep graphs do
// not touch the call stack.
#include "kiln/vmap.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/mode.h"
#include "kiln/ops/shape.h"
#include "kiln/primitive.h"
#include "primitives/common.h"
#include "primitives/vmap_rules.h"
#include "trace/tape.h"

namespace kiln {

namespace {

using detail::ArrayDesc;
using VFun = std::function<std::vector<array>(const std::vector<array>&)>;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

struct Mapped {
  array value;
  int axis;
};

// The nodes of `outputs`' graph that depend on one of `mapped`, in topological order.
std::vector<array> batched_nodes(const std::vector<array>& outputs,
                                 const std::unordered_map<const ArrayDesc*, Mapped>& mapped) {
  std::unordered_set<const ArrayDesc*> depends;
  for (auto& [d, m] : mapped) depends.insert(d);
  std::unordered_set<const Node*> visited;
  std::vector<array> order;
  struct Frame {
    array a;
    size_t next;
  };
  std::vector<Frame> stack;
  for (const array& out : outputs) {
    if (!out.has_primitive() || out.is_available() || visited.count(out.node().get())) continue;
    visited.insert(out.node().get());
    stack.push_back({out, 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& ins = f.a.inputs();
      if (f.next < ins.size()) {
        const array& in = ins[f.next++];
        if (in.has_primitive() && !in.is_available() && visited.insert(in.node().get()).second) {
          stack.push_back({in, 0});
        }
        continue;
      }
      const array a = f.a;
      stack.pop_back();
      bool dep = false;
      for (auto& in : a.inputs()) dep = dep || depends.count(in.desc_ptr().get());
      if (!dep) continue;
      for (auto& o : a.outputs()) depends.insert(o.desc_ptr().get());
      order.push_back(a);
    }
  }
  return order;
}

std::string shape_text(const Shape& s) { return detail::shape_str(s); }

std::vector<array> vmap_call(const VFun& fun, const std::vector<array>& inputs, std::vector<int> in_axes,
                             std::vector<int> out_axes) {
  if (in_axes.empty()) in_axes.assign(inputs.size(), 0);
  if (in_axes.size() != inputs.size()) {
    std::ostringstream msg;
    msg << "[vmap] The number of in axes (" << in_axes.size() << ") must match the number of inputs ("
        << inputs.size() << ").";
    fail(msg.str());
  }
  int size = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) fail("[vmap] Input " + std::to_string(i) + " is an empty (default-constructed) array.");
    if (in_axes[i] == -1) continue;
    const int nd = static_cast<int>(inputs[i].ndim());
    if (nd == 0) fail("[vmap] Cannot vmap an input with zero dimensions.");
    if (in_axes[i] < -1 || in_axes[i] >= nd) {
      std::ostringstream msg;
      msg << "[vmap] Axis " << in_axes[i] << " invalid for input with " << nd << " dimensions.";
      fail(msg.str());
    }
    const int n = inputs[i].shape(in_axes[i]);
    if (size == -1) size = n;
    if (n != size) {
      std::ostringstream msg;
      msg << "[vmap] Inconsistent axis sizes: " << n << " and " << size << ".";
      fail(msg.str());
    }
  }
  if (size == -1) fail("At least one of in_axes must be non-None.");

  // The function on unbatched placeholders (unmapped inputs are passed as they are).
  std::vector<array> s_inputs;
  std::unordered_map<const ArrayDesc*, Mapped> mapped;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (in_axes[i] == -1) {
      s_inputs.push_back(inputs[i]);
      continue;
    }
    Shape s = inputs[i].shape();
    s.erase(s.begin() + in_axes[i]);
    s_inputs.push_back(detail::placeholder(s, inputs[i].dtype()));
    mapped.emplace(s_inputs.back().desc_ptr().get(), Mapped{inputs[i], in_axes[i]});
  }
  std::vector<array> s_outputs;
  {
    detail::TransformGuard guard;  // the function's outputs stay lazy graphs (core/mode.h)
    s_outputs = fun(s_inputs);
  }
  for (auto& o : s_outputs) {
    if (!o.valid()) fail("[vmap] The function returned an empty (default-constructed) array.");
  }
  if (out_axes.empty()) out_axes.assign(s_outputs.size(), 0);
  if (out_axes.size() != s_outputs.size()) {
    std::ostringstream msg;
    msg << "[vmap] The number of out axes (" << out_axes.size() << ") must match the number of outputs ("
        << s_outputs.size() << ").";
    fail(msg.str());
  }

  // Rebuild each dependent node with its batching rule.
  const auto& table = vmap_rules::rules();
  std::vector<array> keep;  // the original outputs, so their descriptors (the map's keys) stay unique
  for (const array& a : batched_nodes(s_outputs, mapped)) {
    const Node& node = *a.node();
    const PrimitiveDef& def = *node.def;
    vmap_rules::Args args{node, {}, {}, size};
    for (const array& in : node.inputs) {
      auto it = mapped.find(in.desc_ptr().get());
      if (it != mapped.end()) {
        args.inputs.push_back(it->second.value);
        args.axes.push_back(it->second.axis);
      } else {
        args.inputs.push_back(in);
        args.axes.push_back(-1);
      }
    }
    std::vector<array> outs = a.outputs();
    // A node whose rebuilt inputs are all unmapped (a rule found its output the same for every example,
    // as NumberOfElements does) is the same node on those inputs.
    if (std::all_of(args.axes.begin(), args.axes.end(), [](int ax) { return ax < 0; })) {
      std::vector<array> same = make_arrays(def, node.state, args.inputs, node.specs, node.stream);
      for (size_t i = 0; i < outs.size(); ++i) {
        mapped[outs[i].desc_ptr().get()] = Mapped{same[i], -1};
        keep.push_back(outs[i]);
      }
      continue;
    }
    vmap_rules::Rule rule = table.find(def);
    if (!rule) {
      if (const std::string* why = table.reason(def)) {
        fail("[vmap] Primitive " + def.display_name(node.state) + " cannot be batched: " + *why);
      }
      fail("[vmap] Primitive " + def.display_name(node.state) + " has no batching rule in kiln.");
    }
    vmap_rules::Result r = rule(args);
    if (r.outputs.size() != outs.size() || r.axes.size() != outs.size()) {
      throw std::logic_error("[vmap] The batching rule of " + def.name + " returned " +
                             std::to_string(r.outputs.size()) + " outputs for a node with " +
                             std::to_string(outs.size()) + ".");
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      // Each batched output, its batch axis taken out, must be the unbatched output.
      Shape s = r.outputs[i].shape();
      if (r.axes[i] >= 0) s.erase(s.begin() + r.axes[i]);
      if (s != outs[i].shape() || r.outputs[i].dtype() != outs[i].dtype()) {
        throw std::logic_error("[vmap] The batching rule of " + def.name + " gave output " + std::to_string(i) +
                               " shape " + shape_text(r.outputs[i].shape()) + " (batch axis " +
                               std::to_string(r.axes[i]) + ", " + dtype_name(r.outputs[i].dtype()) +
                               ") for an unbatched output of shape " + shape_text(outs[i].shape()) + " (" +
                               dtype_name(outs[i].dtype()) + ").");
      }
      mapped[outs[i].desc_ptr().get()] = Mapped{r.outputs[i], r.axes[i]};
      keep.push_back(outs[i]);
    }
  }

  // Each output with its batch axis where out_axes asks.
  std::vector<array> outputs;
  for (size_t i = 0; i < s_outputs.size(); ++i) {
    auto it = mapped.find(s_outputs[i].desc_ptr().get());
    if (it != mapped.end() && it->second.axis >= 0) {
      array out = it->second.value;
      const int vdim = it->second.axis;
      if (vdim != out_axes[i]) {
        const int nd = static_cast<int>(out.ndim());
        if (out_axes[i] >= nd || out_axes[i] < -nd) {
          std::ostringstream msg;
          msg << "[vmap] Axis " << out_axes[i] << " invalid for output with " << nd << " dimensions.";
          fail(msg.str());
        }
        out = moveaxis(out, vdim, out_axes[i]);
      }
      outputs.push_back(out);
    } else {
      // Not dependent on a mapped input: the same value for every example.
      const array same = it != mapped.end() ? it->second.value : s_outputs[i];
      const int nd = static_cast<int>(same.ndim()) + 1;
      if (out_axes[i] >= nd || out_axes[i] < -nd) {
        std::ostringstream msg;
        msg << "[vmap] Axis " << out_axes[i] << " invalid for output with " << nd << " dimensions.";
        fail(msg.str());
      }
      outputs.push_back(repeat(expand_dims(same, out_axes[i]), size, out_axes[i]));
    }
  }
  return outputs;
}

}  // namespace

std::function<std::vector<array>(const std::vector<array>&)> vmap(const VFun& fun, const std::vector<int>& in_axes,
                                                                   const std::vector<int>& out_axes) {
  auto unmapped_only = [](const std::vector<int>& axes) {
    return !axes.empty() && std::all_of(axes.begin(), axes.end(), [](int ax) { return ax < 0; });
  };
  if (unmapped_only(in_axes) != unmapped_only(out_axes)) {
    fail("[vmap] Input (or output) axes must be specified if output (or input) axes are.");
  }
  return [fun, in_axes, out_axes](const std::vector<array>& inputs) {
    return vmap_call(fun, inputs, in_axes, out_axes);
  };
}

std::function<array(const array&, const array&)> vmap(const std::function<array(const array&, const array&)>& fun,
                                                      int in_axis_a, int in_axis_b, int out_axis) {
  auto vfun = vmap([fun](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0], xs[1])}; },
                   std::vector<int>{in_axis_a, in_axis_b}, std::vector<int>{out_axis});
  return [vfun](const array& a, const array& b) { return vfun({a, b})[0]; };
}

std::function<array(const array&)> vmap(const std::function<array(const array&)>& fun, int in_axis, int out_axis) {
  auto vfun = vmap([fun](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0])}; },
                   std::vector<int>{in_axis}, std::vector<int>{out_axis});
  return [vfun](const array& a) { return vfun({a})[0]; };
}

}  // namespace kiln
