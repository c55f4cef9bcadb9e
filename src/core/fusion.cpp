// Element-wise fusion planning (core/fusion.h).
//
// plan() scans the topological order once. A fusible node (a single-output element-wise row with a
// kernel, on a backend that has a group runner, with at least min_elements() elements) joins the open
// groups of its inputs that have its output shape, merging them; an input from an open group of
// another shape, or any input of a node that does not join, closes (emits) that group first. So an open group has no
// reader outside itself yet, and merging open groups never makes a cycle. A group is also emitted as
// soon as every reader of its members has been scanned (then nothing else can join it). Inputs read
// for their shape only (shape_only) count as neither.
#include "core/fusion.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "core/env_switch.h"
#include "core/kernels.h"

namespace kiln::detail::fusion {

namespace {

EnvSwitch& fusion_switch() {
  static EnvSwitch s("KILN_FUSION");
  return s;
}

// One runner per backend (Backend::cpu, Backend::cuda), set once when the table is built.
std::atomic<GroupRunner> g_runners[2];

thread_local Stats t_stats;
thread_local Stats t_last;

// Past this many members a group is closed and the next node starts a new one: a group's runner
// state grows with its members, and a 10^6-node chain then runs as a thousand groups.
constexpr size_t kMaxMembers = 1024;
// Outputs smaller than this are not fused (set_min_elements overrides it). Below it the group's fixed
// costs (planning, the runner's per-thread tile arrays, constant fills, copies of written members) are
// more than the memory traffic fusion saves, since the unfused intermediates stay in the core's caches:
// a 6-op float32 chain ran fused / unfused in 12 / 8 us at 4096 elements, 43 / 37 us at 65536,
// 131 / 137 us at 262144 and 432 / 571 us at 2^20 (2 cores, AVX-512); a 4-bit llama decode step,
// whose element-wise groups have 1024-32000 elements, lost ~0.45 ms a call to fusing them.
constexpr size_t kDefaultMinElements = size_t(1) << 17;
std::atomic<size_t> g_min_elements{0};

struct OpenGroup {
  Shape shape;
  const KernelTable* table = nullptr;
  std::vector<int> members;  // positions in the order
  int pending = 0;           // reads of members' outputs by nodes not scanned yet
  bool open = true;
};

class Planner {
 public:
  explicit Planner(std::vector<std::shared_ptr<Node>>& order) : order_(order) {}

