// Planned programs (core/program.h).
#include "core/program.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/env_switch.h"
#include "core/eval_internal.h"

namespace kiln::detail {

namespace {

EnvSwitch& programs_switch() {
  static EnvSwitch s("KILN_PROGRAMS");
  return s;
}

EnvSwitch& prefetch_switch() {
  static EnvSwitch s("KILN_PROGRAM_PREFETCH");
  return s;
}

// How many steps ahead a step's lines are prefetched. The 4-bit llama decode of bench/compare.py (~480
// steps a call; in-process, alternating blocks of calls, three processes) took 3.64-4.90 ms a call with
// the prefetch against 3.82-5.03 without, 3-5% less in every pair; 1 and 7 steps ahead did no better.
constexpr size_t kPrefetchAhead = 3;
// The first bytes of a constant (a norm's weight, a table) prefetched with its descriptor.
constexpr size_t kConstantBytes = 1024;

}  // namespace

bool programs_enabled() { return programs_switch().on(); }
void set_programs_enabled(bool on) { programs_switch().set(on); }
bool program_prefetch_enabled() { return prefetch_switch().on(); }
void set_program_prefetch(bool on) { prefetch_switch().set(on); }

Program::Program(const std::vector<array>& inputs, std::vector<array> outputs) {
  std::unordered_map<const ArrayDesc*, int> input_of;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].is_available() || inputs[k].has_primitive()) {
      throw std::logic_error("[Program] Input " + std::to_string(k) + " is not a placeholder.");
    }
    input_of.emplace(inputs[k].desc_ptr().get(), static_cast<int>(k));
    in_specs_.push_back({inputs[k].shape(), inputs[k].dtype()});
  }
  for (auto& o : outputs) out_specs_.push_back({o.shape(), o.dtype()});

  auto order = topo_order(outputs, /*placeholders_are_inputs=*/true);
  const int64_t planned = static_cast<int64_t>(order.size());
  ProfileTimer planning;
  auto plan = plan_run(order, outputs);
  planning.stop("(planning)", planned);

  // Slots: one per output of a step's node (members: their one output), numbered as the steps produce them.
  std::map<std::pair<const Node*, uint32_t>, int> slot_of;
  int n_slots = 0;
  std::vector<int> last_reader;
  auto source = [&](const array& a, From& from, int& index, const std::string& reader) {
    if (auto it = input_of.find(a.desc_ptr().get()); it != input_of.end()) {
      from = From::Input;
      index = it->second;
      return;
    }
    if (a.is_available()) {
      from = From::Fixed;
      index = -1;
      return;
    }
    if (a.has_primitive()) {
      auto it = slot_of.find({a.node().get(), a.desc_ptr()->out_index});
      if (it != slot_of.end()) {
        from = From::Slot;
        index = it->second;
        return;
      }
    }
    throw std::invalid_argument("[Program] " + reader +
                                " reads an array that is neither an input, nor evaluated, nor computed by the graph.");
  };

  // A new slot for output k of `node`, listed as one of the step's outputs.
  auto add_slot = [&](Step& s, const Node* node, uint32_t k) {
    slot_of.emplace(std::make_pair(node, k), n_slots++);
    last_reader.push_back(-1);
    s.out_slots.push_back(n_slots - 1);
  };
  steps_.reserve(plan.size());
  for (auto& p : plan) {
    Step s;
    const int here = static_cast<int>(steps_.size());
    auto feed = [&](Node* node, size_t j) {
      From from;
      int index;
      source(node->inputs[j], from, index, "Input " + std::to_string(j) + " of " + node->def->name);
      if (from == From::Fixed) return;  // stays in the node
      s.feeds.push_back(Feed{node, static_cast<uint32_t>(j), from, index});
      if (from == From::Slot) last_reader[static_cast<size_t>(index)] = here;
    };
    if (p.node) {
      try {
        s.kernel = kernel_of(*p.node);
      } catch (const std::exception&) {
        s.kernel = nullptr;  // looked up again when the step runs, which raises the error then
      }
      for (size_t j = 0; j < p.node->inputs.size(); ++j) {
        // A read for the shape only (a shapeless Broadcast's operand) may come before the group that
        // computes it: the node keeps a stand-in of that shape and dtype (the program's shapes are fixed).
        array& in = p.node->inputs[j];
        if (fusion::shape_only(*p.node, j) && !in.is_available()) {
          in = array(in.shape(), in.dtype(), nullptr, 0);
          continue;
        }
        feed(p.node.get(), j);
      }
      s.name = &p.node->def->name;
      for (uint32_t k = 0; k < p.node->specs.size(); ++k) add_slot(s, p.node.get(), k);
      s.node = std::move(p.node);
    } else {
      fusion::Group& g = *p.group;
      for (auto& m : g.members) {
        for (size_t j = 0; j < m.args.size(); ++j) {
          if (m.args[j] < 0) feed(m.node.get(), j);
        }
      }
      for (auto& m : g.members) {
        add_slot(s, m.node.get(), 0);
        s.written.push_back(m.out.valid());
      }
      s.nodes = static_cast<int64_t>(g.members.size());
      s.name = &profile_name(g);
      s.group = std::move(p.group);
    }
    steps_.push_back(std::move(s));
  }
  for (auto& o : outputs) {
    Output out;
    source(o, out.from, out.index, "Output " + std::to_string(outputs_.size()) + " of the program");
    if (out.from == From::Fixed) out.fixed = o;
    if (out.from == From::Slot) last_reader[static_cast<size_t>(out.index)] = static_cast<int>(steps_.size());
    outputs_.push_back(std::move(out));
  }
  // Slots nobody reads are not kept; the others are dropped after their last reader.
  for (size_t i = 0; i < steps_.size(); ++i) {
    for (int& slot : steps_[i].out_slots) {
      if (last_reader[static_cast<size_t>(slot)] < 0) slot = -1;
    }
  }
  for (size_t slot = 0; slot < last_reader.size(); ++slot) {
    const int r = last_reader[slot];
    if (r >= 0 && r < static_cast<int>(steps_.size())) steps_[static_cast<size_t>(r)].release.push_back(static_cast<int>(slot));
  }
  slots_.resize(static_cast<size_t>(n_slots));
  // The planning graph's arrays go: the nodes keep only their fixed inputs; a group's written outputs
  // and its members' reads of each other are set per run (the runner reads members through `args`).
  for (auto& s : steps_) {
    clear_feeds(s);
    if (s.group) {
      for (auto& m : s.group->members) {
        m.out = array();
        for (size_t j = 0; j < m.args.size(); ++j) {
          if (m.args[j] >= 0) m.node->inputs[j] = array();
        }
      }
    }
  }
  plan_prefetch();
}

