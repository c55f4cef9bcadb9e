// Slices moved ahead of row-wise work (core/slice_pushdown.h).
#include "core/slice_pushdown.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/graph_rewrite.h"
#include "core/row_patterns.h"

namespace kiln::detail {

namespace {

std::atomic<uint64_t> g_moves{0};

struct Defs {
  const PrimitiveDef *slice, *rms_norm, *layer_norm, *matmul, *qmm, *flatten, *unflatten, *transpose, *reshape,
      *softmax, *rope, *add;
  bool ok;
};

const Defs& defs() {
  static const Defs d = [] {
    Defs r{registry::find("Slice"),  registry::find("RMSNorm"),         registry::find("LayerNorm"),
           registry::find("Matmul"), registry::find("QuantizedMatmul"), registry::find("Flatten"),
           registry::find("Unflatten"), registry::find("Transpose"), registry::find("Reshape"),
           registry::find("Softmax"), registry::find("RoPE"), registry::find("Add"), false};
    r.ok = r.slice && r.rms_norm && r.layer_norm && r.matmul && r.qmm && r.flatten && r.unflatten && r.transpose &&
           r.reshape && r.softmax && r.rope && r.add;
    return r;
  }();
  return d;
}

using graph_rewrite::producer;

// A Slice's start, stop and strides.
struct Range {
  Shape start, stop, strides;
  // Every element of an array of this shape.
  static Range whole(const Shape& shape) { return {Shape(shape.size(), 0), shape, Shape(shape.size(), 1)}; }
  // Axis `to` takes r's range of axis `from`.
  void take(int to, const Range& r, int from) {
    start[to] = r.start[from];
    stop[to] = r.stop[from];
    strides[to] = r.strides[from];
  }
  bool operator<(const Range& o) const {
    return std::tie(start, stop, strides) < std::tie(o.start, o.stop, o.strides);
  }
};

bool range_of(const Node& s, Range& r) {
  if (s.state.values.size() != 3 || s.inputs.size() != 1) return false;
  const auto* a = std::get_if<std::vector<int32_t>>(&s.state.values[0]);
  const auto* b = std::get_if<std::vector<int32_t>>(&s.state.values[1]);
  const auto* c = std::get_if<std::vector<int32_t>>(&s.state.values[2]);
  const size_t nd = s.inputs[0].ndim();
  if (!a || !b || !c || a->size() != nd || b->size() != nd || c->size() != nd) return false;
  r = {*a, *b, *c};
  return true;
}

// The axes the range actually cuts (not the whole axis in order).
std::vector<int> cut_axes(const Range& r, const Shape& shape) {
  std::vector<int> axes;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!(r.start[i] == 0 && r.stop[i] == shape[i] && r.strides[i] == 1)) axes.push_back(static_cast<int>(i));
  }
  return axes;
}

class Pass {
 public:
  Pass(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs)
      : order_(order), out_ids_(graph_rewrite::ids_of(outputs)) {}

  size_t run() {
    std::vector<std::shared_ptr<Node>> work;
    for (const auto& n : order_) {
      if (n->def == defs().slice) work.push_back(n);
    }
    size_t moves = 0;
    while (!work.empty()) {
      std::shared_ptr<Node> s = std::move(work.back());
      work.pop_back();
      std::vector<std::shared_ptr<Node>> made;
      pending_.clear();
      bool moved = false;
      try {
        moved = move(*s, made);
      } catch (const std::exception&) {
        moved = false;  // a shape the rows' rules refuse: left as it is
      }
      if (!moved) {
        for (const auto& k : pending_) memo_.erase(k);  // the slices made for it are dropped with it
        continue;
      }
      ++moves;
      for (auto& m : made) {
        if (m->def == defs().slice) work.push_back(m);
      }
    }
    if (!moves) return 0;
    memo_.clear();  // its arrays held the slices made: now only their readers do
    std::vector<std::shared_ptr<Node>> next;
    next.reserve(order_.size() + before_.size());
    std::unordered_set<const Node*> emitted;
    for (auto& n : order_) emit(n, next, emitted);
    order_ = std::move(next);
    return moves;
  }

 private:
  // Puts n into `next` after the nodes made for it (recursively), once; dropped producers never, nor made
  // nodes nothing reads any more (a slice made for a producer that a later move dropped).
  void emit(const std::shared_ptr<Node>& n, std::vector<std::shared_ptr<Node>>& next,
            std::unordered_set<const Node*>& emitted) {
    if (dropped_.count(n.get()) || !emitted.insert(n.get()).second) return;
    if (made_.count(n.get()) && n->outputs.size() == 1 && n->outputs[0].expired()) return;
    if (auto it = before_.find(n.get()); it != before_.end()) {
      for (const auto& p : it->second) emit(p, next, emitted);
    }
    next.push_back(n);
  }

