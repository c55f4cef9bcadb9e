// RandomBits (src/primitives/random/): MLX's threefry2x32 counter hash in uint32 integer ops (Add wraps,
// BitShift, BitwiseOr / BitwiseXor), so the bits are MLX's exactly; narrower widths are cut from the
// little-endian words.
#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

std::string u32(Context& c, uint32_t v) { return c.constant(astype(array(static_cast<int64_t>(v), int64), uint32)); }

std::string u32s(Context& c, const std::vector<int64_t>& v, const Shape& shape) {
  return c.constant(astype(array(v.data(), shape, int64), uint32));
}

std::string rotl(Context& c, const std::string& x, int r) {
  std::string a = c.op("BitShift", {x, u32(c, static_cast<uint32_t>(r))}, {{"direction", "LEFT"}});
  std::string b = c.op("BitShift", {x, u32(c, static_cast<uint32_t>(32 - r))}, {{"direction", "RIGHT"}});
  return c.op("BitwiseOr", {a, b});
}

void random_bits(Context& c) {
  c.need_opset(18, "BitwiseOr / BitwiseXor");
  const Tensor& keys = c.in.at(0);
  const Tensor& out = c.out.at(0);
  const int width = c.int_arg(1);
  if (width != 1 && width != 2 && width != 4) c.refuse("RandomBits of width " + std::to_string(width));
  const int64_t num_keys = static_cast<int64_t>(keys.size() / 2);
  if (num_keys == 0 || out.size() == 0) c.refuse("RandomBits with no keys or no output elements");
  const int64_t bytes = static_cast<int64_t>(out.size()) * width / num_keys;
  const int64_t words = (bytes + 3) / 4, half = words / 2, odd = words % 2, tasks = half + odd;
  // Per task t: counters (t, t + half + odd), or (half, 0) for the odd word.
  std::vector<int64_t> c0(tasks), c1(tasks);
  for (int64_t t = 0; t < tasks; ++t) {
    c0[t] = t;
    c1[t] = t < half ? t + half + odd : 0;
  }
  std::string kk = c.op("Reshape", {keys.name, c.ints({num_keys, 2})});
  std::string k0 = c.op("Slice", {kk, c.ints({0}), c.ints({1}), c.ints({1})});
  std::string k1 = c.op("Slice", {kk, c.ints({1}), c.ints({2}), c.ints({1})});
  std::string ks[3] = {k0, k1, c.op("BitwiseXor", {c.op("BitwiseXor", {k0, k1}), u32(c, 0x1BD11BDAu)})};
  const Shape ts{1, static_cast<int32_t>(tasks)};
  std::string x0 = c.op("Add", {u32s(c, c0, ts), ks[0]});
  std::string x1 = c.op("Add", {u32s(c, c1, ts), ks[1]});
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  for (int g = 0; g < 5; ++g) {
    for (int r : kRot[g % 2]) {
      x0 = c.op("Add", {x0, x1});
      x1 = c.op("BitwiseXor", {rotl(c, x1, r), x0});
    }
    x0 = c.op("Add", {x0, ks[(g + 1) % 3]});
    x1 = c.op("Add", {c.op("Add", {x1, ks[(g + 2) % 3]}), u32(c, static_cast<uint32_t>(g + 1))});
  }
  // Words in order: x of the tasks first (word t), then y (word t + half + odd).
  std::vector<int64_t> pick(words);
  for (int64_t w = 0; w < words; ++w) pick[w] = w < half + odd ? w : tasks + (w - half - odd);
  std::string all = c.op("Concat", {x0, x1}, {{"axis", 1}});
  std::string wv = c.op("Gather", {all, c.ints(pick)}, {{"axis", 1}});
  std::vector<int64_t> shape(out.shape.begin(), out.shape.end());
  if (width == 4) {
    c.op_to(0, "Reshape", {wv, c.ints(shape)});
    return;
  }
  // Element j of a key's row: bits 8 * width * (j % per) of word j / per.
  const int64_t per = 4 / width, n = bytes / width;
  std::vector<int64_t> which(n), shift(n);
  for (int64_t j = 0; j < n; ++j) {
    which[j] = j / per;
    shift[j] = 8 * width * (j % per);
  }
  std::string v = c.op("Gather", {wv, c.ints(which)}, {{"axis", 1}});
  v = c.op("BitShift", {v, u32s(c, shift, Shape{static_cast<int32_t>(n)})}, {{"direction", "RIGHT"}});
  v = c.op("BitwiseAnd", {v, u32(c, width == 1 ? 0xFFu : 0xFFFFu)});
  c.op_to(0, "Cast", {c.op("Reshape", {v, c.ints(shape)})}, {{"to", onnx_type(out.dtype)}});
}

}  // namespace

void register_random_onnx(LoweringTable& table) { table.add("RandomBits", random_bits); }

}  // namespace kiln::onnx_export
