// kiln ops: element-wise unary, binary and ternary operations, casts and views of bits.
#pragma once

#include "kiln/array.h"

namespace kiln {

array astype(array a, Dtype dtype, StreamOrDevice s = {});
array abs(const array& a, StreamOrDevice s = {});
array negative(const array& a, StreamOrDevice s = {});
array add(const array& a, const array& b, StreamOrDevice s = {});

array operator-(const array& a);
array operator+(const array& a, const array& b);
template <typename T>
array operator+(T a, const array& b) {
  return add(array(a), b);
}
template <typename T>
array operator+(const array& a, T b) {
  return add(a, array(b));
}

}  // namespace kiln
