// Broadcasting: the Broadcast and BroadcastAxes primitives (views with stride 0 along broadcast axes)
// and broadcast_to / broadcast_arrays. Under a shapeless trace, broadcast_arrays emits MLX's multi-input
// forms so that a replay on new shapes can recompute the target. CPU kernel:
// backend/cpu/kernels/shape/broadcast.cpp.
#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/shape/shape_internal.h"
#include "core/mode.h"

namespace kiln {

namespace {

using detail::shape_str;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// ---- Broadcast and BroadcastAxes ----

std::vector<ArraySpec> broadcast_infer(const State& st, const std::vector<ArraySpec>& in) {
  // One input: the recorded target. More (shapeless traces): the broadcast of all input shapes.
  const Shape& target = st.get<std::vector<int32_t>>(0);
  if (in.size() == 1) {
    shape_size(target, "broadcast_to");
    if (detail::broadcast_shapes(in[0].shape, target) != target) {
      fail("[broadcast_to] Cannot broadcast array of shape " + shape_str(in[0].shape) + " into shape " +
           shape_str(target) + ".");
    }
    return {{target, in[0].dtype}};
  }
  Shape out = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) out = detail::broadcast_shapes(out, in[i].shape);
  return {{out, in[0].dtype}};
}

// MLX's BroadcastAxes rule: broadcast the inputs with the ignored trailing axes removed, then put the
// ignored axes back with input 0's sizes.
Shape broadcast_axes_shape(const std::vector<Shape>& shapes, const std::vector<int32_t>& ignore) {
  for (size_t i = 0; i < ignore.size(); ++i) {
    if (ignore[i] >= 0 || (i > 0 && ignore[i] <= ignore[i - 1])) {
      fail("[broadcast_arrays] Received invalid axes to ignore.");
    }
  }
  Shape shape;
  for (auto& s : shapes) {
    const int nd = static_cast<int>(s.size());
    if (!ignore.empty() && nd + ignore.front() < 0) fail("[broadcast_arrays] Received invalid axes to ignore.");
    Shape t = s;
    for (auto it = ignore.rbegin(); it != ignore.rend(); ++it) t.erase(t.begin() + (nd + *it));
    shape = detail::broadcast_shapes(shape, t);
  }
  const int dims = static_cast<int>(ignore.size() + shape.size());
  const int nd0 = static_cast<int>(shapes[0].size());
  for (int ax : ignore) shape.insert(shape.begin() + (dims + ax), shapes[0][nd0 + ax]);
  return shape;
}

std::vector<ArraySpec> broadcast_axes_infer(const State& st, const std::vector<ArraySpec>& in) {
  std::vector<Shape> shapes;
  for (auto& s : in) shapes.push_back(s.shape);
  return {{broadcast_axes_shape(shapes, st.ints(0)), in[0].dtype}};
}

const PrimitiveDef& def_of(const char* name) { return detail::def(name); }

}  // namespace

namespace primitives {
void register_broadcast() {
  registry::define(detail::row("Broadcast", {1, -1}, {{"shape", FieldType::ShapeF}}, broadcast_infer));
  registry::define(detail::row("BroadcastAxes", {1, -1}, {{"ignore_axes", FieldType::IntVec}},
                               broadcast_axes_infer));
}
}  // namespace primitives

Shape broadcast_shapes(const Shape& a, const Shape& b) { return detail::broadcast_shapes(a, b); }

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) return a;
  Shape b = detail::broadcast_shapes(a.shape(), shape);
  if (b != shape) {
    fail("[broadcast_to] Cannot broadcast array of shape " + shape_str(a.shape()) + " into shape " +
         shape_str(shape) + ".");
  }
  shape_size(shape, "broadcast_to");
  static const PrimitiveDef& d = def_of("Broadcast");
  return make_array(d, State{std::vector<int32_t>(shape)}, {a}, {{shape, a.dtype()}}, to_stream(s));
}

// Under a shapeless trace the broadcasts carry the other operands (through stop_gradient) as extra
// inputs, so a replay on new shapes can recompute the target, as MLX does.
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) {
  if (inputs.size() <= 1) return inputs;
  Shape shape = inputs[0].shape();
  for (size_t i = 1; i < inputs.size(); ++i) shape = detail::broadcast_shapes(shape, inputs[i].shape());
  static const PrimitiveDef& d = def_of("Broadcast");
  std::vector<array> out;
  out.reserve(inputs.size());
  if (!detail::in_shapeless_trace()) {
    for (auto& in : inputs) {
      out.push_back(in.shape() == shape ? in
                                        : make_array(d, State{std::vector<int32_t>(shape)}, {in},
                                                     {{shape, in.dtype()}}, to_stream(s)));
    }
    return out;
  }
  std::vector<array> sg;
  for (auto& in : inputs) sg.push_back(stop_gradient(in, s));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape() == shape) {
      out.push_back(inputs[i]);
      continue;
    }
    std::vector<array> p{inputs[i]};
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (j != i) p.push_back(sg[j]);
    }
    out.push_back(make_array(d, State{std::vector<int32_t>(shape)}, std::move(p), {{shape, inputs[i].dtype()}},
                             to_stream(s)));
  }
  return out;
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, std::vector<int> ignore_axes,
                                    StreamOrDevice s) {
  if (inputs.size() <= 1) return inputs;
  std::vector<Shape> shapes;
  for (auto& in : inputs) shapes.push_back(in.shape());
  const std::vector<int32_t> ign(ignore_axes.begin(), ignore_axes.end());
  Shape shape = broadcast_axes_shape(shapes, ign);
  auto target = [&](const array& in) {
    Shape t = shape;
    for (int ax : ign) t[t.size() + ax] = in.shape(ax);
    return t;
  };
  std::vector<array> out;
  out.reserve(inputs.size());
  if (!detail::in_shapeless_trace()) {
    static const PrimitiveDef& d = def_of("Broadcast");
    for (auto& in : inputs) {
      Shape t = target(in);
      out.push_back(in.shape() == t ? in
                                    : make_array(d, State{std::vector<int32_t>(t)}, {in}, {{t, in.dtype()}},
                                                 to_stream(s)));
    }
    return out;
  }
  static const PrimitiveDef& d = def_of("BroadcastAxes");
  std::vector<array> sg;
  for (auto& in : inputs) sg.push_back(stop_gradient(in, s));
  for (size_t i = 0; i < inputs.size(); ++i) {
    Shape t = target(inputs[i]);
    if (inputs[i].shape() == t) {
      out.push_back(inputs[i]);
      continue;
    }
    std::vector<array> p{inputs[i]};
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (j != i) p.push_back(sg[j]);
    }
    out.push_back(make_array(d, State{ign}, std::move(p), {{t, inputs[i].dtype()}}, to_stream(s)));
  }
  return out;
}

}  // namespace kiln
