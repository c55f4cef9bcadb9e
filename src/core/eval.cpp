// The evaluator: an iterative depth-first topological sort of the unevaluated graph, then a run plan
// (plan_run: graph passes, then element-wise fusion, core/fusion.h), then each step: one kernel call
// for a node alone, taken from the kernel table of the node's device (core/kernels.h), or the
// backend's group runner for a fused group. Nodes are released as soon as they have run, so
// intermediates are freed (back to the buffer cache) when nothing else needs them.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_set>

#include "kiln/primitive.h"
#include "kiln/profile.h"
#include "core/concat_products.h"
#include "core/slice_pushdown.h"
#include "core/eval_internal.h"
#include "core/fusion.h"
#include "core/kernels.h"
#include "core/mode.h"
#include "core/row_patterns.h"

namespace kiln {

namespace {

namespace fusion = detail::fusion;

// The profiler's table (kiln/profile.h).
std::atomic<bool> g_profiling{false};
const std::string kFused = "fused";
std::mutex g_profile_mu;
std::map<std::string, ProfileRow>& profile_table() {
  static std::map<std::string, ProfileRow> t;
  return t;
}
// Seconds recorded on this thread so far: a step's own time is its wall time less what the steps
// nested in it recorded meanwhile.
thread_local double t_recorded = 0;
void profile_add(const std::string& name, int64_t nodes, double seconds) {
  t_recorded += seconds;
  std::lock_guard<std::mutex> lock(g_profile_mu);
  ProfileRow& r = profile_table()[name];
  r.primitive = name;
  ++r.calls;
  r.nodes += nodes;
  r.seconds += seconds;
}

// While tracing, an array with neither data nor a node is a function input placeholder: it has no
// value to compute, so evaluating it (item(), eval() in the traced function) is a user error.
void check_not_placeholder(const array& a) {
  if (detail::in_tracing() && !a.is_available() && !a.has_primitive()) {
    throw std::invalid_argument(
        "[export_function] Attempting to evaluate a placeholder input while tracing a function for export. "
        "The traced function must not evaluate (eval, item, data) arrays that depend on its inputs.");
  }
}

}  // namespace

namespace detail {
std::vector<std::shared_ptr<Node>> topo_order(const std::vector<array>& outputs, bool placeholders_are_inputs) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<const Node*> seen;
  struct Frame {
    std::shared_ptr<Node> node;
    size_t next;
  };
  std::vector<Frame> stack;
  for (auto& out : outputs) {
    if (out.valid() && !placeholders_are_inputs) check_not_placeholder(out);
    if (!out.valid() || out.is_available() || !out.has_primitive()) continue;
    if (!seen.insert(out.node().get()).second) continue;
    stack.push_back({out.node(), 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.node->inputs.size()) {
        const array& in = f.node->inputs[f.next++];
        if (!placeholders_are_inputs) check_not_placeholder(in);
        if (!in.is_available() && in.has_primitive() && seen.insert(in.node().get()).second) {
          stack.push_back({in.node(), 0});
        }
        continue;
      }
      order.push_back(std::move(f.node));
      stack.pop_back();
    }
  }
  return order;
}

void run_node(const std::shared_ptr<Node>& node) {
  std::vector<array> outs;
  outs.reserve(node->specs.size());
  for (size_t i = 0; i < node->specs.size(); ++i) {
    std::shared_ptr<detail::ArrayDesc> d = i < node->outputs.size() ? node->outputs[i].lock() : nullptr;
    if (d) {
      outs.emplace_back(std::move(d));
    } else {
      outs.emplace_back(node->specs[i].shape, node->specs[i].dtype, nullptr, static_cast<uint32_t>(i));
    }
  }
  for (size_t j = 0; j < node->inputs.size(); ++j) {
    if (!node->inputs[j].is_available() && !fusion::shape_only(*node, j)) {
      throw std::logic_error("[eval] Input of " + node->def->name + " was not evaluated.");
    }
  }
  run_kernel(*node, kernel_of(*node), outs);
}

KernelFn kernel_of(const Node& node) { return detail::kernels_for(node.stream.device).get(*node.def, node.state); }

void run_kernel(const Node& node, KernelFn kernel, std::vector<array>& outs) {
  kernel(node, node.inputs, outs);
  for (auto& o : outs) {
    if (!o.is_available()) {
      throw std::logic_error("[eval] The " + node.def->name + " kernel did not produce an output.");
    }
    // A tracer keeps its graph: the transform tracing the function still has to walk through it.
    if (!o.is_tracer()) o.detach();
  }
}


// The run plan of one evaluation, from the topological order. Graph rewrite passes go first (a pass
// sees the whole order and may replace its nodes); fusion planning then groups what is left.
std::vector<fusion::Step> plan_run(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs) {
  // Graph rewrite passes first: the decomposed norms and softmax become one fused node each
  // (core/row_patterns.h), so fusion does not take their element-wise parts apart; products over a
  // concatenation (a KV cache and the new token's keys) become one product per part
  // (core/concat_products.h); slices of row-wise work (a prefill's last-position logits) move ahead of
  // it, so only the kept rows are computed (core/slice_pushdown.h).
  detail::rewrite_row_patterns(order, outputs);
  detail::split_concat_products(order, outputs);
  detail::push_slices_up(order, outputs);
  // Then element-wise fusion, and batches of sibling nodes that one kernel call runs (the quantized
  // products reading one normalized row).
  std::vector<fusion::Step> steps = fusion::plan(order);
  fusion::batch_siblings(steps);
  return steps;
}

void run_group(fusion::Group& g) {
  for (const array* e : g.externals) {
    if (!e->is_available()) {
      throw std::logic_error("[eval] Input of " + g.members[0].node->def->name + " was not evaluated.");
    }
  }
  const bool donated = fusion::choose_donor(g);
  // A group of one node gains nothing from tiles unless it reuses an input's buffer.
  if (g.members.size() == 1 && !donated) {
    run_node(g.members[0].node);
    return;
  }
  try {
    fusion::allocate_outputs(g);
    g.runner(g);
  } catch (...) {
    // Half-written outputs must not look evaluated (a later eval would return them).
    for (auto& m : g.members) {
      if (m.out.valid()) m.out.desc_ptr()->data.reset();
    }
    throw;
  }
  if (g.batch) {
    fusion::count_batch_run();
    // As run_node: every output written, each dropping its node unless a transform still traces it.
    for (auto& m : g.members) {
      if (!m.out.is_tracer()) m.out.detach();
    }
    return;
  }
  auto& st = fusion::stats();
  ++st.groups;
  st.fused_nodes += g.members.size();
  st.donated += donated ? 1 : 0;
  for (auto& m : g.members) {
    if (!m.out.valid()) ++st.internal;
    // Internal outputs never get a buffer: only the members read them, and they have run.
    if (auto d = m.node->outputs[0].lock()) d->node.reset();
  }
}

bool profiling_on() { return g_profiling.load(std::memory_order_relaxed); }

const std::string& profile_name(const fusion::Group& g) {
  return g.members.size() == 1 || g.batch ? g.members[0].node->def->name : kFused;
}

ProfileTimer::ProfileTimer() : on_(profiling_on()) {
  if (on_) {
    t0_ = std::chrono::steady_clock::now();
    nested0_ = t_recorded;
  }
}

void ProfileTimer::stop(const std::string& name, int64_t nodes) {
  if (!on_) return;
  const double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  profile_add(name, nodes, all - (t_recorded - nested0_));
  on_ = false;
}

}  // namespace detail

