// The Scan primitive's row (cumulative Max, Min, Sum, Prod, LogAddExp along one axis) and its ops. Its
// CPU kernel is src/backend/cpu/kernels/reduce/scan.cpp.
#include <sstream>

#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/reduce/reduce.h"

namespace kiln {

namespace {

using namespace reduce;

std::vector<ArraySpec> scan_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int type = st.i(0);
  const int axis = st.i(1);
  if (type < ScanMax || type > ScanLogAddExp) {
    throw std::invalid_argument("[Scan] Unknown scan type " + std::to_string(type) + ".");
  }
  if (axis < 0 || axis >= static_cast<int>(in[0].shape.size())) {
    std::ostringstream os;
    os << "[Scan] Invalid axis " << axis << " for an input with " << in[0].shape.size() << " dimensions.";
    throw std::invalid_argument(os.str());
  }
  return {{in[0].shape, scan_dtype(type, in[0].dtype)}};
}

std::string scan_name(const State& s) {
  static const char* names[] = {"CumMax", "CumMin", "CumSum", "CumProd", "CumLogAddExp"};
  int t = s.i(0);
  return t >= 0 && t < 5 ? names[t] : "Scan";
}

array scan_op(const array& a, int axis, bool reverse, bool inclusive, ScanType type, const char* api, StreamOrDevice s) {
  axis = detail::normalize_axis(axis, static_cast<int>(a.ndim()), api);
  static const PrimitiveDef& d = detail::def("Scan");
  return make_array(d, State{static_cast<int32_t>(type), static_cast<int32_t>(axis), reverse, inclusive}, {a},
                    {{a.shape(), scan_dtype(type, a.dtype())}}, to_stream(s));
}

}  // namespace

namespace primitives {
// Called from register_reduce (the registered families are a fixed list).
void register_scan_rows() {
  registry::define(detail::row("Scan", 1,
                               {{"type", FieldType::Int},
                                {"axis", FieldType::Int},
                                {"reverse", FieldType::Bool},
                                {"inclusive", FieldType::Bool}},
                               scan_infer, {.display = scan_name, .shapeless = false}));
}
}  // namespace primitives

#define KILN_SCAN_OPS(NAME, TYPE)                                                               \
  array NAME(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {       \
    return scan_op(a, axis, reverse, inclusive, TYPE, #NAME, s);                                \
  }                                                                                             \
  array NAME(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {                  \
    return scan_op(flatten(a, s), 0, reverse, inclusive, TYPE, #NAME, s);                       \
  }
KILN_SCAN_OPS(cumsum, ScanSum)
KILN_SCAN_OPS(cumprod, ScanProd)
KILN_SCAN_OPS(cummax, ScanMax)
KILN_SCAN_OPS(cummin, ScanMin)
KILN_SCAN_OPS(logcumsumexp, ScanLogAddExp)
#undef KILN_SCAN_OPS

}  // namespace kiln