  std::vector<Step> run() {
    const size_t n = order_.size();
    bool any = false;
    for (size_t i = 0; i < n && !any; ++i) any = fusible(*order_[i]) != nullptr;
    if (!any) {
      for (auto& node : order_) steps_.push_back(Step{std::move(node), nullptr});
      return std::move(steps_);
    }
    pos_.reserve(n);
    for (size_t i = 0; i < n; ++i) pos_.emplace_back(order_[i].get(), static_cast<int>(i));
    std::sort(pos_.begin(), pos_.end());
    readers_.assign(n, 0);
    slots_.assign(n, 0);
    for (auto& node : order_) {
      for (size_t j = 0; j < node->inputs.size(); ++j) {
        int p = position(node->inputs[j]);
        if (p < 0) continue;
        ++slots_[p];
        if (!shape_only(*node, j)) ++readers_[p];
      }
    }
    group_of_.assign(n, -1);
    for (size_t i = 0; i < n; ++i) scan(static_cast<int>(i));
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].open) close(static_cast<int>(g));
    }
    return std::move(steps_);
  }

 private:
  // The position of the node computing `in`, or -1 when it is evaluated (or not in this order).
  int position(const array& in) const {
    if (!in.valid() || in.is_available() || !in.has_primitive()) return -1;
    const Node* key = in.node().get();
    auto it = std::lower_bound(pos_.begin(), pos_.end(), std::pair<const Node*, int>(key, -1));
    return it != pos_.end() && it->first == key ? it->second : -1;
  }
  int open_group_of(int p) const {
    if (p < 0 || group_of_[p] < 0) return -1;
    int g = group_of_[p];
    return groups_[g].open ? g : -1;
  }

  const KernelTable* fusible(const Node& node) const {
    if (!(node.def->flags & kElementwise) || node.specs.size() != 1 || node.outputs.size() != 1) return nullptr;
    if (node.outputs[0].expired()) return nullptr;
    size_t size = 1;
    for (auto d : node.specs[0].shape) size *= static_cast<size_t>(d);
    if (size < min_elements()) return nullptr;
    const KernelTable& kernels = kernels_for(node.stream.device);
    if (!group_runner(kernels) || !kernels.find(*node.def)) return nullptr;
    return &kernels;
  }

  void scan(int i) {
    const Node& node = *order_[i];
    const KernelTable* table = fusible(node);
    const Shape* shape = table ? &node.specs[0].shape : nullptr;
    // Groups this node reads: joined (same shape and table) or closed before it.
    std::vector<int> join;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      if (shape_only(node, j)) continue;
      int g = open_group_of(position(node.inputs[j]));
      if (g < 0) continue;
      --groups_[g].pending;
      bool same = table && groups_[g].table == table && groups_[g].shape == *shape;
      if (same) {
        if (std::find(join.begin(), join.end(), g) == join.end()) join.push_back(g);
      }
    }
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      if (shape_only(node, j)) continue;
      int g = open_group_of(position(node.inputs[j]));
      if (g >= 0 && std::find(join.begin(), join.end(), g) == join.end()) close(g);
    }
    if (!table) {
      steps_.push_back(Step{std::move(order_[i]), nullptr});
      return;
    }
    int target;
    if (join.empty()) {
      target = static_cast<int>(groups_.size());
      groups_.push_back(OpenGroup{*shape, table, {}, 0, true});
    } else {
      target = join[0];
      for (size_t k = 1; k < join.size(); ++k) merge(target, join[k]);
    }
    OpenGroup& G = groups_[target];
    G.members.push_back(i);
    G.pending += readers_[i];
    group_of_[i] = target;
    if (G.pending == 0 || G.members.size() >= kMaxMembers) close(target);
  }

  void merge(int into, int from) {
    OpenGroup& a = groups_[into];
    OpenGroup& b = groups_[from];
    for (int p : b.members) group_of_[p] = into;
    a.members.insert(a.members.end(), b.members.begin(), b.members.end());
    a.pending += b.pending;
    b.members.clear();
    b.open = false;
  }

  void close(int g) {
    OpenGroup& G = groups_[g];
    G.open = false;
    std::sort(G.members.begin(), G.members.end());
    auto group = std::make_unique<Group>();
    group->shape = G.shape;
    group->size = 1;
    for (auto d : G.shape) group->size *= static_cast<size_t>(d);
    group->runner = group_runner(*G.table);
    std::unordered_map<int, int> local;
    std::unordered_map<const ArrayDesc*, int> ext_index;
    std::vector<int> in_group_reads(G.members.size(), 0);
    for (size_t k = 0; k < G.members.size(); ++k) local.emplace(G.members[k], static_cast<int>(k));
    group->members.resize(G.members.size());
    for (size_t k = 0; k < G.members.size(); ++k) {
      Group::Member& m = group->members[k];
      m.node = std::move(order_[G.members[k]]);
      m.kernel = G.table->find(*m.node->def);
      for (const array& in : m.node->inputs) {
        int p = position(in);
        auto it = p >= 0 ? local.find(p) : local.end();
        if (it != local.end()) {
          m.args.push_back(it->second);
          ++in_group_reads[it->second];
          continue;
        }
        auto [e, added] = ext_index.emplace(in.desc_ptr().get(), static_cast<int>(group->externals.size()));
        if (added) group->externals.push_back(&in);
        m.args.push_back(~e->second);
      }
    }
    // Which outputs are needed outside the group: read by a node outside it, or held elsewhere (an
    // output of eval(), a user's handle, a graph not being evaluated). The descriptor's holders are
    // the lock below, the readers in this order, and those others.
    for (size_t k = 0; k < G.members.size(); ++k) {
      Group::Member& m = group->members[k];
      std::shared_ptr<ArrayDesc> d = m.node->outputs[0].lock();
      const int p = G.members[k];
      const long held_elsewhere = d.use_count() - 1 - slots_[p];
      if (held_elsewhere > 0 || readers_[p] > in_group_reads[k]) m.out = array(std::move(d));
    }
    steps_.push_back(Step{nullptr, std::move(group)});
  }

  std::vector<std::shared_ptr<Node>>& order_;
  std::vector<std::pair<const Node*, int>> pos_;  // sorted: a map from node to position, 16 bytes each
  std::vector<int> readers_;  // input slots reading each node's data
  std::vector<int> slots_;    // all input slots naming each node (shape-only ones too)
  std::vector<int> group_of_;
  std::vector<OpenGroup> groups_;
  std::vector<Step> steps_;
};

}  // namespace

