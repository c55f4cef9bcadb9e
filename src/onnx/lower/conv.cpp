// Convolution (src/primitives/conv/): MLX's channels-last operands transposed to ONNX's channels-first
// Conv; input dilation (transposed convolutions) by interleaving zeros, flip by reversing the kernel.
#include <climits>
#include <cstdint>

#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

void convolution(Context& c) {
  no_complex(c);
  const auto& strides = c.ints_arg(0);
  const auto& lo = c.ints_arg(1);
  const auto& hi = c.ints_arg(2);
  const auto& kdil = c.ints_arg(3);
  const auto& idil = c.ints_arg(4);
  const int groups = c.int_arg(5);
  const bool flip = c.bool_arg(6);
  const Tensor& tx = c.in.at(0);
  const Tensor& tw = c.in.at(1);
  const int n = tx.ndim(), sd = n - 2;
  const Dtype t = compute_type(c.out.at(0).dtype);
  auto xs = cast_all(c, {tx, tw}, t);
  // (N, spatial..., C) -> (N, C, spatial...).
  std::vector<int64_t> to_cf{0, n - 1};
  for (int d = 1; d <= sd; ++d) to_cf.push_back(d);
  std::string x = c.op("Transpose", {xs[0]}, {{"perm", to_cf}});
  std::string w = c.op("Transpose", {xs[1]}, {{"perm", to_cf}});
  // The channels-first shape as the input dilation changes it (sizes known here, or in a shapeless
  // function read at run time).
  std::vector<Dims> cur{dim_of(c, tx, 0), dim_of(c, tx, n - 1)};
  for (int d = 1; d <= sd; ++d) cur.push_back(dim_of(c, tx, d));
  for (int d = 0; d < sd; ++d) {
    const int ax = 2 + d;
    if (idil[d] <= 1 || (cur[ax].is_known() && cur[ax].known[0] <= 1)) continue;
    // Interleave idil - 1 zeros along the axis: (.., n, 1) padded to (.., n, idil), merged, the tail cut
    // (for a size 1 or 0, what is left is the input itself).
    std::string u = c.op("Unsqueeze", {x, c.ints({ax + 1})});
    std::vector<int64_t> pads(2 * (n + 1), 0);
    pads[(n + 1) + ax + 1] = idil[d] - 1;
    u = c.op("Pad", {u, c.ints(pads)});
    std::vector<Dims> merged = cur;
    merged[ax] = dims_op(c, "Mul", cur[ax], fixed_dims({idil[d]}));
    u = reshape_to(c, u, cat_dims(c, merged));
    const Dims len = dims_op(c, "Max", dims_op(c, "Sub", merged[ax], fixed_dims({idil[d] - 1})), fixed_dims({0}));
    x = c.op("Slice", {u, c.ints({0}), value_of(c, len), c.ints({ax})});
    cur[ax] = len;
  }
  if (flip) {
    std::vector<int64_t> starts(sd, -1), ends(sd, INT64_MIN), axes, steps(sd, -1);
    for (int d = 0; d < sd; ++d) axes.push_back(2 + d);
    w = c.op("Slice", {w, c.ints(starts), c.ints(ends), c.ints(axes), c.ints(steps)});
  }
  // Negative padding crops the input first (ONNX pads are non-negative).
  std::vector<int64_t> pads(2 * sd);
  std::vector<int64_t> cs, ce, ca;
  for (int d = 0; d < sd; ++d) {
    pads[d] = std::max(lo[d], 0);
    pads[sd + d] = std::max(hi[d], 0);
    if (lo[d] < 0 || hi[d] < 0) {
      cs.push_back(std::max(-lo[d], 0));
      ce.push_back(hi[d] < 0 ? int64_t(hi[d]) : INT64_MAX);
      ca.push_back(2 + d);
    }
  }
  if (!ca.empty()) x = c.op("Slice", {x, c.ints(cs), c.ints(ce), c.ints(ca)});
  std::string y = c.op("Conv", {x, w},
                       {{"strides", dims(strides)}, {"pads", pads}, {"dilations", dims(kdil)},
                        {"group", static_cast<int64_t>(groups)}});
  std::vector<int64_t> to_cl{0};
  for (int d = 2; d < n; ++d) to_cl.push_back(d);
  to_cl.push_back(1);
  store(c, 0, c.op("Transpose", {y}, {{"perm", to_cl}}), t);
}

}  // namespace

void register_conv_onnx(LoweringTable& table) {
  table.add("Convolution", convolution);
  table.polymorphic({"Convolution"});
}

}  // namespace kiln::onnx_export
