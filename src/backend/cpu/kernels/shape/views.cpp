// CPU kernels of the view rows (primitives/shape/views.cpp): Reshape (which also serves Flatten and
// Unflatten, whose outputs are reshapes), Transpose, ExpandDims and Squeeze. They share the input's
// buffer (array::set_view); only a reshape of data that no strides can describe copies.
#include "backend/cpu/kernels/shape/shape_kernels.h"

namespace kiln::cpu {

namespace {

// Strides that let `out_shape` view the data of `in` without a copy, if any exist (the input's
// dimensions must split or merge only where they are laid out contiguously).
bool nocopy_strides(const array& in, const Shape& out_shape, Strides& out_st) {
  std::vector<int64_t> od, os;
  for (size_t i = 0; i < in.ndim(); ++i) {
    if (in.shape()[i] != 1) {
      od.push_back(in.shape()[i]);
      os.push_back(in.strides()[i]);
    }
  }
  const int on = static_cast<int>(od.size()), nn = static_cast<int>(out_shape.size());
  out_st.assign(nn, 0);
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nn && oi < on) {
    int64_t np = out_shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= nn) return false;
        np *= out_shape[nj++];
      } else {
        if (oj >= on) return false;
        op *= od[oj++];
      }
    }
    for (int k = oi; k < oj - 1; ++k) {
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    }
    out_st[nj - 1] = os[oj - 1];
    for (int k = nj - 1; k > ni; --k) out_st[k - 1] = out_st[k] * out_shape[k];
    ni = nj++;
    oi = oj++;
  }
  return true;
}

void reshape_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  const array& a = in[0];
  array& o = out[0];
  if (a.row_contiguous() || o.size() == 0) {
    o.set_view(a, row_major_strides(o.shape()), a.offset());
    return;
  }
  Strides st;
  if (nocopy_strides(a, o.shape(), st)) {
    const bool col = a.flags().col_contiguous;
    o.set_view(a, std::move(st), a.offset());
    o.desc_ptr()->col_contiguous_kept = col ? 1 : 0;  // MLX's reshape keeps the input's flags here
    return;
  }
  // Copy in the input's logical order (the shapes differ, so the copy walks the input's shape).
  o.alloc();
  cpu::copy_into(a, o, row_major_strides(a.shape()), 0);
}

void transpose_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const auto& axes = n.state.ints(0);
  Strides st(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) st[i] = in[0].strides()[axes[i]];
  out[0].set_view(in[0], std::move(st), in[0].offset());
}

void expand_dims_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  Strides st = in[0].strides();
  for (int ax : n.state.ints(0)) st.insert(st.begin() + ax, 0);
  out[0].set_view(in[0], std::move(st), in[0].offset());
}

void squeeze_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  const auto& axes = n.state.ints(0);
  Strides st;
  for (size_t i = 0, j = 0; i < in[0].ndim(); ++i) {
    if (j < axes.size() && static_cast<int>(i) == axes[j]) {
      ++j;
    } else {
      st.push_back(in[0].strides()[i]);
    }
  }
  out[0].set_view(in[0], std::move(st), in[0].offset());
}

}  // namespace

void register_cpu_views(detail::KernelTable& table) {
  table.add({{"Reshape", reshape_cpu}, {"Transpose", transpose_cpu}, {"ExpandDims", expand_dims_cpu},
             {"Squeeze", squeeze_cpu}, {"Flatten", reshape_cpu}, {"Unflatten", reshape_cpu}});
}

}  // namespace kiln::cpu
