// Automatic differentiation (include/kiln/autodiff.h): the machinery. The function is called on copies
// of the primals (so that one array passed twice is two primals), which builds its lazy graph; a walk
// from the outputs lists, in topological order, the nodes that depend on a primal being
// differentiated (stop_gradient nodes cut the walk); reverse mode then runs that list backwards,
// applying each node's vjp rule to its outputs' cotangents and adding the results into its inputs',
// and forward mode runs it forwards with the jvp rules. The rules are the rows' own
// (src/primitives/autodiff_rules.h): a row with a fallback and no direct rule is differentiated through
// the fallback, recursively.
#include "kiln/autodiff.h"

#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/mode.h"
#include "kiln/ops.h"
#include "kiln/vmap.h"
#include "primitives/autodiff_rules.h"
#include "primitives/common.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::Rule;
using Fn = std::function<std::vector<array>(const std::vector<array>&)>;

StreamOrDevice stream_of(const array& a) {
  if (a.has_primitive()) return a.node()->stream;
  return default_stream(default_device());
}

bool is_stop_gradient(const array& a) {
  static const PrimitiveDef* sg = registry::find("StopGradient");
  return a.has_primitive() && a.node()->def == sg;
}

// A node of the walk's list: the array reached and every output of its node (kept alive for the ids).
struct TapeEntry {
  array a;
  std::vector<array> outputs;
};

// Key of what the walk has visited: the node for computed arrays (one visit per node, whichever output
// is reached), the descriptor for leaves.
uintptr_t visit_key(const array& a) {
  return a.has_primitive() ? reinterpret_cast<uintptr_t>(a.node().get()) : a.id();
}

