// Tracing a function and building its tape (spec 2.7 and 4.1, steps 1-3). The depth-first search is
// iterative, so graphs of any depth export without touching the call stack.
#include <algorithm>
#include <unordered_map>

#include "primitives/misc/compiled.h"
#include "primitives/misc/imported_call.h"
#include "primitives/misc/load.h"
#include "core/mode.h"
#include "trace/tape.h"

namespace kiln::detail {

uint64_t ConstantTable::id_for(const array& a, IdAllocator& ids) {
  Key key{a.buffer().get(), a.offset(), a.shape(), a.strides(), a.dtype().code()};
  auto it = map_.find(key);
  if (it != map_.end()) return it->second.first;
  uint64_t id = ids();
  map_.emplace(std::move(key), std::make_pair(id, a));
  return id;
}

array placeholder(const Shape& shape, Dtype dtype) {
  return array(std::make_shared<ArrayDesc>(shape, dtype));
}

namespace {

using format::Entry;
using format::Record;

class TapeBuilder {
 public:
  TapeBuilder(Record& rec, IdAllocator& ids, ConstantTable& constants, const std::vector<array>& inputs,
              const std::vector<array>& examples)
      : rec_(rec), ids_(ids), constants_(constants) {
    ids_of_.reserve(1024);
    for (size_t i = 0; i < inputs.size(); ++i) {
      uint64_t id = ids_();
      rec_.input_ids.push_back(id);
      rec_.inputs.push_back({inputs[i].shape(), inputs[i].dtype()});
      input_index_.emplace(inputs[i].desc_ptr().get(), i);
      ids_of_.emplace(inputs[i].desc_ptr().get(), id);
    }
    for (auto& e : examples) examples_.emplace(e.desc_ptr().get());
  }

  void visit(const array& root) {
    if (ids_of_.count(root.desc_ptr().get()) && !pending_input(root)) return;
    struct Frame {
      array a;
      size_t next;
    };
    std::vector<Frame> stack;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const array a = f.a;
      if (!a.has_primitive() || a.is_available() || input_index_.count(a.desc_ptr().get())) {
        emit_leaf(a);
        stack.pop_back();
        continue;
      }
      const auto& ins = a.inputs();
      if (f.next < ins.size()) {
        const array& in = ins[f.next++];
        if (!ids_of_.count(in.desc_ptr().get()) || pending_input(in)) stack.push_back({in, 0});
        continue;
      }
      emit_node(a);
      stack.pop_back();
    }
  }

  uint64_t id_of(const array& a) const { return ids_of_.at(a.desc_ptr().get()); }

 private:
  // Inputs have ids from the start but enter the tape where the search first reaches them.
  bool pending_input(const array& a) const {
    auto* d = a.desc_ptr().get();
    return input_index_.count(d) && !on_tape_.count(d);
  }

  void emit_leaf(const array& a0) {
    array a = a0;
    auto* d = a.desc_ptr().get();
    if (auto it = input_index_.find(d); it != input_index_.end()) {
      if (!on_tape_.insert(d).second) return;
      Entry e;
      e.kind = Entry::Kind::Input;
      e.id = ids_of_.at(d);
      e.out_ids = {e.id};
      e.specs = {rec_.inputs[it->second]};
      rec_.tape.push_back(std::move(e));
      return;
    }
    if (ids_of_.count(d)) return;
    if (examples_.count(d)) {
      throw std::invalid_argument("[compile] Attempting to compile a function with uncaptured inputs is not allowed.");
    }
    if (!a.is_available()) {
      throw std::invalid_argument(
          "[export_function] The traced function uses a placeholder that is not one of this trace's inputs "
          "(an array from another trace, or an array without data).");
    }
    Entry e;
    e.kind = Entry::Kind::Constant;
    e.id = constants_.id_for(a, ids_);
    e.out_ids = {e.id};
    e.specs = {{a.shape(), a.dtype()}};
    e.value = a;
    ids_of_.emplace(d, e.id);
    rec_.tape.push_back(std::move(e));
  }

  void emit_node(const array& a) {
    const auto& node = a.node();
    // An imported function's constants are lazy Load nodes; read them now and write them as data.
    if (node->def == &load_def()) {
      array c = a;
      c.eval();
      emit_leaf(c);
      return;
    }
    if (node->def == &compiled_def()) {
      emit_compiled(a);
      return;
    }
    if (node->def == &imported_call_def()) {
      emit_imported_call(a);
      return;
    }
    Entry e;
    e.kind = Entry::Kind::Primitive;
    e.def = node->def;
    e.state = node->state;
    e.stream = format::stream_info(node->stream);
    e.inputs.reserve(node->inputs.size());
    for (auto& in : node->inputs) e.inputs.push_back(id_of(in));
    e.specs = node->specs;
    if (e.specs.empty()) throw std::logic_error("[export_function] " + node->def->name + " node has no outputs.");
    if (e.specs.size() == 1) {
      e.out_ids.push_back(ids_());
      ids_of_.emplace(a.desc_ptr().get(), e.out_ids[0]);
    } else {
      for (auto& o : a.outputs()) {  // recreates handles for dropped siblings; keep_ holds them
        uint64_t id = ids_();
        e.out_ids.push_back(id);
        ids_of_.emplace(o.desc_ptr().get(), id);
        keep_.push_back(o);
      }
    }
    e.id = ids_of_.at(a.desc_ptr().get());
    rec_.tape.push_back(std::move(e));
  }