Program::~Program() = default;

// Lists what each step reads that stays where it is between runs. The addresses are only ever
// prefetched, so one that went stale would cost nothing but the prefetch.
void Program::plan_prefetch() {
  lines_.clear();
  lines_at_.assign(1, 0);
  auto line = [&](const void* p) {
    if (p) lines_.push_back(p);
  };
  auto bytes = [&](const void* p, size_t n) {
    for (size_t o = 0; o < n; o += 64) line(static_cast<const char*>(p) + o);
  };
  auto constant = [&](const array& a) {
    if (!a.valid()) return;
    const ArrayDesc* d = a.desc_ptr().get();
    bytes(d, sizeof(ArrayDesc));
    line(d->shape.data());
    line(d->strides.data());
    if (d->data) {
      line(d->data.get());
      if (d->data->ptr) bytes(d->data->ptr, std::min(d->data->nbytes, kConstantBytes));
    }
  };
  auto node = [&](const Node& n) {
    bytes(&n, sizeof(Node));
    line(n.def);
    bytes(n.inputs.data(), n.inputs.size() * sizeof(array));
    bytes(n.specs.data(), n.specs.size() * sizeof(ArraySpec));
    for (const ArraySpec& sp : n.specs) line(sp.shape.data());
    line(n.outputs.data());
    for (const array& in : n.inputs) constant(in);  // after clear_feeds: the fixed inputs only
  };
  for (const Step& s : steps_) {
    line(s.feeds.data());
    line(s.release.data());
    line(s.out_slots.data());
    if (s.node) node(*s.node);
    if (s.group) {
      const fusion::Group& g = *s.group;
      bytes(&g, sizeof(g));
      bytes(g.members.data(), g.members.size() * sizeof(fusion::Group::Member));
      line(g.externals.data());
      for (const auto& m : g.members) {
        node(*m.node);
        line(m.args.data());
      }
    }
    lines_at_.push_back(static_cast<uint32_t>(lines_.size()));
  }
}

void Program::prefetch(size_t step) const {
  if (step >= steps_.size()) return;
  for (uint32_t i = lines_at_[step]; i < lines_at_[step + 1]; ++i) __builtin_prefetch(lines_[i]);
}