  // `a` sliced by r on the given axes of the output (out_rank axes, a aligned to the right), whole along
  // axes where a has extent 1; one node per array and range.
  array slice_of(const array& a, const Range& r, const std::vector<int>& axes, const Shape& full, size_t out_rank,
                 const Stream& stream, std::vector<std::shared_ptr<Node>>& made) {
    const int k = static_cast<int>(a.ndim()), off = static_cast<int>(out_rank) - k;
    Range ar = Range::whole(a.shape());
    bool any = false;
    for (int ax : axes) {
      const int j = ax - off;
      if (j < 0 || a.shape()[j] == 1) continue;
      if (a.shape()[j] != full[ax]) throw std::invalid_argument("extent");  // not row-wise here
      ar.take(j, r, ax);
      any = true;
    }
    if (!any) return a;
    return slice_range(a, ar, stream, made);
  }

  // `a` sliced by ar (a's own axes); one node per array and range.
  array slice_range(const array& a, const Range& ar, const Stream& stream, std::vector<std::shared_ptr<Node>>& made) {
    auto key = std::make_pair(a.id(), ar);
    if (auto it = memo_.find(key); it != memo_.end()) {
      made.push_back(it->second.node());
      return it->second;
    }
    array s = make_array(*defs().slice, State{ar.start, ar.stop, ar.strides}, {a}, {}, stream);
    made.push_back(s.node());
    made_.insert(s.node().get());
    memo_.emplace(key, s);
    pending_.push_back(key);
    return s;
  }

  // Through Flatten / Unflatten, where the kept part of the merged axes is one range of the merged axis.
  // Returns false when it is not.
  bool move_reshape(Node& s, Node& p, const Range& r, const std::vector<int>& axes,
                    std::vector<std::shared_ptr<Node>>& made) {
    const array& in = p.inputs[0];
    const Shape& is = in.shape();
    const Shape& out = s.specs[0].shape;
    Range ir = Range::whole(is);
    auto copy_axis = [&](int from, int to) { ir.take(to, r, from); };
    State st = p.state;
    if (p.def == defs().flatten) {
      const int a0 = p.state.i(0), a1 = p.state.i(1);
      for (int ax : axes) {
        if (ax < a0) {
          copy_axis(ax, ax);
        } else if (ax > a0) {
          copy_axis(ax, ax + (a1 - a0));
        } else {
          int only = -1;  // the merged axes must have one of extent > 1, which the cut then is
          for (int k = a0; k <= a1; ++k) {
            if (is[k] == 1) continue;
            if (only >= 0) return false;
            only = k;
          }
          if (only < 0) return false;
          copy_axis(ax, only);
        }
      }
    } else {
      const int a = p.state.i(0);
      Shape shape = p.state.get<std::vector<int32_t>>(1);
      const int gs = static_cast<int>(shape.size());
      int cut = -1;
      for (int ax : axes) {
        if (ax < a) {
          copy_axis(ax, ax);
        } else if (ax >= a + gs) {
          copy_axis(ax, ax - gs + 1);
        } else {
          if (cut >= 0) return false;  // two split axes cut: not one range of the merged one
          cut = ax - a;
        }
      }
      if (cut >= 0) {
        int64_t inner = 1;
        for (int k = 0; k < gs; ++k) {
          if (k < cut && shape[k] != 1) return false;  // rows of each outer index: not one range
          if (k > cut) inner *= shape[k];
        }
        const int ax = a + cut;
        if (inner > 1 && r.strides[ax] != 1) return false;
        if (r.start[ax] < 0 || r.stop[ax] < r.start[ax] || r.strides[ax] <= 0) return false;
        ir.start[a] = static_cast<int32_t>(r.start[ax] * inner);
        ir.stop[a] = static_cast<int32_t>(r.stop[ax] * inner);
        ir.strides[a] = inner > 1 ? 1 : r.strides[ax];
        shape[cut] = out[ax];
        st = State{p.state.values[0], shape};
      }
    }
    std::vector<array> ins = {slice_range(in, ir, s.stream, made)};
    return replace(s, p, st, std::move(ins), made);
  }

