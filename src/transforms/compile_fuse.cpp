// compile's fusion pass (compile_fuse.h): MLX's grouping rules, over a record's entries.
#include "transforms/compile_fuse.h"

#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "primitives/common.h"
#include "primitives/misc/compiled.h"

namespace kiln::detail {

namespace {

using format::Entry;

constexpr int kMaxDepth = 11;   // steps from the group's root (MLX's max_compile_depth)
constexpr size_t kMaxArrays = 24;  // external inputs and outputs of one group (MLX's max_compile_arrays)

class Fuser {
 public:
  Fuser(format::Record& rec, bool shapeless) : rec_(rec), shapeless_(shapeless) {
    broadcast_ = &def("Broadcast");
    const auto& tape = rec_.tape;
    for (size_t i = 0; i < tape.size(); ++i) {
      for (uint64_t id : tape[i].out_ids) producer_[id] = static_cast<int>(i);
      if (tape[i].kind == Entry::Kind::Primitive) {
        for (uint64_t id : tape[i].inputs) readers_[id].push_back(static_cast<int>(i));
      }
    }
    outputs_.insert(rec_.output_ids.begin(), rec_.output_ids.end());
    taken_.assign(tape.size(), false);
  }

  void run() {
    auto& tape = rec_.tape;
    std::unordered_map<int, Entry> fused;  // root index -> its Compiled entry
    for (int i = static_cast<int>(tape.size()) - 1; i >= 0; --i) {
      if (taken_[i] || !fusable(i) || tape[i].def == broadcast_) continue;
      if (auto e = group_at(i)) fused.emplace(i, std::move(*e));
    }
    if (fused.empty()) return;
    std::vector<Entry> out;
    out.reserve(tape.size());
    for (int i = 0; i < static_cast<int>(tape.size()); ++i) {
      if (auto it = fused.find(i); it != fused.end()) {
        out.push_back(std::move(it->second));
      } else if (!taken_[i]) {
        out.push_back(std::move(tape[i]));
      }
    }
    tape = std::move(out);
  }

 private:
  bool fusable(int i) const {
    const Entry& e = rec_.tape[i];
    if (e.kind != Entry::Kind::Primitive || e.out_ids.size() != 1 || e.extra) return false;
    return e.def == broadcast_ || (e.def->flags & kElementwise) != 0;
  }

  bool read_only_by_members(uint64_t id) const {
    auto it = readers_.find(id);
    if (it == readers_.end()) return true;
    for (int r : it->second) {
      if (!members_.count(r)) return false;
    }
    return true;
  }

  // Grow the group of root `root_` through the value `id`, `depth` steps from the root.
  void grow(uint64_t id, int depth) {
    auto p = producer_.find(id);
    const int j = p == producer_.end() ? -1 : p->second;
    if (j >= 0 && (members_.count(j) || copies_.count(j))) return;
    const Entry& root = rec_.tape[root_];
    if (j < 0 || depth >= kMaxDepth || taken_[j] || !fusable(j) || rec_.tape[j].stream != root.stream ||
        (outputs_.count(id) && rec_.tape[j].specs[0].shape != root.specs[0].shape)) {
      external_.insert(id);
      return;
    }
    bool copy = false;
    if (depth > 0 && !read_only_by_members(id)) {
      // Read outside the group: only a broadcast may join, as a copy of its own (the original stays).
      if (rec_.tape[j].def != broadcast_) {
        external_.insert(id);
        return;
      }
      copy = true;
    }
    if (outputs_.count(id) && !copy) {
      external_.insert(id);
    } else {
      external_.erase(id);
    }
    if (external_.size() >= kMaxArrays) return;
    (copy ? copies_ : members_).insert(j);
    for (uint64_t in : rec_.tape[j].inputs) grow(in, depth + 1);
  }

  // The group rooted at entry i as a Compiled entry, or nothing when it would hold one entry.
  std::optional<Entry> group_at(int i) {
    root_ = i;
    members_.clear();
    copies_.clear();
    external_.clear();
    grow(rec_.tape[i].out_ids[0], 0);
    if (members_.size() + copies_.size() <= 1) return std::nullopt;

    // The steps in depth-first post-order from the root; the external inputs in the order first read.
    auto tape = std::make_shared<CompiledTape>();
    tape->shapeless = shapeless_;
    std::unordered_map<int, int> step_of;
    std::unordered_map<uint64_t, int> input_of;
    Entry c;
    std::vector<int> order;
    auto in_group = [&](uint64_t id) {
      auto p = producer_.find(id);
      return p != producer_.end() && (members_.count(p->second) || copies_.count(p->second)) ? p->second : -1;
    };
    std::function<void(uint64_t)> visit = [&](uint64_t id) {
      const int j = in_group(id);
      if (j < 0) {
        if (input_of.emplace(id, static_cast<int>(c.inputs.size())).second) c.inputs.push_back(id);
        return;
      }
      if (step_of.count(j)) return;
      step_of[j] = -1;  // entered (a DAG: no cycles)
      for (uint64_t in : rec_.tape[j].inputs) visit(in);
      step_of[j] = static_cast<int>(order.size());
      order.push_back(j);
    };
    visit(rec_.tape[i].out_ids[0]);

    for (int j : order) {
      const Entry& e = rec_.tape[j];
      CompiledTape::Step s;
      s.def = e.def;
      s.state = e.state;
      s.spec = e.specs[0];
      for (uint64_t in : e.inputs) {
        const int g = in_group(in);
        s.args.push_back(g >= 0 ? step_of.at(g) : ~input_of.at(in));
      }
      tape->steps.push_back(std::move(s));
    }
    // Outputs: the members that are function outputs (in step order), then the root.
    for (size_t k = 0; k + 1 < order.size(); ++k) {
      const int j = order[k];
      if (!copies_.count(j) && outputs_.count(rec_.tape[j].out_ids[0])) {
        tape->outputs.push_back(static_cast<int>(k));
        c.out_ids.push_back(rec_.tape[j].out_ids[0]);
        c.specs.push_back(rec_.tape[j].specs[0]);
      }
    }
    tape->outputs.push_back(static_cast<int>(order.size()) - 1);
    c.out_ids.push_back(rec_.tape[i].out_ids[0]);
    c.specs.push_back(rec_.tape[i].specs[0]);
    for (int j : members_) taken_[j] = true;

    c.kind = Entry::Kind::Primitive;
    c.def = &compiled_def();
    c.id = rec_.tape[i].out_ids[0];
    c.stream = rec_.tape[i].stream;
    c.state = tape->state();
    c.extra = std::move(tape);
    return c;
  }

  format::Record& rec_;
  bool shapeless_;
  const PrimitiveDef* broadcast_ = nullptr;
  std::unordered_map<uint64_t, int> producer_;
  std::unordered_map<uint64_t, std::vector<int>> readers_;
  std::unordered_set<uint64_t> outputs_;
  std::vector<bool> taken_;
  // The group being grown.
  int root_ = -1;
  std::unordered_set<int> members_, copies_;
  std::unordered_set<uint64_t> external_;
};

}  // namespace

void fuse_compiled(format::Record& rec, bool shapeless) { Fuser(rec, shapeless).run(); }

}  // namespace kiln::detail
