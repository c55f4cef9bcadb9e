// Graphviz DOT export of a lazy graph (export.h): the layout MLX's export_to_dot writes, so that tools
// reading MLX's .dot files read kiln's; and print_graph, the same walk as MLX's text listing.
#include <functional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kiln/export.h"

namespace kiln {

namespace {

// Names arrays by identity: the given names first, then "A".."Z", "AA", ... numbered after every name
// handed out so far (given ones included), as MLX's NodeNamer counts.
class DotNames {
 public:
  explicit DotNames(const std::vector<std::pair<array, std::string>>& given) {
    for (auto& [a, n] : given) names_[a.id()] = n;
  }
  const std::string& operator()(const array& a) {
    auto it = names_.find(a.id());
    if (it != names_.end()) return it->second;
    std::string s;
    for (size_t n = names_.size() + 1; n > 0; n = (n - 1) / 26) s.insert(s.begin(), char('A' + (n - 1) % 26));
    return names_.emplace(a.id(), std::move(s)).first->second;
  }

 private:
  std::unordered_map<uintptr_t, std::string> names_;
};

// Post-order walk: inputs before the arrays that use them, each node once (an array's siblings count
// as visited with it).
void walk(const std::vector<array>& outputs, const std::function<void(const array&)>& visit) {
  std::unordered_set<uintptr_t> seen;
  // Iterative, so that deep graphs (long chains of ops) cannot overflow the stack.
  struct Frame {
    array a;
    size_t next = 0;
  };
  for (auto& root : outputs) {
    if (!root.valid() || seen.count(root.id())) continue;
    std::vector<Frame> stack;
    auto enter = [&](const array& a) {
      seen.insert(a.id());
      if (a.has_primitive()) {
        for (auto& s : a.siblings()) seen.insert(s.id());
      }
      stack.push_back({a, 0});
    };
    enter(root);
    while (!stack.empty()) {
      Frame& f = stack.back();
      const std::vector<array>* ins = f.a.has_primitive() ? &f.a.inputs() : nullptr;
      if (ins && f.next < ins->size()) {
        const array& in = (*ins)[f.next++];
        if (!seen.count(in.id())) enter(in);
        continue;
      }
      array done = f.a;
      stack.pop_back();
      visit(done);
    }
  }
}

std::string primitive_label(const Node& n) { return n.def ? n.def->display_name(n.state) : std::string("?"); }

}  // namespace

void export_to_dot(std::ostream& os, const std::vector<array>& outputs,
                   const std::vector<std::pair<array, std::string>>& names) {
  for (auto& o : outputs) {
    if (!o.valid()) throw std::invalid_argument("[export_to_dot] Use of an empty (default-constructed) array.");
  }
  // Arrays some node reads: the others are the graph's sinks.
  std::unordered_set<uintptr_t> used;
  walk(outputs, [&](const array& a) {
    if (!a.has_primitive()) return;
    for (auto& in : a.inputs()) used.insert(in.id());
  });

  DotNames name(names);
  os << "digraph {\n";
  walk(outputs, [&](const array& a) {
    if (!a.has_primitive()) {
      os << "{ rank=source; \"" << name(a) << "\"; }\n";
      return;
    }
    auto node_id = reinterpret_cast<uintptr_t>(a.node().get());
    os << "{ " << node_id << " [label =\"" << primitive_label(*a.node()) << "\", shape=rectangle]; }\n";
    for (auto& in : a.inputs()) os << '"' << name(in) << "\" -> " << node_id << "\n";
    for (auto& out : a.outputs()) {
      os << "{ " << (used.count(out.id()) ? "" : "rank=sink; ") << '"' << name(out) << "\"; }\n";
      os << node_id << " -> \"" << name(out) << "\"\n";
    }
  });
  os << "}";
}

void print_graph(std::ostream& os, const std::vector<array>& outputs,
                 const std::vector<std::pair<array, std::string>>& names) {
  for (auto& o : outputs) {
    if (!o.valid()) throw std::invalid_argument("[print_graph] Use of an empty (default-constructed) array.");
  }
  std::vector<array> tape, inputs;
  walk(outputs, [&](const array& a) { (a.has_primitive() ? tape : inputs).push_back(a); });
  DotNames name(names);
  auto list = [&](const std::vector<array>& arrs) {
    for (size_t i = 0; i < arrs.size(); ++i) {
      os << (i ? ", " : "") << name(arrs[i]) << " [" << arrs[i].shape() << ", " << arrs[i].dtype() << "]";
    }
  };
  os << "Inputs: ";
  list(inputs);
  os << "\nOutputs: ";
  list(outputs);
  os << "\n";
  for (auto& a : tape) {
    os << primitive_label(*a.node()) << " ";
    list(a.inputs());
    os << " -> ";
    list(a.outputs());
    os << "\n";
  }
}

}  // namespace kiln