  // Through Transpose (each cut axis lands where the permutation took it from) and Reshape (where the cut
  // axes and every axis before them keep their extents, so the kept elements are those axes' ranges).
  bool move_view(Node& s, Node& p, const Range& r, const std::vector<int>& axes,
                 std::vector<std::shared_ptr<Node>>& made) {
    const array& in = p.inputs[0];
    const Shape& is = in.shape();
    const Shape& full = p.specs[0].shape;
    const int ind = static_cast<int>(is.size());
    Range ir = Range::whole(is);
    State st = p.state;
    for (int ax : axes) {
      int to = ax;
      if (p.def == defs().transpose) {
        const auto& perm = p.state.ints(0);
        if (perm.size() != full.size()) return false;
        to = perm[static_cast<size_t>(ax)] < 0 ? perm[static_cast<size_t>(ax)] + ind : perm[static_cast<size_t>(ax)];
        if (to < 0 || to >= ind) return false;
      } else {
        if (ax >= ind) return false;
        for (int k = 0; k <= ax; ++k) {
          if (is[k] != full[k]) return false;
        }
      }
      ir.take(to, r, ax);
    }
    if (p.def == defs().reshape) st = State{std::vector<int32_t>(s.specs[0].shape.begin(), s.specs[0].shape.end())};
    std::vector<array> ins = {slice_range(in, ir, s.stream, made)};
    return replace(s, p, st, std::move(ins), made);
  }

  // Through RoPE: positions run along axis -2 from the offset input, so a cut there (step 1) starts the
  // sliced rows at offset + start; a per-batch offset is sliced with the batch axis.
  bool move_rope(Node& s, Node& p, const Range& r, const std::vector<int>& axes,
                 std::vector<std::shared_ptr<Node>>& made) {
    const Defs& D = defs();
    const int rank = static_cast<int>(p.specs[0].shape.size());
    if (p.inputs.size() < 2 || p.inputs[0].ndim() != static_cast<size_t>(rank)) return false;
    array offset = p.inputs[1];
    for (int ax : axes) {
      if (ax == rank - 1) return false;  // the rotated axis
      if (ax == rank - 2 && (r.strides[ax] != 1 || r.start[ax] < 0)) return false;
      if (ax == 0 && offset.size() > 1) {
        if (offset.ndim() != 1) return false;
        Range orr{Shape{r.start[0]}, Shape{r.stop[0]}, Shape{r.strides[0]}};
        offset = slice_range(offset, orr, s.stream, made);
      }
    }
    const int32_t first = r.start[static_cast<size_t>(rank - 2)];
    if (std::find(axes.begin(), axes.end(), rank - 2) != axes.end() && first != 0) {
      const array step = offset.dtype() == uint32 ? array(static_cast<uint32_t>(first)) : array(first);
      offset = make_array(*D.add, {}, {offset, step}, {{offset.shape(), offset.dtype()}}, s.stream);
      made.push_back(offset.node());
      made_.insert(offset.node().get());
    }
    std::vector<array> ins = {slice_of(p.inputs[0], r, axes, p.specs[0].shape, rank, s.stream, made), offset};
    for (size_t i = 2; i < p.inputs.size(); ++i) ins.push_back(p.inputs[i]);
    return replace(s, p, p.state, std::move(ins), made);
  }

