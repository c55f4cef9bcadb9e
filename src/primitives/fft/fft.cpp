// FFT: the primitive row, its validation and the kiln::fft ops (the CPU kernel, FFTW in single precision:
// src/backend/cpu/kernels/fft/fft.cpp).
// The primitive's output sizes are not in its state (an irfft of m entries may give 2m - 2 or 2m - 1
// values), so the row has no shape rule: ops pass the output spec, files supply it, and the kernel
// checks that input and output agree before transforming.
#include "kiln/fft.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/fft/fft.h"

namespace kiln {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }
}  // namespace

// ---- validation of a node (from an op or a file) ----

void fft_detail::check_fft(const State& st, const ArraySpec& in, const ArraySpec& out) {
  const auto& axes = st.get<std::vector<uint64_t>>(kAxes);
  const bool inverse = st.b(kInverse), real = st.b(kReal);
  const size_t nd = in.shape.size();
  if (axes.empty()) fail("[FFT] Expected at least one axis.");
  std::set<uint64_t> seen;
  for (uint64_t a : axes) {
    if (a >= nd) fail("[FFT] Invalid axis " + std::to_string(a) + " for an array with " + std::to_string(nd) + " dimensions.");
    if (!seen.insert(a).second) fail("[FFT] Duplicated axis " + std::to_string(a) + ".");
  }
  const Dtype want_in = real && !inverse ? float32 : complex64;
  const Dtype want_out = real && inverse ? float32 : complex64;
  if (in.dtype != want_in || out.dtype != want_out) {
    fail("[FFT] Expected a " + dtype_name(want_in) + " input and a " + dtype_name(want_out) + " output but got " +
         dtype_name(in.dtype) + " and " + dtype_name(out.dtype) + ".");
  }
  Shape expect = in.shape;
  const size_t last = axes.back();
  if (real && !inverse) expect[last] = in.shape[last] / 2 + 1;
  if (real && inverse) {
    if (out.shape.size() == nd) expect[last] = out.shape[last];
    if (expect[last] / 2 + 1 != in.shape[last]) expect[last] = -1;  // no real size fits
  }
  if (out.shape != expect) {
    fail("[FFT] Output shape " + detail::shape_str(out.shape) + " does not match input shape " +
         detail::shape_str(in.shape) + " for this transform.");
  }
  const Shape& logical = real && inverse ? out.shape : in.shape;
  for (uint64_t a : axes) {
    if (logical[a] <= 0) fail("[FFT] Invalid FFT size " + std::to_string(logical[a]) + " along axis " + std::to_string(a) + ".");
  }
}

