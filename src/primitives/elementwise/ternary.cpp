// The row of Select (the primitive behind `where`): out = condition ? x : y, element-wise; and `where`.
// The kernel is in src/backend/cpu/kernels/elementwise/ternary.cpp.
#include <stdexcept>
#include <string>

#include "kiln/ops/shape.h"
#include "primitives/elementwise/rows.h"

namespace kiln {

namespace {

std::vector<ArraySpec> select_infer(const State&, const std::vector<ArraySpec>& in) {
  if (in[1].dtype != in[2].dtype) {
    throw std::invalid_argument("[Select] The two value inputs must have the same dtype but found " +
                                dtype_name(in[1].dtype) + " and " + dtype_name(in[2].dtype) + ".");
  }
  Shape shape = detail::broadcast_shapes(detail::broadcast_shapes(in[0].shape, in[1].shape), in[2].shape);
  return {{shape, in[1].dtype}};
}

}  // namespace

namespace ew {
void register_ternary() {
  registry::define(detail::row("Select", 3, {}, select_infer, {.flags = kElementwise}));
}
}  // namespace ew

array where(const array& condition, const array& x, const array& y, StreamOrDevice s) {
  Dtype t = promote_types(x.dtype(), y.dtype());
  auto in = broadcast_arrays({astype(condition, bool_, s), astype(x, t, s), astype(y, t, s)}, s);
  static const PrimitiveDef& d = detail::def("Select");
  return make_array(d, {}, {in[0], in[1], in[2]}, {{in[0].shape(), t}}, to_stream(s));
}

}  // namespace kiln