// The nodes reachable from `outputs` that depend on an array of `needs` (which grows with their
// outputs), in topological order. `stop` holds the primals: the walk does not go past them.
std::vector<TapeEntry> build_tape(const std::vector<array>& outputs, const std::vector<array>& stop,
                                  std::unordered_set<uintptr_t>& needs) {
  std::unordered_set<uintptr_t> visited;
  for (auto& p : stop) visited.insert(visit_key(p));
  std::vector<TapeEntry> tape;
  struct Frame {
    array a;
    size_t next;
  };
  std::vector<Frame> stack;
  for (const array& out : outputs) {
    if (!visited.insert(visit_key(out)).second) continue;
    stack.push_back({out, 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& ins = f.a.inputs();
      if (f.next < ins.size()) {
        array in = ins[f.next++];
        if (visited.insert(visit_key(in)).second) stack.push_back({in, 0});
        continue;
      }
      array a = f.a;
      stack.pop_back();
      if (!a.has_primitive() || is_stop_gradient(a)) continue;
      for (const array& in : a.inputs()) {
        if (needs.count(in.id())) {
          TapeEntry e{a, a.outputs()};
          for (auto& o : e.outputs) needs.insert(o.id());
          tape.push_back(std::move(e));
          break;
        }
      }
    }
  }
  return tape;
}

const Rule& rule_for(const Node& node, const char* mode) {
  const Rule* r = detail::autodiff::rules().find(*node.def);
  const std::string name = node.def->display_name(node.state);
  if (!r) throw std::invalid_argument(std::string("[") + mode + "] Not implemented for " + name + " in kiln yet.");
  if (r->not_differentiable) {
    throw std::invalid_argument(std::string("[Primitive::") + mode + "] Not implemented for " + name + ".");
  }
  return *r;
}

std::vector<array> copies_of(const std::vector<array>& primals) {
  std::vector<array> out;
  for (auto& p : primals) {
    out.push_back(copy(p, stream_of(p)));
    out.back().set_tracer(true);  // what the function computes from it is a tracer too (core/array.cpp)
  }
  return out;
}

std::pair<std::vector<array>, std::vector<array>> vjp_impl(const Fn& fun, const std::vector<array>& primals,
                                                           const std::vector<array>& cotans,
                                                           const std::vector<int>& argnums);
std::pair<std::vector<array>, std::vector<array>> jvp_impl(const Fn& fun, const std::vector<array>& primals,
                                                           const std::vector<array>& tangents);

// The node's vjp: its own rule, or reverse mode through its fallback.
std::vector<array> apply_vjp(const TapeEntry& e, const std::vector<array>& cotangents, const std::vector<int>& argnums) {
  const Node& node = *e.a.node();
  const Rule& r = rule_for(node, "vjp");
  Application app{node, node.inputs, e.outputs};
  if (r.vjp) return r.vjp(app, cotangents, argnums);
  if (!r.fallback) throw std::invalid_argument("[vjp] Not implemented for " + app.name() + " in kiln yet.");
  auto fb = r.fallback;
  Fn f = [&app, fb](const std::vector<array>& ins) { return fb(app, ins); };
  return vjp_impl(f, node.inputs, cotangents, argnums).second;
}

// The node's jvp: its own rule, or forward mode through its fallback.
std::vector<array> apply_jvp(const TapeEntry& e, const std::vector<array>& tangents, const std::vector<int>& argnums) {
  const Node& node = *e.a.node();
  const Rule& r = rule_for(node, "jvp");
  Application app{node, node.inputs, e.outputs};
  if (r.jvp) return r.jvp(app, tangents, argnums);
  if (!r.fallback) throw std::invalid_argument("[jvp] Not implemented for " + app.name() + " in kiln yet.");
  std::vector<array> all;
  for (int i = 0, j = 0; i < static_cast<int>(node.inputs.size()); ++i) {
    if (j < static_cast<int>(argnums.size()) && argnums[j] == i) {
      all.push_back(tangents[j++]);
    } else {
      all.push_back(zeros_like(node.inputs[i], node.stream));
    }
  }
  auto fb = r.fallback;
  Fn f = [&app, fb](const std::vector<array>& ins) { return fb(app, ins); };
  return jvp_impl(f, node.inputs, all).second;
}

void check_result(const Node& node, const array& input, const array& d, const char* mode) {
  if (d.shape() != input.shape() && mode[0] == 'v') {
    throw std::logic_error("[vjp] The rule of " + node.def->display_name(node.state) + " returned shape " +
                           detail::shape_str(d.shape()) + " for an input of shape " +
                           detail::shape_str(input.shape()) + ".");
  }
}

std::pair<std::vector<array>, std::vector<array>> vjp_impl(const Fn& fun, const std::vector<array>& primals,
                                                           const std::vector<array>& cotans,
                                                           const std::vector<int>& argnums) {
  std::vector<array> primals_ = copies_of(primals);
  std::vector<array> outputs;
  {
    detail::TransformGuard guard;  // the function's outputs stay lazy graphs (core/mode.h)
    outputs = fun(primals_);
  }

  // Pair the outputs with the cotangents, skipping outputs cut by stop_gradient.
  std::vector<std::pair<size_t, size_t>> pairs;
  size_t c = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const array& out = outputs[i];
    if (!out.valid()) throw std::invalid_argument("[vjp] The function returned an empty (default-constructed) array.");
    if (is_stop_gradient(out)) continue;
    if (c >= cotans.size()) {
      std::ostringstream msg;
      msg << "[vjp] Number of outputs to compute gradients for (" << outputs.size()
          << ") does not match number of cotangents (" << cotans.size() << ").";
      throw std::invalid_argument(msg.str());
    }
    if (out.shape() != cotans[c].shape()) {
      std::ostringstream msg;
      msg << "[vjp] Output shape " << out.shape() << " does not match cotangent shape " << cotans[c].shape() << ".";
      if (outputs.size() == 1 && out.size() == 1) msg << " If you are using grad your function must return a scalar.";
      throw std::invalid_argument(msg.str());
    }
    pairs.emplace_back(i, c++);
  }

  std::unordered_set<uintptr_t> needs;
  for (int i : argnums) needs.insert(primals_[i].id());
  std::vector<TapeEntry> tape = build_tape(outputs, primals_, needs);

  std::unordered_map<uintptr_t, array> cotan_map;
  for (auto [o, ci] : pairs) {
    const array& out = outputs[o];
    array g = astype(cotans[ci], out.dtype(), stream_of(out));
    auto [it, fresh] = cotan_map.emplace(out.id(), g);
    if (!fresh) it->second = add(it->second, g, stream_of(out));  // one array returned twice
  }
  for (auto it = tape.rbegin(); it != tape.rend(); ++it) {
    const TapeEntry& e = *it;
    const Node& node = *e.a.node();
    bool any = false;
    for (auto& o : e.outputs) any = any || cotan_map.count(o.id());
    if (!any) continue;
    std::vector<int> args;
    for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) {
      if (needs.count(node.inputs[i].id())) args.push_back(i);
    }
    std::vector<array> cots;
    for (auto& o : e.outputs) {
      auto found = cotan_map.find(o.id());
      if (found != cotan_map.end()) {
        cots.push_back(found->second);
        cotan_map.erase(found);
      } else {
        cots.push_back(zeros_like(o, node.stream));
      }
    }
    std::vector<array> vjps = apply_vjp(e, cots, args);
    if (vjps.size() != args.size()) {
      throw std::logic_error("[vjp] The rule of " + node.def->display_name(node.state) + " returned " +
                             std::to_string(vjps.size()) + " results for " + std::to_string(args.size()) + " inputs.");
    }
    for (size_t k = 0; k < args.size(); ++k) {
      const array& in = node.inputs[args[k]];
      check_result(node, in, vjps[k], "vjp");
      auto [slot, fresh] = cotan_map.emplace(in.id(), vjps[k]);
      if (!fresh) slot->second = add(slot->second, vjps[k], node.stream);
    }
  }
  std::vector<array> vjps;
  for (int i : argnums) {
    auto found = cotan_map.find(primals_[i].id());
    vjps.push_back(found != cotan_map.end() ? found->second : zeros_like(primals_[i], stream_of(primals[i])));
  }
  return {outputs, vjps};
}

