// The row pattern pass (row_patterns.h). It needs only the graph's structure and the registry's rows,
// looked up by name; the fused rows' kernels come from the backend as for any other node.
#include "core/row_patterns.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <unordered_map>
#include <unordered_set>

#include "core/env_switch.h"
#include "core/graph_rewrite.h"

namespace kiln::detail {

namespace {

std::atomic<uint64_t> g_rms{0}, g_layer{0}, g_softmax{0}, g_rope{0};

constexpr int32_t kSum = 2, kMax = 5;  // Reduce types (primitives/reduce/reduce.h)

struct Defs {
  const PrimitiveDef *add = nullptr, *sub = nullptr, *mul = nullptr, *div = nullptr, *square = nullptr,
                     *sqrt = nullptr, *exp = nullptr, *reduce = nullptr, *broadcast = nullptr,
                     *stop_gradient = nullptr, *rms = nullptr, *layer = nullptr, *softmax = nullptr, *load = nullptr;
  // RoPE's decomposition
  const PrimitiveDef *concat = nullptr, *slice = nullptr, *cos = nullptr, *sin = nullptr, *arange = nullptr,
                     *astype = nullptr, *expand_dims = nullptr, *rope = nullptr;
  bool ok = false, rope_ok = false;
};

const Defs& defs() {
  static const Defs d = [] {
    Defs r;
    r.add = registry::find("Add");
    r.sub = registry::find("Subtract");
    r.mul = registry::find("Multiply");
    r.div = registry::find("Divide");
    r.square = registry::find("Square");
    r.sqrt = registry::find("Sqrt");
    r.exp = registry::find("Exp");
    r.reduce = registry::find("Reduce");
    r.broadcast = registry::find("Broadcast");
    r.stop_gradient = registry::find("StopGradient");
    r.rms = registry::find("RMSNorm");
    r.layer = registry::find("LayerNorm");
    r.softmax = registry::find("Softmax");
    r.load = registry::find("Load");
    r.concat = registry::find("Concatenate");
    r.slice = registry::find("Slice");
    r.cos = registry::find("Cos");
    r.sin = registry::find("Sin");
    r.arange = registry::find("Arange");
    r.astype = registry::find("AsType");
    r.expand_dims = registry::find("ExpandDims");
    r.rope = registry::find("RoPE");
    r.rope_ok = r.concat && r.slice && r.cos && r.sin && r.arange && r.astype && r.expand_dims && r.rope;
    r.ok = r.add && r.sub && r.mul && r.div && r.square && r.sqrt && r.exp && r.reduce && r.broadcast && r.rms &&
           r.layer && r.softmax;
    return r;
  }();
  return d;
}

using graph_rewrite::producer;

bool is(const Node* n, const PrimitiveDef* d) { return n && n->def == d && n->specs.size() == 1; }

enum class Kind { Rms, Layer, Softmax, Rope };

struct Match {
  Kind kind = Kind::Rms;
  std::vector<Node*> core;    // intermediates: each must be needed by the pattern alone
  std::vector<Node*> periph;  // broadcasts of constants and parameters: removed when needed by it alone
  array x, w, b;
  float eps = 0.0f;
  // RoPE: x, the offset (w), the rotated dims and the row's base and scale
  int dims = 0;
  float base = 0.0f, scale = 1.0f;
};

// `a` through an optional Broadcast, which joins `into`.
const array& skip_bcast(const array& a, std::vector<Node*>& into) {
  Node* n = producer(a);
  if (is(n, defs().broadcast) && n->inputs.size() == 1) {
    into.push_back(n);
    return n->inputs[0];
  }
  return a;
}

// Nodes of the order the pass evaluated itself (see const_scalar); they leave the order.
thread_local std::unordered_set<const Node*>* t_early = nullptr;

// A constant scalar's value. An imported file's constants are read lazily: on a function's first call
// they are still Load nodes (no inputs), which are evaluated here (a few bytes from the file).
bool const_scalar(const array& a, double& v) {
  if (a.size() != 1 || !is_floating_point(a.dtype())) return false;
  if (!a.is_available()) {
    Node* n = producer(a);
    if (!n || !t_early || !defs().load || n->def != defs().load || !n->inputs.empty()) return false;
    array c = a;
    c.eval();
    t_early->insert(n);
  }
  if (!a.is_available()) return false;
  v = a.item<double>();
  return std::isfinite(v);
}

// A Sum or Max over the last axis only, keeping it (size 1).
bool reduces_last(const Node* n, int32_t type) {
  if (!is(n, defs().reduce) || n->inputs.size() != 1 || n->state.i(0) != type) return false;
  const array& in = n->inputs[0];
  const auto& axes = n->state.ints(1);
  const Shape& out = n->specs[0].shape;
  return in.ndim() >= 1 && axes.size() == 1 && axes[0] == static_cast<int>(in.ndim()) - 1 &&
         out.size() == in.ndim() && out.back() == 1;
}

// mean(u) over the last axis, written sum(u) · (1/n) or sum(u) / n: returns u, or null.
const array* mean_of(const array& a, Match& m) {
  Node* n = producer(a);
  const Defs& D = defs();
  if (!n || n->inputs.size() != 2 || (!is(n, D.mul) && !is(n, D.div))) return nullptr;
  const bool mul = n->def == D.mul;
  for (int i = 0; i < (mul ? 2 : 1); ++i) {
    Node* s = producer(n->inputs[i]);
    if (!reduces_last(s, kSum)) continue;
    const size_t mark = m.periph.size();
    double c = 0;
    if (!const_scalar(skip_bcast(n->inputs[1 - i], m.periph), c)) {
      m.periph.resize(mark);
      continue;
    }
    const double cnt = static_cast<double>(s->inputs[0].shape().back());
    const bool ok = mul ? std::fabs(c * cnt - 1.0) <= 1e-6 : std::fabs(c - cnt) <= 1e-6 * cnt;
    if (!ok) {
      m.periph.resize(mark);
      continue;
    }
    m.core.push_back(n);
    m.core.push_back(s);
    return &s->inputs[0];
  }
  return nullptr;
}

// a = mean(u²) + eps with u² as Square(u) or u · u: returns u (eps into m), or null.
const array* mean_square_plus_eps(const array& a, Match& m) {
  Node* add = producer(a);
  if (!is(add, defs().add) || add->inputs.size() != 2) return nullptr;
  for (int i = 0; i < 2; ++i) {
    const Match saved = m;
    double eps = 0;
    if (!const_scalar(skip_bcast(add->inputs[1 - i], m.periph), eps)) {
      m = saved;
      continue;
    }
    const array* sq = mean_of(add->inputs[i], m);
    Node* q = sq ? producer(*sq) : nullptr;
    const array* u = nullptr;
    if (is(q, defs().square) && q->inputs.size() == 1) {
      u = &q->inputs[0];
    } else if (is(q, defs().mul) && q->inputs.size() == 2 && q->inputs[0].is_same(q->inputs[1])) {
      u = &q->inputs[0];
    }
    if (!u) {
      m = saved;
      continue;
    }
    m.core.push_back(add);
    m.core.push_back(q);
    m.eps = static_cast<float>(eps);
    return u;
  }
  return nullptr;
}

// n = y · rsqrt(mean(y²) + eps) or y / sqrt(mean(y²) + eps); then y is x (RMSNorm) or x - mean(x)
// (LayerNorm, when allowed). Fills m.kind, m.x, m.eps.
bool norm_core(Node* n, bool allow_layer, Match& m) {
  const Defs& D = defs();
  if (!n || n->inputs.size() != 2 || (!is(n, D.mul) && !is(n, D.div))) return false;
  const bool mul = n->def == D.mul;
  for (int i = 0; i < (mul ? 2 : 1); ++i) {
    const Match saved = m;
    const array& y = n->inputs[i];
    Node* r = producer(skip_bcast(n->inputs[1 - i], m.core));
    if (!is(r, D.sqrt) || r->inputs.size() != 1 || r->state.b(0) != mul) {
      m = saved;
      continue;
    }
    const array* u = mean_square_plus_eps(r->inputs[0], m);
    if (!u || !u->is_same(y)) {
      m = saved;
      continue;
    }
    m.core.push_back(n);
    m.core.push_back(r);
    m.kind = Kind::Rms;
    m.x = y;
    Node* c = producer(y);
    if (allow_layer && is(c, D.sub) && c->inputs.size() == 2) {
      const Match before = m;
      const array* mu = mean_of(skip_bcast(c->inputs[1], m.core), m);
      if (mu && mu->is_same(c->inputs[0])) {
        m.core.push_back(c);
        m.kind = Kind::Layer;
        m.x = c->inputs[0];
      } else {
        m = before;
      }
    }
    return true;
  }
  return false;
}

// [w ·] norm: the weight is optional, on either side.
bool weighted_norm(Node* n, bool allow_layer, Match& m) {
  {
    const Match saved = m;
    if (norm_core(n, allow_layer, m)) return true;
    m = saved;
  }
  if (!is(n, defs().mul) || n->inputs.size() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    const Match saved = m;
    const array& w = skip_bcast(n->inputs[1 - i], m.periph);
    Node* inner = producer(n->inputs[i]);
    if (inner && norm_core(inner, allow_layer, m)) {
      m.w = w;
      m.core.push_back(n);
      return true;
    }
    m = saved;
  }
  return false;
}

bool match_norm(Node* root, bool allow_layer, Match& m) {
  if (is(root, defs().add) && root->inputs.size() == 2) {
    if (!allow_layer) return false;
    for (int i = 0; i < 2; ++i) {
      Match t;
      const array& b = skip_bcast(root->inputs[1 - i], t.periph);
      Node* inner = producer(root->inputs[i]);
      if (inner && weighted_norm(inner, true, t) && t.kind == Kind::Layer) {
        t.b = b;
        t.core.push_back(root);
        m = std::move(t);
        return true;
      }
    }
    return false;
  }
  return weighted_norm(root, allow_layer, m);
}

// exp(x - max(x)) / sum(exp(x - max(x))), the max possibly through StopGradient.
bool match_softmax(Node* root, Match& m) {
  const Defs& D = defs();
  if (!is(root, D.div) || root->inputs.size() != 2) return false;
  const array& e = root->inputs[0];
  Node* s = producer(skip_bcast(root->inputs[1], m.core));
  if (!reduces_last(s, kSum) || !s->inputs[0].is_same(e)) return false;
  Node* ex = producer(e);
  if (!is(ex, D.exp) || ex->inputs.size() != 1) return false;
  Node* sub = producer(ex->inputs[0]);
  if (!is(sub, D.sub) || sub->inputs.size() != 2) return false;
  Node* mx = producer(skip_bcast(sub->inputs[1], m.core));
  if (D.stop_gradient && is(mx, D.stop_gradient) && mx->inputs.size() == 1) {
    m.core.push_back(mx);
    mx = producer(mx->inputs[0]);
  }
  if (!reduces_last(mx, kMax) || !mx->inputs[0].is_same(sub->inputs[0])) return false;
  m.core.insert(m.core.end(), {s, ex, sub, mx, root});
  m.kind = Kind::Softmax;
  m.x = sub->inputs[0];
  return true;
}

// ---- RoPE ----
// MLX's CPU fallback of fast.rope (not traditional), on x of shape (B, N, T, D), h = dims / 2:
//   positions = (arange(T) + astype(offset, float32)) [· scale]          (T)
//   freqs     = exp(arange(0, -h, -1) · c), c = log(base) / h            (h)
//   theta     = expand_dims(positions, 1) · freqs                         (T, h)
//   x1, x2    = x[..., :h], x[..., h:2h]
//   out       = concatenate([x1·cos − x2·sin, x1·sin + x2·cos (, x[..., 2h:])], -1)
// (operands of Add/Multiply in either order, Broadcasts optional). It becomes one RoPE node
// (dims, base, scale, forward) reading x and the offset.

// An Arange node of float32 values start, start + step, ... (count values).
bool is_arange(const Node* n, double start, double step, int64_t count) {
  if (!is(n, defs().arange) || !n->inputs.empty() || n->specs[0].dtype != float32) return false;
  const Shape& sh = n->specs[0].shape;
  return sh.size() == 1 && sh[0] == count && n->state.get<double>(0) == start && n->state.get<double>(2) == step;
}

// A Slice of the last axis [lo, hi) of some array, every other axis whole and every stride 1: the array.
const array* last_axis_slice(const array& a, int64_t lo, int64_t hi, Match& m) {
  Node* n = producer(a);
  if (!is(n, defs().slice) || n->inputs.size() != 1) return nullptr;
  const array& src = n->inputs[0];
  const auto& start = n->state.ints(0);
  const auto& stop = n->state.ints(1);
  const auto& strides = n->state.ints(2);
  const size_t nd = src.ndim();
  if (nd == 0 || start.size() != nd || stop.size() != nd || strides.size() != nd) return nullptr;
  for (size_t i = 0; i < nd; ++i) {
    const bool last = i + 1 == nd;
    const int64_t want_lo = last ? lo : 0, want_hi = last ? hi : src.shape()[i];
    if (start[i] != want_lo || stop[i] != want_hi || strides[i] != 1) return nullptr;
  }
  m.core.push_back(n);
  return &src;
}

// A product p·q (either order) one of whose operands is `a`: the other (Broadcasts of either skipped and
// added to `bcasts`).
const array* other_factor(Node* mul, const array& a, std::vector<Node*>& bcasts) {
  if (!is(mul, defs().mul) || mul->inputs.size() != 2) return nullptr;
  for (int i = 0; i < 2; ++i) {
    std::vector<Node*> seen;
    if (skip_bcast(mul->inputs[i], seen).is_same(a)) {
      const array& f = skip_bcast(mul->inputs[1 - i], seen);
      bcasts.insert(bcasts.end(), seen.begin(), seen.end());
      return &f;
    }
  }
  return nullptr;
}

// theta = expand_dims(positions) · freqs: fills offset, scale, base from it.
bool rope_theta(const array& theta, int64_t T, int64_t h, Match& m) {
  const Defs& D = defs();
  Node* t = producer(theta);
  if (!is(t, D.mul) || t->inputs.size() != 2) return false;
  for (int i = 0; i < 2; ++i) {
    Match k = m;
    // positions: ExpandDims(axis 1) of (arange(T) + astype(offset)) [· scale]
    Node* e = producer(skip_bcast(t->inputs[i], k.core));
    if (!is(e, D.expand_dims) || e->inputs.size() != 1 || e->state.ints(0) != std::vector<int32_t>{1}) continue;
    Node* p = producer(e->inputs[0]);
    double scale = 1.0;
    if (is(p, D.mul) && p->inputs.size() == 2) {
      bool found = false;
      for (int j = 0; j < 2 && !found; ++j) {
        const size_t mark = k.periph.size();
        if (const_scalar(skip_bcast(p->inputs[1 - j], k.periph), scale)) {
          k.core.push_back(p);
          p = producer(p->inputs[j]);
          found = true;
        } else {
          k.periph.resize(mark);
        }
      }
      if (!found) continue;
    }
    if (!is(p, D.add) || p->inputs.size() != 2) continue;
    const array* off = nullptr;
    for (int j = 0; j < 2 && !off; ++j) {
      if (!is_arange(producer(p->inputs[j]), 0.0, 1.0, T)) continue;
      const size_t mark = k.periph.size();
      Node* cast = producer(skip_bcast(p->inputs[1 - j], k.periph));
      if (is(cast, D.astype) && cast->inputs.size() == 1 && cast->specs[0].dtype == float32 &&
          cast->specs[0].shape.empty() && (cast->inputs[0].dtype() == int32 || cast->inputs[0].dtype() == uint32) &&
          cast->inputs[0].ndim() == 0) {
        k.core.push_back(producer(p->inputs[j]));
        k.periph.push_back(cast);
        off = &cast->inputs[0];
      } else {
        k.periph.resize(mark);
      }
    }
    if (!off) continue;
    k.core.push_back(p);
    k.core.push_back(e);
    // freqs: exp(arange(0, -h, -1) · c)
    Node* ex = producer(skip_bcast(t->inputs[1 - i], k.core));
    if (!is(ex, D.exp) || ex->inputs.size() != 1) continue;
    Node* fm = producer(ex->inputs[0]);
    if (!is(fm, D.mul) || fm->inputs.size() != 2) continue;
    double c = 0.0;
    bool freqs = false;
    for (int j = 0; j < 2 && !freqs; ++j) {
      if (!is_arange(producer(fm->inputs[j]), 0.0, -1.0, h)) continue;
      const size_t mark = k.periph.size();
      if (const_scalar(skip_bcast(fm->inputs[1 - j], k.periph), c) && c > 0.0) {
        k.core.push_back(producer(fm->inputs[j]));
        freqs = true;
      } else {
        k.periph.resize(mark);
      }
    }
    if (!freqs) continue;
    // The RoPE kernel computes c again as float(log(base)) / h: find a float base that gives c's float.
    const float cf = static_cast<float>(c);
    float base = static_cast<float>(std::exp(c * static_cast<double>(h)));
    auto c_of = [&](float b) { return std::log(b) / static_cast<float>(h); };
    bool exact = false;
    for (int step = 0; step < 256 && !exact; ++step) {
      if (c_of(base) == cf) {
        exact = true;
      } else {
        base = std::nextafter(base, c_of(base) < cf ? INFINITY : 0.0f);
      }
    }
    if (!exact || !std::isfinite(base) || static_cast<double>(static_cast<float>(scale)) != scale) continue;
    k.core.insert(k.core.end(), {fm, ex, t});
    k.w = *off;
    k.scale = static_cast<float>(scale);
    k.base = base;
    m = std::move(k);
    return true;
  }
  return false;
}

// root: Concatenate over the last axis of x1·C − x2·S, x1·S + x2·C (and x's remaining columns).
bool match_rope(Node* root, Match& m) {
  const Defs& D = defs();
  if (!D.rope_ok || !is(root, D.concat) || (root->inputs.size() != 2 && root->inputs.size() != 3)) return false;
  const Shape& os = root->specs[0].shape;
  const int nd = static_cast<int>(os.size());
  if (nd != 4 || (root->state.i(0) != nd - 1 && root->state.i(0) != -1)) return false;
  const int64_t h = root->inputs[0].shape().back();
  const int64_t T = os[2];
  if (h <= 0 || root->inputs[1].shape().back() != h) return false;
  Node* lo = producer(root->inputs[0]);  // x1·C − x2·S
  Node* hi = producer(root->inputs[1]);  // x1·S + x2·C
  if (!is(lo, D.sub) || lo->inputs.size() != 2 || !is(hi, D.add) || hi->inputs.size() != 2) return false;
  Node* x1c = producer(lo->inputs[0]);
  Node* x2s = producer(lo->inputs[1]);
  const array* x1 = nullptr;
  const array* x = nullptr;
  // x1 · C: find x1 as a slice [0, h) of x
  for (int i = 0; i < 2 && !x; ++i) {
    if (!is(x1c, D.mul) || x1c->inputs.size() != 2) break;
    Match k = m;
    if (const array* src = last_axis_slice(x1c->inputs[i], 0, h, k)) {
      x1 = &x1c->inputs[i];
      x = src;
      m = std::move(k);
    }
  }
  // The rotation keeps x's shape and type: float32, or a 16-bit x whose cosines and sines are cast to it.
  if (!x || x->shape() != os) return false;
  const Dtype xt = x->dtype();
  if (xt != float32 && xt != float16 && xt != bfloat16) return false;
  const array* cosv = other_factor(x1c, *x1, m.core);
  if (!cosv) return false;
  // x2 · S with x2 the slice [h, 2h) of the same x
  const array* x2 = nullptr;
  for (int i = 0; i < 2 && !x2; ++i) {
    if (!is(x2s, D.mul) || x2s->inputs.size() != 2) return false;
    Match k = m;
    const array* src = last_axis_slice(x2s->inputs[i], h, 2 * h, k);
    if (src && src->is_same(*x)) {
      x2 = &x2s->inputs[i];
      m = std::move(k);
    }
  }
  if (!x2) return false;
  const array* sinv = other_factor(x2s, *x2, m.core);
  if (!sinv) return false;
  // x1 · S + x2 · C: the same four arrays
  Node* a = producer(hi->inputs[0]);
  Node* b = producer(hi->inputs[1]);
  const array* s1 = other_factor(a, *x1, m.core);
  const array* c2 = other_factor(b, *x2, m.core);
  if (!s1 || !c2) {
    std::swap(a, b);
    s1 = other_factor(a, *x1, m.core);
    c2 = other_factor(b, *x2, m.core);
  }
  if (!s1 || !c2 || !s1->is_same(*sinv) || !c2->is_same(*cosv)) return false;
  // C = cos(theta), S = sin(theta) of one theta (T, h); for a 16-bit x, each through an AsType to x's type
  Node* cn = producer(*cosv);
  Node* sn = producer(*sinv);
  if (xt != float32) {
    auto cast_of = [&](Node* n) -> Node* {
      if (!is(n, D.astype) || n->inputs.size() != 1 || n->specs[0].dtype != xt || n->inputs[0].dtype() != float32) {
        return nullptr;
      }
      m.core.push_back(n);
      return producer(n->inputs[0]);
    };
    cn = cast_of(cn);
    sn = cast_of(sn);
  }
  if (!is(cn, D.cos) || !is(sn, D.sin) || cn->inputs.size() != 1 || sn->inputs.size() != 1 ||
      !cn->inputs[0].is_same(sn->inputs[0])) {
    return false;
  }
  const array& theta = cn->inputs[0];
  if (theta.shape() != Shape{static_cast<int32_t>(T), static_cast<int32_t>(h)} || theta.dtype() != float32) return false;
  if (root->inputs.size() == 3) {  // the columns past the rotated ones, unchanged
    Match k = m;
    const array* src = last_axis_slice(root->inputs[2], 2 * h, os[3], k);
    if (!src || !src->is_same(*x)) return false;
    m = std::move(k);
  } else if (2 * h != os[3]) {
    return false;
  }
  // The nodes on x's side (slices, the casts and Broadcasts of the cosines and sines, the products, the
  // difference and sum) compute in x's type, the angles' nodes in float32.
  m.core.insert(m.core.end(), {lo, hi, x1c, x2s, a, b});
  for (const Node* n : m.core) {
    if (n->specs[0].dtype != xt) return false;
  }
  const size_t angles = m.core.size();
  if (!rope_theta(theta, T, h, m)) return false;
  m.core.insert(m.core.end(), {cn, sn});
  for (size_t i = angles; i < m.core.size(); ++i) {
    if (m.core[i]->specs[0].dtype != float32) return false;
  }
  m.kind = Kind::Rope;
  m.x = *x;
  m.dims = static_cast<int>(2 * h);
  return true;
}

// Shapes and dtypes: float32 throughout, elementwise nodes on x's shape or its rows' shape (last axis 1),
// the root producing x's shape, parameters scalars or vectors of the last axis's size.
bool well_formed(const Node* root, const Match& m) {
  if (m.kind == Kind::Rope) return true;  // match_rope checks its own shapes and dtypes
  const array& x = m.x;
  if (!x.valid() || x.dtype() != float32 || x.ndim() == 0 || x.shape().back() == 0) return false;
  const Shape& xs = x.shape();
  Shape rows = xs;
  rows.back() = 1;
  if (root->specs[0].shape != xs || root->specs[0].dtype != float32) return false;
  for (const Node* n : m.core) {
    if (n->specs[0].dtype != float32 || (n->specs[0].shape != xs && n->specs[0].shape != rows)) return false;
  }
  for (const array* p : {&m.w, &m.b}) {
    if (!p->valid()) continue;
    if (p->dtype() != float32 || p->ndim() > 1 || (p->size() != 1 && p->size() != static_cast<size_t>(xs.back()))) {
      return false;
    }
  }
  return true;
}

// Whether n's output is referenced only by the inputs counted in `refs` (the pattern's nodes).
bool exclusive(const Node* n, const std::unordered_map<uintptr_t, long>& refs,
               const std::unordered_set<uintptr_t>& outputs) {
  long uses = 0;
  uintptr_t id = 0;
  if (!graph_rewrite::output_holders(n, outputs, uses, id)) return false;
  auto it = refs.find(id);
  return it != refs.end() && it->second == uses;
}

void count_into(const Node* n, std::unordered_map<uintptr_t, long>& refs) {
  for (const array& in : n->inputs) ++refs[in.id()];
}

// Takes out of `candidates`, until none more can go, each node read only by what `refs` counts (the
// nodes already going): its inputs are counted in turn (what it alone read may go next) and it is
// passed to `take`.
template <typename Take>
void take_exclusive(std::vector<Node*>& candidates, std::unordered_map<uintptr_t, long>& refs,
                    const std::unordered_set<uintptr_t>& outputs, Take&& take) {
  for (bool more = true; more;) {
    more = false;
    for (auto it = candidates.begin(); it != candidates.end();) {
      if (exclusive(*it, refs, outputs)) {
        take(*it);
        count_into(*it, refs);
        it = candidates.erase(it);
        more = true;
      } else {
        ++it;
      }
    }
  }
}

// Checks exclusivity; on success lists the nodes to remove (core, and the exclusive peripheral ones).
bool removable(const Node* root, Match& m, const std::unordered_set<uintptr_t>& outputs,
               std::vector<Node*>& remove, std::vector<Node*>& left) {
  std::sort(m.core.begin(), m.core.end());
  m.core.erase(std::unique(m.core.begin(), m.core.end()), m.core.end());
  m.core.erase(std::remove(m.core.begin(), m.core.end(), root), m.core.end());
  std::sort(m.periph.begin(), m.periph.end());
  m.periph.erase(std::unique(m.periph.begin(), m.periph.end()), m.periph.end());
  std::unordered_map<uintptr_t, long> refs;
  auto count = [&](const Node* n) {
    for (const array& in : n->inputs) ++refs[in.id()];
  };
  count(root);
  for (const Node* n : m.core) count(n);
  for (const Node* n : m.periph) count(n);
  remove.clear();
  for (Node* n : m.core) {
    if (!exclusive(n, refs, outputs)) return false;
    remove.push_back(n);
  }
  // A peripheral node goes when only the removed nodes read it; one that stays keeps what it reads (a
  // Broadcast shared with another pattern keeps the AsType under it), so this repeats until nothing
  // more can go.
  std::unordered_map<uintptr_t, long> gone;
  count_into(root, gone);
  for (const Node* n : m.core) count_into(n, gone);
  left.clear();
  for (Node* n : m.periph) {
    if (std::find(m.core.begin(), m.core.end(), n) == m.core.end()) left.push_back(n);
  }
  take_exclusive(left, gone, outputs, [&](Node* n) { remove.push_back(n); });
  return true;
}

void rewrite(Node* root, const Match& m) {
  const Defs& D = defs();
  root->extra.reset();
  root->primitive.reset();  // its class is the new row's
  switch (m.kind) {
    case Kind::Rms:
      root->def = D.rms;
      root->state = State{std::monostate{}, m.eps};
      root->inputs = {m.x, m.w.valid() ? m.w : array(1.0f, float32)};
      g_rms.fetch_add(1, std::memory_order_relaxed);
      break;
    case Kind::Layer:
      root->def = D.layer;
      root->state = State{std::monostate{}, m.eps};
      root->inputs = {m.x, m.w.valid() ? m.w : array(1.0f, float32), m.b.valid() ? m.b : array(0.0f, float32)};
      g_layer.fetch_add(1, std::memory_order_relaxed);
      break;
    case Kind::Softmax:
      root->def = D.softmax;
      root->state = State{false};
      root->inputs = {m.x};
      g_softmax.fetch_add(1, std::memory_order_relaxed);
      break;
    case Kind::Rope:
      root->def = D.rope;
      root->state = State{std::monostate{}, m.dims, false, m.base, m.scale, true};
      root->inputs = {m.x, m.w};
      g_rope.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

}  // namespace

namespace {
EnvSwitch& patterns_switch() {
  static EnvSwitch s("KILN_PATTERNS");
  return s;
}
}  // namespace

void set_row_patterns_enabled(bool on) { patterns_switch().set(on); }

bool row_patterns_enabled() { return patterns_switch().on(); }

RowPatternCounts row_pattern_counts() {
  return {g_rms.load(std::memory_order_relaxed), g_layer.load(std::memory_order_relaxed),
          g_softmax.load(std::memory_order_relaxed), g_rope.load(std::memory_order_relaxed)};
}

size_t rewrite_row_patterns(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs) {
  if (order.size() < 2 || !row_patterns_enabled()) return 0;
  const Defs& D = defs();
  if (!D.ok) return 0;
  const std::unordered_set<uintptr_t> out_ids = graph_rewrite::ids_of(outputs);
  std::unordered_set<const Node*> removed, early;
  struct EarlyScope {  // t_early names this call's set while it runs (restored on exceptions too)
    std::unordered_set<const Node*>* outer;
    explicit EarlyScope(std::unordered_set<const Node*>* mine) : outer(t_early) { t_early = mine; }
    ~EarlyScope() { t_early = outer; }
  } scope(&early);
  std::vector<Node*> remove, left, kept;
  size_t rewritten = 0;
  // From the end, so the largest pattern wins (a LayerNorm's inner product is itself an RMSNorm form).
  for (size_t k = order.size(); k-- > 0;) {
    Node* root = order[k].get();
    if (removed.count(root) || root->specs.size() != 1) continue;
    const bool norm_root = root->def == D.add || root->def == D.mul || root->def == D.div;
    const bool rope_root = root->def == D.concat;
    if (!norm_root && !rope_root) continue;
    bool done = false;
    for (int attempt = rope_root ? 3 : 0; attempt < (rope_root ? 4 : 3) && !done; ++attempt) {
      Match m;
      bool found = false;
      try {
        found = attempt == 0   ? match_norm(root, true, m)
                : attempt == 1 ? match_norm(root, false, m)
                : attempt == 2 ? match_softmax(root, m)
                               : match_rope(root, m);
      } catch (const std::exception&) {
        found = false;  // a state the pass cannot read (or a constant that fails to load): left as it is
      }
      if (!found || !well_formed(root, m) || !removable(root, m, out_ids, remove, left)) continue;
      bool clash = false;
      for (Node* n : remove) clash |= removed.count(n) != 0;
      if (clash) continue;
      removed.insert(remove.begin(), remove.end());
      kept.insert(kept.end(), left.begin(), left.end());
      rewrite(root, m);
      ++rewritten;
      done = true;
    }
  }
  // Peripheral nodes shared by several patterns (the offset's Broadcast that MLX's query and key RoPEs
  // both read) stayed while another pattern's nodes still read them: they go once only removed nodes do.
  if (!kept.empty()) {
    std::unordered_map<uintptr_t, long> gone;
    for (const Node* n : removed) count_into(n, gone);
    kept.erase(std::remove_if(kept.begin(), kept.end(), [&](Node* n) { return removed.count(n) != 0; }), kept.end());
    take_exclusive(kept, gone, out_ids, [&](Node* n) { removed.insert(n); });
  }
  if (rewritten || !early.empty()) {
    order.erase(std::remove_if(order.begin(), order.end(),
                               [&](const std::shared_ptr<Node>& n) {
                                 return removed.count(n.get()) != 0 || early.count(n.get()) != 0;
                               }),
                order.end());
  }
  return rewritten;
}

}  // namespace kiln::detail