namespace {

using fft_detail::check_fft;

// ---- ops ----

array fft_op(const array& a, Shape n, const std::vector<int>& axes, bool real, bool inverse, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  if (nd < 1) fail("[fftn] Requires array with at least one dimension.");
  if (n.size() != axes.size()) fail("[fftn] Shape and axes have different sizes.");
  if (axes.empty()) return a;
  std::vector<uint64_t> ax;
  std::set<int> unique;
  for (int v : axes) {
    const int w = v < 0 ? v + nd : v;
    unique.insert(w);
    ax.push_back(static_cast<uint64_t>(w));
  }
  if (unique.size() != axes.size()) fail("[fftn] Duplicated axis received " + detail::shape_str(axes));
  if (*unique.begin() < 0 || *unique.rbegin() >= nd) {
    fail("[fftn] Invalid axis received for array with " + std::to_string(nd) + " dimensions.");
  }
  if (std::any_of(n.begin(), n.end(), [](int v) { return v <= 0; })) {
    fail("[fftn] Invalid FFT output size requested " + detail::shape_str(n));
  }

  // The input the primitive sees: n along each axis (n/2 + 1 complex entries on the last axis of an
  // irfft), cropped or zero-padded from `a`.
  Shape in_shape = a.shape();
  for (size_t i = 0; i < ax.size(); ++i) in_shape[ax[i]] = n[i];
  if (real && inverse) in_shape[ax.back()] = n.back() / 2 + 1;
  array x = a;
  bool crop = false, grow = false;
  for (int i = 0; i < nd; ++i) {
    crop |= in_shape[i] < a.shape(i);
    grow |= in_shape[i] > a.shape(i);
  }
  if (crop) {
    Shape stop(nd);
    for (int i = 0; i < nd; ++i) stop[i] = std::min(in_shape[i], a.shape(i));
    x = slice(x, Shape(nd, 0), stop, s);
  }
  if (grow) x = slice_update(zeros(in_shape, a.dtype(), s), x, Shape(nd, 0), x.shape(), s);

  Shape out_shape = in_shape;
  if (real) out_shape[ax.back()] = inverse ? n.back() : in_shape[ax.back()] / 2 + 1;
  const Dtype in_type = real && !inverse ? float32 : complex64;
  const Dtype out_type = real && inverse ? float32 : complex64;
  static const PrimitiveDef& def = detail::def("FFT");
  return make_array(def, State{std::move(ax), inverse, real}, {astype(x, in_type, s)}, {{out_shape, out_type}},
                    to_stream(s));
}

// Default sizes: the input's, except an irfft's last axis, which gives 2 * (m - 1) real values.
array fft_op(const array& a, const std::vector<int>& axes, bool real, bool inverse, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  if (nd < 1) fail("[fftn] Requires array with at least one dimension.");
  Shape n;
  for (int v : axes) {
    if (v < -nd || v >= nd) fail("[fftn] Invalid axis received for array with " + std::to_string(nd) + " dimensions.");
    n.push_back(a.shape(v < 0 ? v + nd : v));
  }
  if (real && inverse && !n.empty()) n.back() = (n.back() - 1) * 2;
  return fft_op(a, std::move(n), axes, real, inverse, s);
}

array fft_op(const array& a, bool real, bool inverse, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return fft_op(a, axes, real, inverse, s);
}

array shift(const array& a, const std::vector<int>& axes, bool inverse, StreamOrDevice s) {
  if (axes.empty()) return a;
  const int nd = static_cast<int>(a.ndim());
  Shape shifts;
  for (int v : axes) {
    const int w = v < 0 ? v + nd : v;
    if (w < 0 || w >= nd) {
      fail(std::string(inverse ? "[ifftshift]" : "[fftshift]") + " Invalid axis " + std::to_string(v) +
           " for array with " + std::to_string(nd) + " dimensions.");
    }
    // NumPy's convention: the zero frequency lands at index size / 2.
    const int half = a.shape(w) / 2;
    shifts.push_back(inverse ? -half : half);
  }
  return roll(a, shifts, axes, s);
}

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

}  // namespace

namespace primitives {
void register_fft() {
  // The output shape is not a function of the state (MLX records n): files are validated here.
  registry::define(detail::row("FFT", 1,
                               {{"axes", FieldType::SizeVec}, {"inverse", FieldType::Bool}, {"real", FieldType::Bool}},
                               nullptr,
                               {.shapeless = false,
                                .check = [](const State& st, const std::vector<ArraySpec>& in,
                                            const std::vector<ArraySpec>& out) { check_fft(st, in[0], out[0]); }}));
}
}  // namespace primitives

namespace fft {

array fftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s) {
  return fft_op(a, n, axes, false, false, s);
}
array fftn(const array& a, const std::vector<int>& axes, StreamOrDevice s) { return fft_op(a, axes, false, false, s); }
array fftn(const array& a, StreamOrDevice s) { return fft_op(a, false, false, s); }

array ifftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s) {
  return fft_op(a, n, axes, false, true, s);
}
array ifftn(const array& a, const std::vector<int>& axes, StreamOrDevice s) { return fft_op(a, axes, false, true, s); }
array ifftn(const array& a, StreamOrDevice s) { return fft_op(a, false, true, s); }

array rfftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s) {
  return fft_op(a, n, axes, true, false, s);
}
array rfftn(const array& a, const std::vector<int>& axes, StreamOrDevice s) { return fft_op(a, axes, true, false, s); }
array rfftn(const array& a, StreamOrDevice s) { return fft_op(a, true, false, s); }

array irfftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s) {
  return fft_op(a, n, axes, true, true, s);
}
array irfftn(const array& a, const std::vector<int>& axes, StreamOrDevice s) { return fft_op(a, axes, true, true, s); }
array irfftn(const array& a, StreamOrDevice s) { return fft_op(a, true, true, s); }

array fftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s) { return shift(a, axes, false, s); }
array ifftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s) { return shift(a, axes, true, s); }
array fftshift(const array& a, StreamOrDevice s) { return a.ndim() < 1 ? a : shift(a, all_axes(a), false, s); }
array ifftshift(const array& a, StreamOrDevice s) { return a.ndim() < 1 ? a : shift(a, all_axes(a), true, s); }

}  // namespace fft

}  // namespace kiln