void eval(std::vector<array> outputs) {
  auto order = detail::topo_order(outputs);
  fusion::reset_stats();
  const bool profiling = g_profiling.load(std::memory_order_relaxed);
  detail::ProfileTimer planning;
  const int64_t planned = static_cast<int64_t>(order.size());
  auto plan = detail::plan_run(order, outputs);
  planning.stop("(planning)", planned);
  for (auto& step : plan) {
    detail::ProfileTimer timer;
    if (step.node) {
      const std::string* name = profiling ? &step.node->def->name : nullptr;
      detail::run_node(step.node);
      if (profiling) timer.stop(*name, 1);
      step.node.reset();  // release the inputs this node held
    } else {
      const int64_t n = static_cast<int64_t>(step.group->members.size());
      const std::string* name = profiling ? &detail::profile_name(*step.group) : nullptr;
      detail::run_group(*step.group);
      if (profiling) timer.stop(*name, n);
      step.group.reset();
    }
  }
  fusion::publish_stats();
}

bool set_profiling(bool on) { return g_profiling.exchange(on); }

std::vector<ProfileRow> profile_report(bool reset) {
  std::lock_guard<std::mutex> lock(g_profile_mu);
  std::vector<ProfileRow> rows;
  for (auto& [name, r] : profile_table()) rows.push_back(r);
  if (reset) profile_table().clear();
  std::sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.primitive < b.primitive;
  });
  return rows;
}

void async_eval(std::vector<array> outputs) { eval(std::move(outputs)); }

void array::eval() {
  if (!valid() || is_available()) return;
  kiln::eval(std::vector<array>{*this});
}

}  // namespace kiln
