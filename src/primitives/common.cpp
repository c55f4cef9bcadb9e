#include "primitives/common.h"

#include <algorithm>

namespace kiln::detail {

int check_axis(int axis, int ndim, const char* api, const char* noun, const char* verb) {
  if (axis < -ndim || axis >= ndim) {
    std::ostringstream os;
    os << "[" << api << "] " << noun << " " << axis << " " << verb << " " << ndim << " dimensions.";
    throw std::invalid_argument(os.str());
  }
  return axis < 0 ? axis + ndim : axis;
}

int normalize_axis(int axis, int ndim, const char* api) {
  return check_axis(axis, ndim, api, "Axis", "is out of bounds for array with");
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* api) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int a : axes) out.push_back(normalize_axis(a, ndim, api));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw std::invalid_argument(std::string("[") + api + "] Received duplicate axes.");
  }
  return out;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      throw std::invalid_argument("[broadcast_shapes] Shapes " + shape_str(a) + " and " + shape_str(b) +
                                  " cannot be broadcast.");
    }
  }
  return out;
}

PrimitiveDef row(std::string name, Arity inputs, std::vector<Field> fields, InferFn infer, RowOptions opt) {
  return {.name = std::move(name),
          .fields = std::move(fields),
          .min_inputs = inputs.min,
          .max_inputs = inputs.max,
          .num_outputs = opt.num_outputs,
          .flags = opt.flags,
          .infer = infer,
          .display = opt.display,
          .shapeless = opt.shapeless,
          .check = opt.check};
}

const PrimitiveDef& def(const char* name) { return registry::get(name); }

}  // namespace kiln::detail
