// SearchSorted's row (MLX 0.32.1; in the table of files from that release on) and the op searchsorted
// (CPU kernel: src/backend/cpu/kernels/sort/search_sorted.cpp):
// for each value, the index of the first element of a sorted 1-D sequence that is not less than it
// ("left") or greater than it ("right"), by binary search. NaN counts as greater than every number,
// the order the sort ops give; complex values compare by real, then imaginary part.
#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "primitives/common.h"

namespace kiln {

namespace {

std::vector<ArraySpec> search_sorted_infer(const State&, const std::vector<ArraySpec>& in) {
  if (in[0].shape.size() != 1) {
    throw std::invalid_argument("[searchsorted] The sorted sequence must be 1-D but has " +
                                std::to_string(in[0].shape.size()) + " dimensions.");
  }
  if (in[0].dtype != in[1].dtype) {
    throw std::invalid_argument(std::string("[searchsorted] The sequence and the values must have the same dtype, "
                                            "found ") + dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype) +
                                ".");
  }
  return {{in[1].shape, uint32}};
}

}  // namespace

namespace primitives {
// Called from register_sort (the registered families are a fixed list).
void register_search_sorted() {
  registry::define(detail::row("SearchSorted", 2, {{"right", FieldType::Bool}},
                               search_sorted_infer));
}
}  // namespace primitives

array searchsorted(const array& sorted_sequence, const array& values, const std::string& side, StreamOrDevice s) {
  if (side != "left" && side != "right") {
    throw std::invalid_argument("[searchsorted] Invalid side '" + side + "'. Expected 'left' or 'right'.");
  }
  if (sorted_sequence.ndim() != 1) {
    throw std::invalid_argument("[searchsorted] The sorted sequence must be 1-D but has " +
                                std::to_string(sorted_sequence.ndim()) + " dimensions.");
  }
  if (sorted_sequence.size() > UINT32_MAX) {
    throw std::invalid_argument("[searchsorted] The sorted sequence has " + std::to_string(sorted_sequence.size()) +
                                " elements, more than the uint32 output can index.");
  }
  Dtype t = promote_types(sorted_sequence.dtype(), values.dtype());
  static const PrimitiveDef& d = detail::def("SearchSorted");
  return make_array(d, State{side == "right"}, {astype(sorted_sequence, t, s), astype(values, t, s)},
                    {{values.shape(), uint32}}, to_stream(s));
}

}  // namespace kiln
