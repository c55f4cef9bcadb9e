// kiln ops, convolution family: conv1d/2d/3d, the transposed convolutions and conv_general.
#include <nanobind/stl/tuple.h>

#include "ops_common.h"

namespace kiln::py {

namespace {

// An int (the same for every spatial dim) or a tuple of exactly N ints.
std::vector<int> spatial(nb::handle h, size_t n, const char* api, const char* what) {
  if (is_int(h)) return std::vector<int>(n, nb::cast<int>(h));
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    auto v = nb::cast<std::vector<int>>(h);
    if (v.size() != n) {
      throw std::invalid_argument(std::string("[") + api + "] Expected " + what + " to be an int or " +
                                  std::to_string(n) + " ints, found " + std::to_string(v.size()) + ".");
    }
    return v;
  }
  throw std::invalid_argument(std::string("[") + api + "] Expected " + what + " to be an int or a tuple of ints, found " +
                              py_type_name(h) + ".");
}
std::pair<int, int> pair2(nb::handle h, const char* api, const char* what) {
  auto v = spatial(h, 2, api, what);
  return {v[0], v[1]};
}
std::tuple<int, int, int> triple(nb::handle h, const char* api, const char* what) {
  auto v = spatial(h, 3, api, what);
  return {v[0], v[1], v[2]};
}
// conv_general's int-or-list arguments (a list may have any length).
std::vector<int> int_or_list(nb::handle h, const char* api, const char* what) {
  if (is_int(h)) return {nb::cast<int>(h)};
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) return nb::cast<std::vector<int>>(h);
  throw std::invalid_argument(std::string("[") + api + "] Expected " + what + " to be an int or a list of ints, found " +
                              py_type_name(h) + ".");
}

}  // namespace

void init_ops_conv(nb::module_& m) {
  m.def(
      "conv1d",
      [](nb::handle input, nb::handle weight, int stride, int padding, int dilation, int groups, nb::handle stream) {
        return conv1d(arr(input, "conv1d"), arr(weight, "conv1d"), stride, padding, dilation, groups, S(stream));
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1, nb::kw_only(),
      KILN_STREAM, "1-D convolution of input (N, L, C_in) with weight (C_out, K, C_in / groups).");
  m.def(
      "conv2d",
      [](nb::handle input, nb::handle weight, nb::handle stride, nb::handle padding, nb::handle dilation, int groups,
         nb::handle stream) {
        const char* api = "conv2d";
        return conv2d(arr(input, api), arr(weight, api), pair2(stride, api, "stride"), pair2(padding, api, "padding"),
                      pair2(dilation, api, "dilation"), groups, S(stream));
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1, nb::kw_only(),
      KILN_STREAM, "2-D convolution of input (N, H, W, C_in) with weight (C_out, KH, KW, C_in / groups).");
  m.def(
      "conv3d",
      [](nb::handle input, nb::handle weight, nb::handle stride, nb::handle padding, nb::handle dilation, int groups,
         nb::handle stream) {
        const char* api = "conv3d";
        return conv3d(arr(input, api), arr(weight, api), triple(stride, api, "stride"), triple(padding, api, "padding"),
                      triple(dilation, api, "dilation"), groups, S(stream));
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1, nb::kw_only(),
      KILN_STREAM, "3-D convolution of input (N, D, H, W, C_in) with weight (C_out, KD, KH, KW, C_in / groups).");
  m.def(
      "conv_transpose1d",
      [](nb::handle input, nb::handle weight, int stride, int padding, int dilation, int output_padding, int groups,
         nb::handle stream) {
        const char* api = "conv_transpose1d";
        return conv_transpose1d(arr(input, api), arr(weight, api), stride, padding, dilation, output_padding, groups,
                                S(stream));
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "output_padding"_a = 0,
      "groups"_a = 1, nb::kw_only(), KILN_STREAM, "1-D transposed convolution (channels last).");
  m.def(
      "conv_transpose2d",
      [](nb::handle input, nb::handle weight, nb::handle stride, nb::handle padding, nb::handle dilation,
         nb::handle output_padding, int groups, nb::handle stream) {
        const char* api = "conv_transpose2d";
        return conv_transpose2d(arr(input, api), arr(weight, api), pair2(stride, api, "stride"),
                                pair2(padding, api, "padding"), pair2(dilation, api, "dilation"),
                                pair2(output_padding, api, "output_padding"), groups, S(stream));
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "output_padding"_a = 0,
      "groups"_a = 1, nb::kw_only(), KILN_STREAM, "2-D transposed convolution (channels last).");
  m.def(
      "conv_transpose3d",
      [](nb::handle input, nb::handle weight, nb::handle stride, nb::handle padding, nb::handle dilation,
         nb::handle output_padding, int groups, nb::handle stream) {
        const char* api = "conv_transpose3d";
        return conv_transpose3d(arr(input, api), arr(weight, api), triple(stride, api, "stride"),
                                triple(padding, api, "padding"), triple(dilation, api, "dilation"),
                                triple(output_padding, api, "output_padding"), groups, S(stream));
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "output_padding"_a = 0,
      "groups"_a = 1, nb::kw_only(), KILN_STREAM, "3-D transposed convolution (channels last).");
  m.def(
      "conv_general",
      [](nb::handle input, nb::handle weight, nb::handle stride, nb::handle padding, nb::handle kernel_dilation,
         nb::handle input_dilation, int groups, bool flip, nb::handle stream) {
        const char* api = "conv_general";
        std::vector<int> lo, hi;
        // padding: an int, a list (symmetric), or a pair of lists (low, high).
        if ((PyList_Check(padding.ptr()) || PyTuple_Check(padding.ptr())) && nb::len(padding) == 2 &&
            !is_int(nb::borrow<nb::sequence>(padding)[0])) {
          nb::sequence p = nb::borrow<nb::sequence>(padding);
          lo = int_or_list(p[0], api, "padding");
          hi = int_or_list(p[1], api, "padding");
        } else {
          lo = hi = int_or_list(padding, api, "padding");
        }
        return conv_general(arr(input, api), arr(weight, api), int_or_list(stride, api, "stride"), lo, hi,
                            int_or_list(kernel_dilation, api, "kernel_dilation"),
                            int_or_list(input_dilation, api, "input_dilation"), groups, flip, S(stream));
      },
      "input"_a, "weight"_a, "stride"_a = 1, "padding"_a = 0, "kernel_dilation"_a = 1, "input_dilation"_a = 1,
      "groups"_a = 1, "flip"_a = false, nb::kw_only(), KILN_STREAM,
      "N-D convolution with strides, (low, high) padding, kernel and input dilation, groups and optional flip.");
}

}  // namespace kiln::py
