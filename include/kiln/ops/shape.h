// kiln ops: shapes, views, slicing, joining, padding and array creation.
#pragma once

#include "kiln/array.h"

namespace kiln {

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s = {});
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s = {});

}  // namespace kiln