void Program::clear_feeds(const Step& s) {
  for (const Feed& f : s.feeds) f.node->inputs[f.input] = array();
}

std::vector<array> Program::run(const std::vector<array>& in) {
  if (in.size() != in_specs_.size()) {
    throw std::invalid_argument("[Program] Expected " + std::to_string(in_specs_.size()) + " inputs, got " +
                                std::to_string(in.size()) + ".");
  }
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].shape() != in_specs_[k].shape || in[k].dtype() != in_specs_[k].dtype) {
      throw std::invalid_argument("[Program] Input " + std::to_string(k) +
                                  " does not have the shape and dtype the program was planned for.");
    }
    if (!in[k].is_available()) throw std::logic_error("[Program] Input " + std::to_string(k) + " was not evaluated.");
  }
  size_t at = 0;
  const bool ahead = program_prefetch_enabled();
  if (ahead) {
    for (size_t k = 0; k < kPrefetchAhead; ++k) prefetch(k);
  }
  try {
    for (; at < steps_.size(); ++at) {
      Step& s = steps_[at];
      if (ahead) prefetch(at + kPrefetchAhead);
      ProfileTimer timer;
      for (const Feed& f : s.feeds) {
        f.node->inputs[f.input] = f.from == From::Input ? in[static_cast<size_t>(f.index)] : slots_[static_cast<size_t>(f.index)];
      }
      // Last reads: the step's node holds the value now, so a fused group may take over its buffer.
      for (int slot : s.release) slots_[static_cast<size_t>(slot)] = array();
      if (s.node) {
        Node& node = *s.node;
        std::vector<array>& outs = outs_;
        outs.clear();
        node.outputs.resize(node.specs.size());
        for (uint32_t k = 0; k < node.specs.size(); ++k) {
          outs.emplace_back(node.specs[k].shape, node.specs[k].dtype, nullptr, k);
          node.outputs[k] = outs.back().desc_ptr();
        }
        // The kernel found when the program was planned (the program fed every input).
        run_kernel(node, s.kernel ? s.kernel : kernel_of(node), outs);
        for (size_t k = 0; k < outs.size(); ++k) {
          if (s.out_slots[k] >= 0) slots_[static_cast<size_t>(s.out_slots[k])] = std::move(outs[k]);
        }
        outs.clear();
      } else {
        fusion::Group& g = *s.group;
        for (size_t k = 0; k < g.members.size(); ++k) {
          auto& m = g.members[k];
          m.donor = -1;
          const ArraySpec& spec = m.node->specs[0];
          m.out = s.written[k] ? array(spec.shape, spec.dtype, nullptr, 0) : array();
          m.node->outputs.resize(1);
          m.node->outputs[0] = m.out.valid() ? m.out.desc_ptr() : nullptr;
        }
        // A group of one member that runs alone writes the node's live output: give it one.
        array alone;
        if (g.members.size() == 1 && !g.members[0].out.valid()) {
          const ArraySpec& spec = g.members[0].node->specs[0];
          alone = array(spec.shape, spec.dtype, nullptr, 0);
          g.members[0].node->outputs[0] = alone.desc_ptr();
        }
        run_group(g);
        for (size_t k = 0; k < g.members.size(); ++k) {
          if (s.out_slots[k] >= 0) slots_[static_cast<size_t>(s.out_slots[k])] = std::move(g.members[k].out);
          g.members[k].out = array();
        }
      }
      clear_feeds(s);
      timer.stop(*s.name, s.nodes);
    }
  } catch (...) {
    for (size_t i = 0; i <= at && i < steps_.size(); ++i) {
      clear_feeds(steps_[i]);
      if (steps_[i].group) {
        for (auto& m : steps_[i].group->members) m.out = array();
      }
    }
    for (auto& v : slots_) v = array();
    outs_.clear();
    throw;
  }
  std::vector<array> out;
  out.reserve(outputs_.size());
  for (auto& o : outputs_) {
    switch (o.from) {
      case From::Input:
        out.push_back(in[static_cast<size_t>(o.index)]);
        break;
      case From::Fixed:
        out.push_back(o.fixed);
        break;
      case From::Slot:
        out.push_back(slots_[static_cast<size_t>(o.index)]);
        break;
    }
  }
  for (auto& v : slots_) v = array();
  return out;
}

}  // namespace kiln::detail
