// SearchSorted (MLX 0.32.1; in the table of files from that release on) and the op searchsorted:
// for each value, the index of the first element of a sorted 1-D sequence that is not less than it
// ("left") or greater than it ("right"), by binary search. NaN counts as greater than every number,
// the order the sort ops give; complex values compare by real, then imaginary part.
#include <cmath>

#include "backend/cpu/loops.h"
#include "backend/cpu/ordering.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "primitives/common.h"

namespace kiln {

namespace {

using cpu::nan_last_less;

template <typename T, bool Right>
void search(const T* seq, uint32_t n, const T* v, uint32_t* out, size_t count) {
  cpu::parallel_for(count, cpu::kGrainMedium, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      uint32_t lo = 0, hi = n;
      const T x = v[i];
      while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        bool below = Right ? !nan_last_less(x, seq[mid]) : nan_last_less(seq[mid], x);
        if (below) lo = mid + 1;
        else hi = mid;
      }
      out[i] = lo;
    }
  });
}

void search_sorted_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  out[0].alloc();
  if (out[0].size() == 0) return;
  array seq = in[0].row_contiguous() ? in[0] : cpu::contiguous_copy(in[0]);
  array v = in[1].row_contiguous() ? in[1] : cpu::contiguous_copy(in[1]);
  const bool right = node.state.b(0);
  const auto n = static_cast<uint32_t>(seq.size());
  detail::dispatch_all(seq.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (right) search<T, true>(seq.data<T>(), n, v.data<T>(), out[0].data<uint32_t>(), v.size());
    else search<T, false>(seq.data<T>(), n, v.data<T>(), out[0].data<uint32_t>(), v.size());
  });
}

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
                               search_sorted_infer, search_sorted_cpu));
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
