// Shape primitives: views and data movement. Views share the input's buffer.
#include "kiln/ops/shape.h"

#include "backend/cpu/loops.h"
#include "primitives/common.h"

namespace kiln {

namespace {

std::vector<ArraySpec> broadcast_infer(const State& st, const std::vector<ArraySpec>& in) {
  // One input: the recorded target. More (shapeless traces): the broadcast of all input shapes.
  const Shape& target = st.get<std::vector<int32_t>>(0);
  if (in.size() == 1) {
    Shape b = detail::broadcast_shapes(in[0].shape, target);
    if (b != target) {
      throw std::invalid_argument("[broadcast_to] Cannot broadcast an array of shape " + detail::shape_str(in[0].shape) +
                                  " to shape " + detail::shape_str(target) + ".");
    }
    return {{target, in[0].dtype}};
  }
  Shape out = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) out = detail::broadcast_shapes(out, in[i].shape);
  return {{out, in[0].dtype}};
}

void broadcast_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  const int nd = static_cast<int>(o.ndim());
  const int off = nd - static_cast<int>(a.ndim());
  Strides st(nd, 0);
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    st[off + i] = a.shape()[i] == 1 ? 0 : a.strides()[i];
  }
  o.set_view(a, std::move(st), a.offset());
}

}  // namespace

namespace primitives {
void register_shape() {
  registry::define({.name = "Broadcast",
                    .fields = {{"shape", FieldType::ShapeF}},
                    .min_inputs = 1,
                    .max_inputs = -1,
                    .infer = broadcast_infer,
                    .cpu = broadcast_cpu});
}
}  // namespace primitives

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) return a;
  Shape b = detail::broadcast_shapes(a.shape(), shape);
  if (b != shape) {
    throw std::invalid_argument("[broadcast_to] Cannot broadcast an array of shape " + detail::shape_str(a.shape()) +
                                " to shape " + detail::shape_str(shape) + ".");
  }
  static const PrimitiveDef& d = detail::def("Broadcast");
  return make_array(d, State{std::vector<int32_t>(shape)}, {a}, {{shape, a.dtype()}}, to_stream(s));
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) {
  Shape shape;
  for (auto& a : inputs) shape = detail::broadcast_shapes(shape, a.shape());
  std::vector<array> out;
  out.reserve(inputs.size());
  for (auto& a : inputs) out.push_back(broadcast_to(a, shape, s));
  return out;
}

}  // namespace kiln
