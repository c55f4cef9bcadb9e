// Products over a concatenation (core/concat_products.h).
#include "core/concat_products.h"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <unordered_set>

#include "core/graph_rewrite.h"
#include "core/row_patterns.h"

namespace kiln::detail {

namespace {

std::atomic<uint64_t> g_splits{0};

struct Defs {
  const PrimitiveDef *matmul, *concat, *add, *slice, *expand_dims, *transpose, *broadcast;
  bool ok;
};

const Defs& defs() {
  static const Defs d = [] {
    Defs r{registry::find("Matmul"),     registry::find("Concatenate"), registry::find("Add"),
           registry::find("Slice"),      registry::find("ExpandDims"),  registry::find("Transpose"),
           registry::find("Broadcast"),  false};
    r.ok = r.matmul && r.concat && r.add && r.slice && r.expand_dims && r.transpose && r.broadcast;
    return r;
  }();
  return d;
}

using graph_rewrite::producer;
using graph_rewrite::read_once;


int norm_axis(int a, int nd) { return a < 0 ? a + nd : a; }

// Where input axis `a` of view node v lands in its output; -1 when the view cannot carry a split there.
int through_view(const Node* v, int a) {
  const Defs& D = defs();
  const Shape& in = v->inputs[0].shape();
  const Shape& out = v->specs[0].shape;
  const int ind = static_cast<int>(in.size()), outd = static_cast<int>(out.size());
  if (v->def == D.expand_dims) {
    std::vector<bool> inserted(static_cast<size_t>(outd), false);
    for (int x : v->state.ints(0)) {
      const int p = norm_axis(x, outd);
      if (p < 0 || p >= outd) return -1;
      inserted[static_cast<size_t>(p)] = true;
    }
    for (int p = 0, k = 0; p < outd; ++p) {
      if (inserted[static_cast<size_t>(p)]) continue;
      if (k++ == a) return p;
    }
    return -1;
  }
  if (v->def == D.transpose) {
    const auto& perm = v->state.ints(0);
    for (int i = 0; i < static_cast<int>(perm.size()); ++i) {
      if (norm_axis(perm[static_cast<size_t>(i)], ind) == a) return i;
    }
    return -1;
  }
  if (v->def == D.broadcast) {
    const int p = a + (outd - ind);
    return p >= 0 && p < outd && out[static_cast<size_t>(p)] == in[static_cast<size_t>(a)] ? p : -1;
  }
  return -1;
}

// The other operand's values for part [lo, hi) of its axis `ax` (itself when that axis is 1: broadcast).
array slice_axis(const array& a, int ax, int32_t lo, int32_t hi, const Stream& s) {
  if (a.shape()[static_cast<size_t>(ax)] == 1) return a;
  Shape start(a.ndim(), 0), stop = a.shape(), strides(a.ndim(), 1);
  start[static_cast<size_t>(ax)] = lo;
  stop[static_cast<size_t>(ax)] = hi;
  return make_array(*defs().slice, State{start, stop, strides}, {a}, {}, s);
}

struct Split {
  Node* concat = nullptr;
  std::vector<Node*> views;  // from the Concatenate's reader up to the product's operand
  std::vector<int> axes;     // the split axis in the Concatenate's output, then in each view's output
  int side = 0;              // which operand of the product (0: A, 1: B)
};

// The chain under operand `side` of product `mm`, when it ends at a Concatenate it alone reads.
bool find_split(Node* mm, int side, const std::unordered_set<uintptr_t>& outputs, Split& sp) {
  const Defs& D = defs();
  std::vector<Node*> rev;
  Node* n = producer(mm->inputs[static_cast<size_t>(side)]);
  while (n && (n->def == D.expand_dims || n->def == D.transpose || n->def == D.broadcast) && n->inputs.size() == 1) {
    if (!read_once(n, outputs)) return false;
    rev.push_back(n);
    n = producer(n->inputs[0]);
  }
  if (!n || n->def != D.concat || n->inputs.size() < 2 || !read_once(n, outputs)) return false;
  sp.concat = n;
  sp.views.assign(rev.rbegin(), rev.rend());
  sp.side = side;
  int a = norm_axis(n->state.i(0), static_cast<int>(n->specs[0].shape.size()));
  sp.axes = {a};
  for (Node* v : sp.views) {
    a = through_view(v, a);
    if (a < 0) return false;
    sp.axes.push_back(a);
  }
  return true;
}

// The nodes that produce `a` and are not in `known`, inputs first (appended to `into`).
void new_nodes(const array& a, std::unordered_set<const Node*>& known, std::vector<std::shared_ptr<Node>>& into) {
  Node* n = producer(a);
  if (!n || known.count(n)) return;
  for (const array& in : n->inputs) new_nodes(in, known, into);
  known.insert(n);
  into.push_back(a.node());
}

// Rewrites product `mm` per part of sp.concat; false (nothing changed) when the shapes do not allow it.
bool rewrite(Node* mm, const Split& sp, std::unordered_set<const Node*>& known,
             std::vector<std::shared_ptr<Node>>& prelude) {
  const Defs& D = defs();
  const array& op = mm->inputs[static_cast<size_t>(sp.side)];
  const array& other = mm->inputs[static_cast<size_t>(1 - sp.side)];
  const int r = static_cast<int>(op.ndim()), ro = static_cast<int>(mm->specs[0].shape.size());
  const int ro_other = static_cast<int>(other.ndim());
  if (r < 2 || ro_other < 2) return false;
  const int p = sp.axes.back();
  const int contraction = sp.side == 0 ? r - 1 : r - 2;
  const int free = sp.side == 0 ? r - 2 : r - 1;
  enum { Free, Batch, Contract } kind;
  int out_axis = -1, other_axis = -1;
  if (p == free) {
    kind = Free;
    out_axis = sp.side == 0 ? ro - 2 : ro - 1;
  } else if (p == contraction) {
    kind = Contract;
    other_axis = sp.side == 0 ? ro_other - 2 : ro_other - 1;
    if (mm->specs[0].dtype != float32) return false;
  } else {
    kind = Batch;
    if (ro_other != r || ro != r) return false;
    out_axis = p;
    other_axis = p;
  }
  std::vector<array> parts;
  int32_t lo = 0;
  for (const array& x : sp.concat->inputs) {
    const int32_t n = x.shape()[static_cast<size_t>(sp.axes[0])];
    if (n == 0) continue;
    array v = x;
    for (size_t k = 0; k < sp.views.size(); ++k) {
      const Node* view = sp.views[k];
      State st = view->state;
      if (view->def == D.broadcast) {
        Shape shape = view->specs[0].shape;
        shape[static_cast<size_t>(sp.axes[k + 1])] = n;
        st = State{shape};
      }
      v = make_array(*view->def, st, {v}, {}, view->stream);
    }
    array o = other_axis >= 0 ? slice_axis(other, other_axis, lo, lo + n, mm->stream) : other;
    parts.push_back(sp.side == 0 ? make_array(*D.matmul, {}, {v, o}, {}, mm->stream)
                                 : make_array(*D.matmul, {}, {o, v}, {}, mm->stream));
    lo += n;
  }
  if (parts.size() < 2) return false;
  std::vector<array> inputs;
  if (kind == Contract) {
    array acc = parts[0];
    for (size_t i = 1; i + 1 < parts.size(); ++i) acc = make_array(*D.add, {}, {acc, parts[i]}, {}, mm->stream);
    inputs = {acc, parts.back()};
  } else {
    inputs = parts;
  }
  for (const array& in : inputs) new_nodes(in, known, prelude);
  mm->extra.reset();
  mm->primitive.reset();
  if (kind == Contract) {
    mm->def = D.add;
    mm->state = State{};
  } else {
    mm->def = D.concat;
    mm->state = State{static_cast<int32_t>(out_axis)};
  }
  mm->inputs = std::move(inputs);
  return true;
}

}  // namespace

uint64_t concat_product_splits() { return g_splits.load(std::memory_order_relaxed); }

size_t split_concat_products(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs) {
  if (order.size() < 2 || !row_patterns_enabled()) return 0;
  const Defs& D = defs();
  if (!D.ok) return 0;
  // Most evaluations have no such product: the sets are built only once a candidate turns up.
  std::unordered_set<uintptr_t> out_ids;
  std::unordered_set<const Node*> known, removed;
  bool sets = false;
  std::unordered_map<const Node*, std::vector<std::shared_ptr<Node>>> before;  // new nodes, by the node they precede
  size_t rewritten = 0;
  for (const auto& sp_node : order) {
    Node* mm = sp_node.get();
    if (mm->def != D.matmul || mm->inputs.size() != 2 || mm->specs.size() != 1 || removed.count(mm)) continue;
    for (int side = 0; side < 2; ++side) {
      Node* n = producer(mm->inputs[static_cast<size_t>(side)]);
      while (n && (n->def == D.expand_dims || n->def == D.transpose || n->def == D.broadcast) && n->inputs.size() == 1) {
        n = producer(n->inputs[0]);
      }
      if (!n || n->def != D.concat) continue;
      if (!sets) {
        out_ids = graph_rewrite::ids_of(outputs);
        for (const auto& k : order) known.insert(k.get());
        sets = true;
      }
      Split sp;
      if (!find_split(mm, side, out_ids, sp)) continue;
      std::vector<std::shared_ptr<Node>> prelude;
      bool done = false;
      try {
        done = rewrite(mm, sp, known, prelude);
      } catch (const std::exception&) {
        done = false;  // a shape the rows' rules refuse: left as it is
      }
      if (!done) continue;
      removed.insert(sp.concat);
      removed.insert(sp.views.begin(), sp.views.end());
      before[mm] = std::move(prelude);
      ++rewritten;
      break;
    }
  }
  if (!rewritten) return 0;
  std::vector<std::shared_ptr<Node>> next;
  next.reserve(order.size() + 16 * rewritten);
  for (auto& n : order) {
    if (removed.count(n.get())) continue;
    if (auto it = before.find(n.get()); it != before.end()) {
      for (auto& p : it->second) next.push_back(std::move(p));
    }
    next.push_back(std::move(n));
  }
  order = std::move(next);
  g_splits.fetch_add(rewritten, std::memory_order_relaxed);
  return rewritten;
}

}  // namespace kiln::detail
