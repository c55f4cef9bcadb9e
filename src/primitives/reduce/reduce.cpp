// The reduction family's primitive rows: Reduce, ArgReduce, LogSumExp, Softmax, NumberOfElements (and,
// from scan.cpp, Scan). Kernels live in src/backend/cpu/kernels/reduce/; op builders in reduce_ops.cpp.
#include "primitives/reduce/reduce.h"

#include <sstream>

#include "core/dispatch.h"
#include "primitives/common.h"

namespace kiln {

namespace reduce {

Dtype sum_dtype(Dtype t) {
  return detail::dispatch_all(t, [](auto tag) { return storage_dtype_of<SumOut<decltype(tag)>>; });
}

}  // namespace reduce

namespace {

using namespace reduce;

[[noreturn]] void bad_state(const std::string& prim, const std::string& what) {
  throw std::invalid_argument("[" + prim + "] " + what);
}

std::string ndim_msg(int axis, size_t ndim) {
  std::ostringstream os;
  os << "Invalid axis " << axis << " for an input with " << ndim << " dimensions.";
  return os.str();
}

const char* reduce_name(const State& s) {
  static const char* names[] = {"And", "Or", "Sum", "Prod", "Min", "Max"};
  int t = s.i(0);
  return t >= 0 && t < 6 ? names[t] : "Reduce";
}

std::vector<ArraySpec> reduce_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int type = st.i(0);
  if (type < And || type > Max) bad_state("Reduce", "Unknown reduce type " + std::to_string(type) + ".");
  const auto& axes = st.ints(1);
  Shape shape = in[0].shape;
  int prev = -1;
  for (int a : axes) {
    if (a < 0 || a >= static_cast<int>(shape.size())) bad_state("Reduce", ndim_msg(a, shape.size()));
    if (a <= prev) bad_state("Reduce", "Axes must be strictly increasing.");
    prev = a;
    shape[a] = 1;
  }
  Dtype t = in[0].dtype;
  if (type == And || type == Or) t = bool_;
  if (type == Sum || type == Prod) t = sum_dtype(t);
  return {{shape, t}};
}

std::vector<ArraySpec> arg_reduce_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int type = st.i(0);
  if (type != ArgMin && type != ArgMax) bad_state("ArgReduce", "Unknown arg-reduce type " + std::to_string(type) + ".");
  const int axis = st.i(1);
  Shape shape = in[0].shape;
  if (axis < 0 || axis >= static_cast<int>(shape.size())) bad_state("ArgReduce", ndim_msg(axis, shape.size()));
  // As the op builder: there is no index to return (a file could record it; fuzz finding).
  if (shape_size(in[0].shape) == 0) {
    const char* api = type == ArgMax ? "argmax" : "argmin";
    throw std::invalid_argument(std::string("[") + api + "] Cannot " + api + " reduce zero size array.");
  }
  shape[axis] = 1;
  return {{shape, uint32}};
}

void require_float_last_axis(const char* prim, const ArraySpec& in) {
  if (in.shape.empty()) bad_state(prim, "The input must have at least one dimension.");
  if (!is_floating_point(in.dtype)) {
    bad_state(prim, "Only defined for floating point types, found " + dtype_name(in.dtype) + ".");
  }
}

std::vector<ArraySpec> logsumexp_infer(const State&, const std::vector<ArraySpec>& in) {
  require_float_last_axis("LogSumExp", in[0]);
  Shape shape = in[0].shape;
  shape.back() = 1;
  return {{shape, in[0].dtype}};
}

std::vector<ArraySpec> softmax_infer(const State&, const std::vector<ArraySpec>& in) {
  require_float_last_axis("Softmax", in[0]);
  return {in[0]};
}

std::vector<ArraySpec> number_of_elements_infer(const State& st, const std::vector<ArraySpec>& in) {
  for (int a : st.ints(0)) {
    if (a < 0 || a >= static_cast<int>(in[0].shape.size())) {
      bad_state("NumberOfElements", ndim_msg(a, in[0].shape.size()));
    }
  }
  return {{Shape{}, st.get<Dtype>(2)}};
}

}  // namespace

namespace primitives {
void register_scan_rows();  // scan.cpp

void register_reduce() {
  registry::define(detail::row("Reduce", 1, {{"type", FieldType::Int}, {"axes", FieldType::IntVec}},
                               reduce_infer,
                               {.flags = kReduction,
                                .display = [](const State& s) { return std::string(reduce_name(s)); }}));
  registry::define(detail::row("ArgReduce", 1, {{"type", FieldType::Int}, {"axis", FieldType::Int}},
                               arg_reduce_infer, {.flags = kReduction}));
  registry::define(detail::row("LogSumExp", 1, {}, logsumexp_infer, {.flags = kReduction}));
  registry::define(detail::row("Softmax", 1, {{"precise", FieldType::Bool}}, softmax_infer));
  registry::define(detail::row("NumberOfElements", 1,
                               {{"axes", FieldType::IntVec},
                                {"inverted", FieldType::Bool}, {"dtype", FieldType::DtypeF}},
                               number_of_elements_infer));
  register_scan_rows();
}
}  // namespace primitives

}  // namespace kiln