bool shape_only(const Node& node, size_t slot) {
  static const PrimitiveDef* broadcast = registry::find("Broadcast");
  static const PrimitiveDef* broadcast_axes = registry::find("BroadcastAxes");
  return slot > 0 && (node.def == broadcast || node.def == broadcast_axes);
}

void set_group_runner(const KernelTable& kernels, GroupRunner runner) {
  g_runners[static_cast<int>(kernels.backend())].store(runner);
}
GroupRunner group_runner(const KernelTable& kernels) {
  return g_runners[static_cast<int>(kernels.backend())].load(std::memory_order_relaxed);
}

bool enabled() { return fusion_switch().on(); }
void set_enabled(bool on) { fusion_switch().set(on); }

size_t min_elements() {
  const size_t n = g_min_elements.load(std::memory_order_relaxed);
  return n ? n : kDefaultMinElements;
}
void set_min_elements(size_t n) { g_min_elements.store(n, std::memory_order_relaxed); }

Stats last_stats() { return t_last; }
void reset_stats() { t_stats = Stats{}; }
Stats& stats() { return t_stats; }
void publish_stats() { t_last = t_stats; }

std::vector<Step> plan(std::vector<std::shared_ptr<Node>>& order) {
  if (!enabled()) {
    std::vector<Step> steps;
    steps.reserve(order.size());
    for (auto& node : order) steps.push_back(Step{std::move(node), nullptr});
    return steps;
  }
  return Planner(order).run();
}

bool choose_donor(Group& g) {
  if (g.batch) return false;
  // How many input slots of the members read each external (its descriptor's holders in the group).
  std::vector<long> reads(g.externals.size(), 0);
  for (auto& m : g.members) {
    for (int a : m.args) {
      if (a < 0) ++reads[~a];
    }
  }
  for (auto& m : g.members) {
    if (!m.out.valid()) continue;
    const size_t nbytes = g.size * m.out.itemsize();
    for (size_t x = 0; x < g.externals.size(); ++x) {
      const array& e = *g.externals[x];
      if (!e.is_available() || e.size() != g.size || !e.row_contiguous() || e.offset() != 0) continue;
      const std::shared_ptr<Data>& buf = e.buffer();
      if (buf->owner || buf->nbytes != nbytes || buf.use_count() != 1) continue;
      // The descriptor's holders: the members' input slots only (desc_ptr adds one).
      if (e.desc_ptr().use_count() - 1 != reads[x]) continue;
      m.donor = static_cast<int>(x);
      return true;
    }
  }
  return false;
}

void allocate_outputs(Group& g) {
  for (auto& m : g.members) {
    if (!m.out.valid()) continue;
    if (m.donor >= 0) {
      m.out.set_data(g.externals[m.donor]->buffer());
    } else {
      m.out.set_data(allocate(m.out.size() * m.out.itemsize()));
    }
  }
}

