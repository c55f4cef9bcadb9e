#include "kiln/utils.h"

#include <limits>
#include <sstream>
#include <stdexcept>

namespace kiln {

namespace {

template <typename T>
void float_limits(double& min, double& max, double& eps) {
  min = static_cast<double>(static_cast<float>(std::numeric_limits<T>::lowest()));
  max = static_cast<double>(static_cast<float>(std::numeric_limits<T>::max()));
  eps = static_cast<double>(static_cast<float>(std::numeric_limits<T>::epsilon()));
}

template <typename T>
void int_limits(int64_t& min, uint64_t& max) {
  min = static_cast<int64_t>(std::numeric_limits<T>::min());
  max = static_cast<uint64_t>(std::numeric_limits<T>::max());
}

}  // namespace

finfo::finfo(Dtype t) : dtype(t) {
  if (!is_inexact(t)) {
    std::ostringstream os;
    os << "[finfo] Expected an inexact (floating or complex) dtype, found " << t << ".";
    throw std::invalid_argument(os.str());
  }
  if (t == float64) {
    min = std::numeric_limits<double>::lowest();
    max = std::numeric_limits<double>::max();
    eps = std::numeric_limits<double>::epsilon();
  } else if (t == float16) {
    // binary16: 11 significant bits, largest finite 65504.
    min = -65504.0;
    max = 65504.0;
    eps = 1.0 / 1024.0;
  } else if (t == bfloat16) {
    // bfloat16: float32's exponent with 8 significant bits.
    max = static_cast<double>(static_cast<float>(bfloat16_t::from_bits(0x7f7f)));
    min = -max;
    eps = 1.0 / 128.0;
  } else {  // float32, and complex64's components
    dtype = float32;
    float_limits<float>(min, max, eps);
  }
}

iinfo::iinfo(Dtype t) : dtype(t) {
  switch (t.val) {
    case Dtype::Val::bool_: min = 0; max = 1; break;
    case Dtype::Val::uint8: int_limits<uint8_t>(min, max); break;
    case Dtype::Val::uint16: int_limits<uint16_t>(min, max); break;
    case Dtype::Val::uint32: int_limits<uint32_t>(min, max); break;
    case Dtype::Val::uint64: int_limits<uint64_t>(min, max); break;
    case Dtype::Val::int8: int_limits<int8_t>(min, max); break;
    case Dtype::Val::int16: int_limits<int16_t>(min, max); break;
    case Dtype::Val::int32: int_limits<int32_t>(min, max); break;
    case Dtype::Val::int64: int_limits<int64_t>(min, max); break;
    default: {
      std::ostringstream os;
      os << "[iinfo] Expected an integer dtype, found " << t << ".";
      throw std::invalid_argument(os.str());
    }
  }
}

Dtype result_type(const std::vector<array>& arrays) {
  if (arrays.empty()) throw std::invalid_argument("[result_type] Expected at least one array, found none.");
  Dtype t = arrays[0].dtype();
  for (size_t i = 1; i < arrays.size(); ++i) t = promote_types(t, arrays[i].dtype());
  return t;
}

int normalize_axis_index(int axis, int ndim, const std::string& msg_prefix) {
  if (axis < -ndim || axis >= ndim) {
    std::ostringstream os;
    os << msg_prefix << "Axis " << axis << " is out of bounds for array with " << ndim << " dimensions.";
    throw std::invalid_argument(os.str());
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace kiln
