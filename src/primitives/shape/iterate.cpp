// array::ArrayIterator (kiln/array.h): iterating over an array's first axis yields a[i] as a lazy
// slice + reshape. Defined here, not in core, because it builds ops.
#include "kiln/array.h"
#include "kiln/ops.h"

namespace kiln {

array::ArrayIterator::ArrayIterator(const array& a, int32_t idx) : arr_(&a), idx_(idx) {
  if (a.ndim() == 0) throw std::invalid_argument("[array::begin] Cannot iterate over a 0-d array.");
}

const array array::ArrayIterator::operator*() const {
  const Shape& shape = arr_->shape();
  Shape start(shape.size(), 0);
  Shape stop = shape;
  start[0] = idx_;
  stop[0] = idx_ + 1;
  Shape rest(shape.begin() + 1, shape.end());
  return reshape(slice(*arr_, std::move(start), std::move(stop)), std::move(rest));
}

}  // namespace kiln