std::pair<std::vector<array>, std::vector<array>> jvp_impl(const Fn& fun, const std::vector<array>& primals,
                                                           const std::vector<array>& tangents) {
  if (primals.size() != tangents.size()) {
    throw std::invalid_argument("[jvp] Number of inputs does not match number of tangents.");
  }
  for (size_t i = 0; i < primals.size(); ++i) {
    if (primals[i].shape() != tangents[i].shape()) {
      throw std::invalid_argument("[jvp] Input shape does not match shape of tangent.");
    }
  }
  std::vector<array> primals_ = copies_of(primals);
  std::vector<array> outputs;
  {
    detail::TransformGuard guard;  // the function's outputs stay lazy graphs (core/mode.h)
    outputs = fun(primals_);
  }
  for (auto& o : outputs) {
    if (!o.valid()) throw std::invalid_argument("[jvp] The function returned an empty (default-constructed) array.");
  }
  std::unordered_set<uintptr_t> needs;
  for (auto& p : primals_) needs.insert(p.id());
  std::vector<TapeEntry> tape = build_tape(outputs, primals_, needs);

  std::unordered_map<uintptr_t, array> tan_map;
  for (size_t i = 0; i < primals_.size(); ++i) tan_map.emplace(primals_[i].id(), tangents[i]);
  for (const TapeEntry& e : tape) {
    const Node& node = *e.a.node();
    std::vector<int> args;
    std::vector<array> tans;
    for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) {
      auto found = tan_map.find(node.inputs[i].id());
      if (found != tan_map.end()) {
        args.push_back(i);
        tans.push_back(found->second);
      }
    }
    std::vector<array> jvps = apply_jvp(e, tans, args);
    if (jvps.size() != e.outputs.size()) {
      throw std::logic_error("[jvp] The rule of " + node.def->display_name(node.state) + " returned " +
                             std::to_string(jvps.size()) + " tangents for " + std::to_string(e.outputs.size()) +
                             " outputs.");
    }
    for (size_t k = 0; k < jvps.size(); ++k) tan_map.emplace(e.outputs[k].id(), jvps[k]);
  }
  std::vector<array> jvps;
  for (auto& out : outputs) {
    auto found = tan_map.find(out.id());
    jvps.push_back(found != tan_map.end() ? found->second : zeros_like(out, stream_of(out)));
  }
  return {outputs, jvps};
}

}  // namespace

std::pair<std::vector<array>, std::vector<array>> vjp(const Fn& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents) {
  std::vector<int> argnums(primals.size());
  std::iota(argnums.begin(), argnums.end(), 0);
  return vjp_impl(fun, primals, cotangents, argnums);
}

std::pair<array, array> vjp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& cotangent) {
  auto [outs, vjps] = vjp([&fun](const std::vector<array>& in) { return std::vector<array>{fun(in[0])}; }, {primal},
                          {cotangent});
  return {outs[0], vjps[0]};
}

std::pair<std::vector<array>, std::vector<array>> jvp(const Fn& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents) {
  return jvp_impl(fun, primals, tangents);
}

std::pair<array, array> jvp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& tangent) {
  auto [outs, jvps] = jvp([&fun](const std::vector<array>& in) { return std::vector<array>{fun(in[0])}; }, {primal},
                          {tangent});
  return {outs[0], jvps[0]};
}