namespace {
EnvSwitch& batch_switch() {
  static EnvSwitch s("KILN_BATCH");
  return s;
}

std::atomic<uint64_t> g_batch_runs{0};
}  // namespace

bool batching_enabled() { return batch_switch().on(); }
void set_batching(bool on) { batch_switch().set(on); }
uint64_t batch_runs() { return g_batch_runs.load(std::memory_order_relaxed); }
void count_batch_run() { g_batch_runs.fetch_add(1, std::memory_order_relaxed); }

size_t batch_siblings(std::vector<Step>& steps) {
  if (!batching_enabled()) return 0;
  // Where each node runs (its step), for the check that a moved member's inputs are ready.
  std::unordered_map<const Node*, size_t> step_of;
  bool any = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].node) {
      step_of.emplace(steps[i].node.get(), i);
      any = any || kernels_for(steps[i].node->stream.device).batch(*steps[i].node->def) != nullptr;
    } else {
      for (auto& m : steps[i].group->members) step_of.emplace(m.node.get(), i);
    }
  }
  if (!any) return 0;
  auto ready_before = [&](const array& in, size_t i) {
    if (in.is_available() || !in.has_primitive()) return true;
    auto it = step_of.find(in.node().get());
    return it != step_of.end() && it->second < i;
  };
  // Candidates by their first input's descriptor, in step order.
  std::unordered_map<const ArrayDesc*, std::vector<size_t>> by_input;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Node* n = steps[i].node.get();
    if (!n || n->inputs.empty() || n->outputs.size() != 1 || n->outputs[0].expired()) continue;
    if (!kernels_for(n->stream.device).batch(*n->def)) continue;
    by_input[n->inputs[0].desc_ptr().get()].push_back(i);
  }
  std::vector<bool> gone(steps.size(), false);
  size_t batched = 0;
  for (auto& [desc, idx] : by_input) {
    (void)desc;
    if (idx.size() < 2) continue;
    for (size_t a = 0; a < idx.size(); ++a) {
      const size_t i = idx[a];
      if (gone[i] || !steps[i].node) continue;
      const Node& first = *steps[i].node;
      const BatchRule* rule = kernels_for(first.stream.device).batch(*first.def);
      std::vector<size_t> join;
      for (size_t b = a + 1; b < idx.size(); ++b) {
        const size_t j = idx[b];
        if (gone[j] || !steps[j].node) continue;
        const Node& other = *steps[j].node;
        if (other.def != first.def || other.stream.device != first.stream.device) continue;
        bool ready = true;
        for (size_t k = 1; k < other.inputs.size() && ready; ++k) ready = ready_before(other.inputs[k], i);
        if (ready && rule->joins(first, other)) join.push_back(j);
      }
      if (join.empty()) continue;
      auto group = std::make_unique<Group>();
      group->batch = true;
      group->runner = rule->run;
      std::unordered_map<const ArrayDesc*, int> ext;
      auto add_member = [&](std::shared_ptr<Node> node) {
        Group::Member m;
        m.node = node;
        for (const array& in : node->inputs) {
          auto [e, added] = ext.emplace(in.desc_ptr().get(), static_cast<int>(group->externals.size()));
          if (added) group->externals.push_back(&in);
          m.args.push_back(~e->second);
        }
        m.out = array(node->outputs[0].lock());
        group->members.push_back(std::move(m));
      };
      add_member(steps[i].node);
      for (size_t j : join) {
        add_member(steps[j].node);
        gone[j] = true;
        steps[j].node.reset();
      }
      batched += group->members.size();
      steps[i].node.reset();
      steps[i].group = std::move(group);
    }
  }
  if (batched) {
    steps.erase(std::remove_if(steps.begin(), steps.end(), [](const Step& s) { return !s.node && !s.group; }),
                steps.end());
  }
  return batched;
}

}  // namespace kiln::detail::fusion
