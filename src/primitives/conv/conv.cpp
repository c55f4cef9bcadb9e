// Convolution: the primitive row, its shape rule and the conv ops (conv1d/2d/3d, conv_general and the
// transposed convolutions). The CPU kernel lives in backend/cpu/kernels/conv/conv.cpp.
#include <cstdint>
#include <limits>
#include <sstream>

#include "kiln/ops/conv.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"

namespace kiln {

namespace {

// State field indices (spec 3.4 row 24, on-disk order).
enum : size_t { kStrides, kPadLo, kPadHi, kKernelDil, kInputDil, kGroups, kFlip };

using detail::shape_str;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// The input checks of MLX's conv ops (dtype, ranks, channels and groups), with its messages.
void check_conv_inputs(const ArraySpec& in, const ArraySpec& wt, int d, int groups) {
  if (!is_floating_point(in.dtype)) {
    fail("[conv] Invalid input array with type " + dtype_name(in.dtype) +
         ". Convolution currently only supports floating point types");
  }
  if (static_cast<int>(in.shape.size()) != d + 2) {
    fail("[conv] Invalid input array with " + std::to_string(in.shape.size()) + " dimensions for " +
         std::to_string(d) + "D convolution. Expected an array with " + std::to_string(d + 2) +
         " dimensions following the format [N, ..., C_in].");
  }
  if (static_cast<int>(wt.shape.size()) != d + 2) {
    fail("[conv] Invalid weight array with " + std::to_string(wt.shape.size()) + " dimensions for " +
         std::to_string(d) + "D convolution. Expected an array with " + std::to_string(d + 2) +
         " dimensions following the format [C_out, ..., C_in].");
  }
  if (groups <= 0) {
    // MLX divides by the group count without checking it; kiln refuses it instead.
    fail("[conv] The number of groups must be positive. Got " + std::to_string(groups) + " groups.");
  }
  const int cin = in.shape[d + 1];
  if (cin % groups != 0) {
    fail("[conv] The input channels must be divisible by the number of groups. Got input with shape " +
         shape_str(in.shape) + " and " + std::to_string(groups) + " groups.");
  }
  if (groups > 1 && wt.shape[0] % groups != 0) {
    fail("[conv] If groups > 1, the output channels must be divisible by the number of groups. Got " +
         std::to_string(wt.shape[0]) + " output channels and " + std::to_string(groups) + " groups.");
  }
  const int64_t expect = static_cast<int64_t>(groups) * wt.shape[d + 1];
  if (cin != expect) {
    if (groups == 1) {
      fail("[conv] Expect the input channels in the input and weight array to match but got shapes - input: " +
           shape_str(in.shape) + " and weight: " + shape_str(wt.shape));
    }
    fail("Given groups=" + std::to_string(groups) + " and weights of shape " + shape_str(wt.shape) +
         ", expected to have " + std::to_string(expect) + " input channels but got " + std::to_string(cin) +
         " input channels instead.");
  }
}

// Output shape (N, o_1..o_d, C_out), with MLX's parameter checks. The division truncates towards zero
// as MLX's does, so a kernel that overhangs the padded input by less than one stride still gives one
// output (the overhang reads zeros).
Shape conv_out_shape(const Shape& in, const Shape& wt, const std::vector<int>& strides,
                     const std::vector<int>& lo, const std::vector<int>& hi, const std::vector<int>& kdil,
                     const std::vector<int>& idil) {
  const size_t d = in.size() - 2;
  if (strides.size() != d) fail("[conv] Invalid strides " + shape_str(strides) + " for " + std::to_string(d) + "D convolution.");
  if (lo.size() != d || hi.size() != d) {
    fail("[conv] Invalid padding " + shape_str(lo) + " | " + shape_str(hi) + " for " + std::to_string(d) + "D convolution.");
  }
  if (kdil.size() != d) {
    fail("[conv] Invalid kernel dilation " + shape_str(kdil) + " for " + std::to_string(d) + "D convolution.");
  }
  if (idil.size() != d) {
    fail("[conv] Invalid input dilation " + shape_str(idil) + " for " + std::to_string(d) + "D convolution.");
  }
  Shape out(in.size());
  out[0] = in[0];
  for (size_t i = 0; i < d; ++i) {
    if (kdil[i] <= 0) fail("[conv] Kernel dilation sizes must be positive. Got kernel dilation " + shape_str(kdil) + ".");
    if (idil[i] <= 0) fail("[conv] Input dilation sizes must be positive. Got input dilation " + shape_str(idil) + ".");
    if (lo[i] < 0 || hi[i] < 0) {
      fail("[conv] Padding sizes must be non-negative. Got padding " + shape_str(lo) + " | " + shape_str(hi) + ".");
    }
    if (strides[i] <= 0) fail("[conv] Stride sizes must be positive. Got strides " + shape_str(strides) + ".");
    // 64-bit arithmetic: a hostile file must not overflow its way to a small size.
    const int64_t kd = 1 + static_cast<int64_t>(kdil[i]) * (wt[i + 1] - 1);
    const int64_t id = 1 + static_cast<int64_t>(idil[i]) * (in[i + 1] - 1);
    const int64_t o = (id + lo[i] + hi[i] - kd) / strides[i] + 1;
    if (o <= 0) {
      fail("[conv] Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. "
           "Got error at axis " + std::to_string(i + 1) + " for input with shape " + shape_str(in) +
           ", padding low " + shape_str(lo) + ", padding high " + shape_str(hi) + ", and weight of shape " +
           shape_str(wt) + ".");
    }
    if (o > std::numeric_limits<int32_t>::max()) {
      fail("[conv] Output size " + std::to_string(o) + " at axis " + std::to_string(i + 1) + " is too large.");
    }
    out[i + 1] = static_cast<int32_t>(o);
  }
  out[d + 1] = wt[0];
  return out;
}

// Shape rule, also used to validate Convolution nodes read from files.
std::vector<ArraySpec> conv_infer(const State& st, const std::vector<ArraySpec>& in) {
  const ArraySpec& x = in[0];
  const ArraySpec& w = in[1];
  const int nd = static_cast<int>(x.shape.size());
  if (nd < 3 || nd > 5) {
    fail("[conv] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format [N, ..., C_in]");
  }
  check_conv_inputs(x, w, nd - 2, st.i(kGroups));
  if (w.dtype != x.dtype) {
    fail("[conv] Expected the input and weight to have the same dtype but got " + dtype_name(x.dtype) + " and " +
         dtype_name(w.dtype) + ".");
  }
  return {{conv_out_shape(x.shape, w.shape, st.ints(kStrides), st.ints(kPadLo), st.ints(kPadHi),
                          st.ints(kKernelDil), st.ints(kInputDil)),
           x.dtype}};
}

// A vector of zero or one entries applies to every spatial dimension.
void expand(std::vector<int>& v, int d, int dflt) {
  if (v.size() <= 1) v = std::vector<int>(d, v.empty() ? dflt : v[0]);
}

// The transposed convolution as a flipped, input-dilated convolution: the input is spread out by the
// stride and padded so that every input entry meets every kernel tap once.
array conv_transpose_general(const array& input, const array& weight, std::vector<int> stride,
                             std::vector<int> padding, std::vector<int> dilation, std::vector<int> output_padding,
                             int groups, StreamOrDevice s) {
  const int d = static_cast<int>(stride.size());
  std::vector<int> lo(d, 0), hi(d, 0);
  // Shapes are checked by conv_general; only read them when they are there.
  if (static_cast<int>(weight.ndim()) == d + 2) {
    for (int i = 0; i < d; ++i) {
      lo[i] = dilation[i] * (weight.shape(i + 1) - 1) - padding[i];
      hi[i] = lo[i] + output_padding[i];
    }
  }
  return conv_general(input, weight, std::vector<int>(d, 1), std::move(lo), std::move(hi), std::move(dilation),
                      std::move(stride), groups, true, s);
}

}  // namespace

namespace primitives {
void register_conv() {
  registry::define(detail::row("Convolution", 2,
                               {{"kernel_strides", FieldType::IntVec},
                                {"padding_lo", FieldType::IntVec},
                                {"padding_hi", FieldType::IntVec},
                                {"kernel_dilation", FieldType::IntVec},
                                {"input_dilation", FieldType::IntVec},
                                {"groups", FieldType::Int},
                                {"flip", FieldType::Bool}},
                               conv_infer));
}
}  // namespace primitives

array conv_general(array in, array wt, std::vector<int> stride, std::vector<int> padding_lo,
                   std::vector<int> padding_hi, std::vector<int> kernel_dilation, std::vector<int> input_dilation,
                   int groups, bool flip, StreamOrDevice s) {
  if (groups != 1 && in.ndim() != 3 && in.ndim() != 4) {
    fail("[conv] Can only handle groups != 1 in 1D or 2D convolutions.");
  }
  const int d = static_cast<int>(in.ndim()) - 2;
  if (d < 1 || d > 3) {
    fail("[conv] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format [N, ..., C_in]");
  }
  check_conv_inputs({in.shape(), in.dtype()}, {wt.shape(), wt.dtype()}, d, groups);

  const Dtype t = promote_types(in.dtype(), wt.dtype());
  in = astype(in, t, s);
  wt = astype(wt, t, s);
  expand(stride, d, 1);
  expand(padding_lo, d, 0);
  expand(padding_hi, d, 0);
  expand(kernel_dilation, d, 1);
  expand(input_dilation, d, 1);

  // Negative padding crops the input instead (before any input dilation, as MLX does).
  bool crop = false;
  for (int v : padding_lo) crop |= v < 0;
  for (int v : padding_hi) crop |= v < 0;
  if (crop && static_cast<int>(padding_lo.size()) == d && static_cast<int>(padding_hi.size()) == d) {
    Shape start(in.ndim(), 0);
    Shape stop = in.shape();
    for (int i = 0; i < d; ++i) {
      if (padding_lo[i] < 0) {
        start[i + 1] = -padding_lo[i];
        padding_lo[i] = 0;
      }
      if (padding_hi[i] < 0) {
        stop[i + 1] += padding_hi[i];
        padding_hi[i] = 0;
      }
    }
    in = slice(in, std::move(start), std::move(stop), s);
  }

  Shape out = conv_out_shape(in.shape(), wt.shape(), stride, padding_lo, padding_hi, kernel_dilation,
                             input_dilation);
  static const PrimitiveDef& def = detail::def("Convolution");
  return make_array(def,
                    State{std::move(stride), std::move(padding_lo), std::move(padding_hi),
                          std::move(kernel_dilation), std::move(input_dilation), groups, flip},
                    {in, wt}, {{std::move(out), t}}, to_stream(s));
}

array conv1d(const array& input, const array& weight, int stride, int padding, int dilation, int groups,
             StreamOrDevice s) {
  return conv_general(input, weight, {stride}, {padding}, {padding}, {dilation}, {1}, groups, false, s);
}

array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride,
             const std::pair<int, int>& padding, const std::pair<int, int>& dilation, int groups,
             StreamOrDevice s) {
  std::vector<int> pad{padding.first, padding.second};
  return conv_general(input, weight, {stride.first, stride.second}, pad, pad, {dilation.first, dilation.second},
                      {1, 1}, groups, false, s);
}

array conv3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride,
             const std::tuple<int, int, int>& padding, const std::tuple<int, int, int>& dilation, int groups,
             StreamOrDevice s) {
  auto v = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  return conv_general(input, weight, v(stride), v(padding), v(padding), v(dilation), {1, 1, 1}, groups, false, s);
}

array conv_transpose1d(const array& input, const array& weight, int stride, int padding, int dilation,
                       int output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, {stride}, {padding}, {dilation}, {output_padding}, groups, s);
}

array conv_transpose2d(const array& input, const array& weight, const std::pair<int, int>& stride,
                       const std::pair<int, int>& padding, const std::pair<int, int>& dilation,
                       const std::pair<int, int>& output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, {stride.first, stride.second}, {padding.first, padding.second},
                                {dilation.first, dilation.second}, {output_padding.first, output_padding.second},
                                groups, s);
}

array conv_transpose3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride,
                       const std::tuple<int, int, int>& padding, const std::tuple<int, int, int>& dilation,
                       const std::tuple<int, int, int>& output_padding, int groups, StreamOrDevice s) {
  auto v = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  return conv_transpose_general(input, weight, v(stride), v(padding), v(dilation), v(output_padding), groups, s);
}

}  // namespace kiln