ValueAndGradFn value_and_grad(const Fn& fun, const std::vector<int>& argnums) {
  if (argnums.empty()) throw std::invalid_argument("[grad] Must specify at least one argument.");
  return [fun, argnums](const std::vector<array>& inputs) {
    const int n = static_cast<int>(inputs.size());
    std::set<int> args;
    for (int a : argnums) args.insert(a < 0 ? a + n : a);
    if (args.size() != argnums.size()) {
      throw std::invalid_argument("[grad] Repeat argument number not allowed in grad.");
    }
    if (*args.begin() < 0 || *args.rbegin() >= n) {
      throw std::invalid_argument("[grad] Invalid argument number for function with " + std::to_string(n) +
                                  " inputs.");
    }
    Fn gfun = [&fun](const std::vector<array>& in) {
      std::vector<array> outs = fun(in);
      if (outs.empty()) throw std::invalid_argument("[grad] The function must return at least one array.");
      for (size_t i = 1; i < outs.size(); ++i) {
        if (outs[i].valid()) outs[i] = stop_gradient(outs[i], stream_of(outs[i]));
      }
      return outs;
    };
    return vjp_impl(gfun, inputs, {array(1.0f)}, std::vector<int>(args.begin(), args.end()));
  };
}

Fn custom_function(Fn fun, std::optional<CustomVjpFn> fun_vjp, std::optional<CustomJvpFn> fun_jvp,
                   std::optional<CustomVmapFn> fun_vmap) {
  if (!fun_vjp && !fun_jvp && !fun_vmap) return fun;
  auto rules = std::make_shared<detail::autodiff::CustomRules>();
  rules->vjp = fun_vjp ? *fun_vjp : CustomVjpFn([fun](const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents,
                                                      const std::vector<array>&) {
    return vjp(fun, primals, cotangents).second;
  });
  rules->jvp = fun_jvp ? *fun_jvp : CustomJvpFn([fun](const std::vector<array>& primals,
                                                      const std::vector<array>& tangents,
                                                      const std::vector<int>& argnums) {
    std::vector<array> all;
    for (int i = 0, j = 0; i < static_cast<int>(primals.size()); ++i) {
      if (j < static_cast<int>(argnums.size()) && argnums[j] == i) {
        all.push_back(tangents[j++]);
      } else {
        all.push_back(zeros_like(primals[i], stream_of(primals[i])));
      }
    }
    return jvp(fun, primals, all).second;
  });
  if (fun_vmap) {
    rules->vmap = *fun_vmap;
  } else {
    // As MLX: without a batching rule, vmap batches the function itself, every output at axis 0.
    rules->vmap = [fun](const std::vector<array>& inputs, const std::vector<int>& axes) {
      std::vector<array> probe;  // the outputs' count, from the function on unbatched slices
      for (size_t i = 0; i < inputs.size(); ++i) probe.push_back(axes[i] < 0 ? inputs[i] : take(inputs[i], 0, axes[i]));
      std::vector<int> out_axes(fun(probe).size(), 0);
      return std::make_pair(vmap(fun, axes, out_axes)(inputs), out_axes);
    };
  }
  return [fun, rules](const std::vector<array>& args) {
    std::vector<array> outputs = fun(args);
    if (outputs.empty()) throw std::invalid_argument("[custom_function] The function must return at least one array.");
    std::vector<ArraySpec> specs;
    for (auto& out : outputs) {
      if (!out.valid()) {
        throw std::invalid_argument("[custom_function] The function returned an empty (default-constructed) array.");
      }
      out = stop_gradient(out, stream_of(out));
      specs.push_back({out.shape(), out.dtype()});
    }
    // One node per call: the rules are shared, the output count is this call's.
    auto call_rules = std::make_shared<detail::autodiff::CustomRules>(*rules);
    call_rules->num_outputs = outputs.size();
    std::vector<array> inputs = args;
    inputs.insert(inputs.end(), outputs.begin(), outputs.end());
    static const PrimitiveDef& def = registry::get("CustomTransforms");
    Stream s = std::get<Stream>(stream_of(outputs[0]));
    std::vector<array> result = make_arrays(def, {}, std::move(inputs), std::move(specs), s);
    result[0].node()->extra = call_rules;
    return result;
  };
}

Fn custom_vjp(Fn fun, CustomVjpFn fun_vjp) { return custom_function(std::move(fun), std::move(fun_vjp)); }

Fn checkpoint(Fn fun) {
  CustomVjpFn again = [fun](const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<array>& outputs) {
    // The outputs as a dependency of the primals: the recomputation runs after the forward pass.
    return vjp(fun, depends(primals, outputs), cotangents).second;
  };
  return custom_vjp(std::move(fun), std::move(again));
}

SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun,
                                    const std::vector<int>& argnums) {
  auto vg = value_and_grad([fun](const std::vector<array>& in) { return std::vector<array>{fun(in)}; }, argnums);
  return [vg](const std::vector<array>& inputs) {
    auto [outs, grads] = vg(inputs);
    return std::make_pair(outs[0], grads);
  };
}

}  // namespace kiln