  // compile's fused group: its members, each an entry of its own (no record holds a Compiled node).
  void emit_compiled(const array& a) {
    const auto& node = a.node();
    const CompiledTape& tape = compiled_tape(*node);
    const std::vector<ArraySpec> specs = tape.step_specs(specs_of(node->inputs));
    std::vector<uint64_t> step_ids;
    step_ids.reserve(tape.steps.size());
    for (size_t i = 0; i < tape.steps.size(); ++i) {
      const auto& s = tape.steps[i];
      Entry e;
      e.kind = Entry::Kind::Primitive;
      e.def = s.def;
      e.state = s.state;
      e.stream = format::stream_info(node->stream);
      for (int k : s.args) {
        e.inputs.push_back(k >= 0 ? step_ids.at(static_cast<size_t>(k)) : id_of(node->inputs.at(static_cast<size_t>(~k))));
      }
      e.specs = {specs[i]};
      e.id = ids_();
      e.out_ids = {e.id};
      step_ids.push_back(e.id);
      rec_.tape.push_back(std::move(e));
    }
    std::vector<array> outs = node->specs.size() == 1 ? std::vector<array>{a} : a.outputs();
    for (size_t i = 0; i < outs.size(); ++i) {
      ids_of_.emplace(outs[i].desc_ptr().get(), step_ids.at(static_cast<size_t>(tape.outputs.at(i))));
      if (outs.size() > 1) keep_.push_back(outs[i]);
    }
  }

  // An imported function's call: its record's nodes on the node's inputs (no record holds the call node).
  void emit_imported_call(const array& a) {
    const auto& node = a.node();
    std::vector<array> graph = imported_call_body(*node).expand(node->inputs);
    std::vector<array> outs = node->specs.size() == 1 ? std::vector<array>{a} : a.outputs();
    for (size_t i = 0; i < outs.size(); ++i) {
      visit(graph.at(i));
      ids_of_.emplace(outs[i].desc_ptr().get(), id_of(graph[i]));
      keep_.push_back(graph[i]);
      if (outs.size() > 1) keep_.push_back(outs[i]);
    }
  }

  Record& rec_;
  IdAllocator& ids_;
  ConstantTable& constants_;
  std::unordered_map<const ArrayDesc*, size_t> input_index_;
  std::unordered_map<const ArrayDesc*, uint64_t> ids_of_;
  std::unordered_set<const ArrayDesc*> on_tape_;
  std::unordered_set<const ArrayDesc*> examples_;
  // The traced outputs keep every visited descriptor alive (so addresses stay unique), except
  // sibling handles recreated by outputs(), which are held here.
  std::vector<array> keep_;
};

}  // namespace

format::Record trace_function(const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs, bool shapeless,
                              IdAllocator& ids, ConstantTable& constants) {
  std::vector<std::pair<std::string, array>> kw(kwargs.begin(), kwargs.end());
  std::sort(kw.begin(), kw.end(), [](auto& x, auto& y) { return x.first < y.first; });

  format::Record rec;
  Args targs;
  Kwargs tkwargs;
  std::vector<array> inputs, examples;
  for (auto& a : args) {
    targs.push_back(placeholder(a.shape(), a.dtype()));
    inputs.push_back(targs.back());
    examples.push_back(a);
  }
  for (auto& [k, a] : kw) {
    array p = placeholder(a.shape(), a.dtype());
    tkwargs.emplace(k, p);
    inputs.push_back(p);
    examples.push_back(a);
    rec.kwarg_keys.push_back(k);
  }

  std::vector<array> outputs;
  {
    TraceGuard guard(shapeless);
    outputs = fun(targs, tkwargs);
  }
  for (auto& o : outputs) {
    if (!o.valid()) {
      throw std::invalid_argument("[export_function] The function returned an empty (default-constructed) array.");
    }
  }

  TapeBuilder builder(rec, ids, constants, inputs, examples);
  for (auto& o : outputs) builder.visit(o);
  for (auto& o : outputs) rec.output_ids.push_back(builder.id_of(o));
  return rec;
}

}  // namespace kiln::detail
