// Batching rule of Convolution (vmap_rules.h). A mapped input alone folds the batch into the input's
// own batch axis (N); a mapped weight makes each example a group of its own: the examples' channels are
// laid side by side (B * C input channels, B * O output channels, B * groups groups), which the
// grouped convolution keeps apart.
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

Result convolution(const Args& a) {
  const Shape& out = a.node.specs[0].shape;  // (N, spatial..., O)
  if (!a.mapped(1)) {
    array x = a.front(0);
    Shape s(x.shape().begin() + 1, x.shape().end());
    s[0] *= a.size;
    array y = rebuild(a, a.state(), {reshape(x, s), a.inputs[1]})[0];
    Shape o = out;
    o.insert(o.begin(), a.size);
    return {{reshape(y, o)}, {0}};
  }
  // x: (B, N, spatial..., C) -> (N, spatial..., B * C); w: (B, O, kernel..., C / g) -> (B * O, kernel..., C / g).
  array x = moveaxis(a.front(0), 0, -2);
  Shape xs = x.shape();
  const int c = xs.back();
  xs.pop_back();
  xs.back() *= c;
  x = reshape(x, xs);
  array w = a.front(1);
  Shape ws(w.shape().begin() + 1, w.shape().end());
  ws[0] *= a.size;
  w = reshape(w, ws);
  State st = a.state();
  st.values[5] = st.i(5) * a.size;
  array y = rebuild(a, st, {x, w})[0];
  Shape o = out;
  o.insert(o.end() - 1, a.size);
  return {{reshape(y, o)}, {static_cast<int>(o.size()) - 2}};
}

}  // namespace

void register_vmap_conv(RuleTable& t) { t.add("Convolution", convolution); }

}  // namespace kiln::vmap_rules