  // Moves slice s through its producer; the new slices go to `made`.
  bool move(Node& s, std::vector<std::shared_ptr<Node>>& made) {
    const Defs& D = defs();
    if (s.def != D.slice || s.specs.size() != 1) return false;
    Range r;
    if (!range_of(s, r)) return false;
    Node* p = producer(s.inputs[0]);
    if (!p || p->specs.size() != 1 || dropped_.count(p) || !graph_rewrite::read_once(p, out_ids_)) return false;
    const Shape& full = p->specs[0].shape;
    const size_t rank = full.size();
    const std::vector<int> axes = cut_axes(r, full);
    if (axes.empty()) return false;
    auto cuts = [&](int ax) { return std::find(axes.begin(), axes.end(), ax) != axes.end(); };
    if ((p->def == D.flatten || p->def == D.unflatten) && p->inputs.size() == 1) {
      return move_reshape(s, *p, r, axes, made);
    }
    if ((p->def == D.transpose || p->def == D.reshape) && p->inputs.size() == 1) {
      return move_view(s, *p, r, axes, made);
    }
    if (p->def == D.rope) return move_rope(s, *p, r, axes, made);
    // Which inputs are sliced (the others are kept whole).
    std::vector<bool> sliced(p->inputs.size(), false);
    if ((p->def->flags & kElementwise) && p->outputs.size() == 1) {
      sliced.assign(p->inputs.size(), true);
    } else if (p->def == D.softmax) {
      if (cuts(static_cast<int>(rank) - 1) || p->inputs.size() != 1) return false;  // it normalizes the last axis
      sliced[0] = true;
    } else if (p->def == D.rms_norm || p->def == D.layer_norm) {
      if (cuts(static_cast<int>(rank) - 1) || p->inputs.empty() || p->inputs[0].ndim() != rank) return false;
      for (size_t i = 1; i < p->inputs.size(); ++i) {
        if (p->inputs[i].ndim() > 1) return false;
      }
      sliced[0] = true;
    } else if (p->def == D.qmm) {
      if (cuts(static_cast<int>(rank) - 1) || p->inputs[0].ndim() != rank || p->inputs[1].ndim() != 2) return false;
      sliced[0] = true;
    } else if (p->def == D.matmul) {
      if (rank < 2 || p->inputs.size() != 2 || cuts(static_cast<int>(rank) - 1)) return false;
      const array &A = p->inputs[0], &B = p->inputs[1];
      if (A.ndim() < 2 || B.ndim() < 2) return false;
      // The rows: A's second-to-last axis; a batch axis: each operand with the output's extent there.
      if (cuts(static_cast<int>(rank) - 2) && A.ndim() != rank) return false;
      const int offb = static_cast<int>(rank - B.ndim());
      for (int ax : axes) {
        if (ax == static_cast<int>(rank) - 2) continue;
        const int jb = ax - offb;
        if (jb >= 0 && B.shape()[jb] != 1 && B.shape()[jb] != full[ax]) return false;
      }
      sliced = {true, true};
      // B along its batch axes only: its last two axes are not cut (the rows cut is A's alone).
      if (cuts(static_cast<int>(rank) - 2)) {
        std::vector<int> batch;
        for (int ax : axes) {
          if (ax < static_cast<int>(rank) - 2) batch.push_back(ax);
        }
        std::vector<array> ins = {slice_of(A, r, axes, full, rank, s.stream, made),
                                  slice_of(B, r, batch, full, rank, s.stream, made)};
        return replace(s, *p, p->state, std::move(ins), made);
      }
    } else {
      return false;
    }
    std::vector<array> ins;
    for (size_t i = 0; i < p->inputs.size(); ++i) {
      ins.push_back(sliced[i] ? slice_of(p->inputs[i], r, axes, full, rank, s.stream, made) : p->inputs[i]);
    }
    return replace(s, *p, p->state, std::move(ins), made);
  }

  // s becomes p's operation (with state st) on the sliced inputs; p is dropped (nothing else reads it).
  bool replace(Node& s, Node& p, const State& st, std::vector<array> ins, std::vector<std::shared_ptr<Node>>& made) {
    // The new output's shape is the slice's: check it with the row's rule before changing anything.
    std::vector<ArraySpec> in_specs;
    for (const array& a : ins) in_specs.push_back({a.shape(), a.dtype()});
    if (p.def->infer) {
      std::vector<ArraySpec> out = p.def->infer(st, in_specs);
      if (out.size() != 1 || out[0] != s.specs[0]) return false;
    }
    auto& list = before_[&s];
    // Nodes made for p (p was made by an earlier move) still come first: they precede its inputs' slices.
    if (auto it = before_.find(&p); it != before_.end()) {
      list.insert(list.end(), it->second.begin(), it->second.end());
      before_.erase(it);
    }
    list.insert(list.end(), made.begin(), made.end());
    s.def = p.def;
    s.state = st;
    s.extra = p.extra;
    s.primitive.reset();
    s.inputs = std::move(ins);
    dropped_.insert(&p);
    p.inputs.clear();  // its inputs are read by the slices now: it must not count as a reader
    return true;
  }

  std::vector<std::shared_ptr<Node>>& order_;
  std::unordered_set<uintptr_t> out_ids_;
  std::unordered_set<const Node*> dropped_;
  std::unordered_map<const Node*, std::vector<std::shared_ptr<Node>>> before_;
  std::map<std::pair<uintptr_t, Range>, array> memo_;
  std::vector<std::pair<uintptr_t, Range>> pending_;  // memo entries of the move being tried
  std::unordered_set<const Node*> made_;
};

}  // namespace

uint64_t slice_pushdowns() { return g_moves.load(std::memory_order_relaxed); }

size_t push_slices_up(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs) {
  if (order.size() < 2 || !row_patterns_enabled() || !defs().ok) return 0;
  bool any = false;
  for (const auto& n : order) any |= n->def == defs().slice;
  if (!any) return 0;
  const size_t moves = Pass(order, outputs).run();
  g_moves.fetch_add(moves, std::memory_order_relaxed);
  return moves;
}

}  // namespace kiln::detail
