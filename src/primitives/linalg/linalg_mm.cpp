// Matrix-product variants and the Hadamard transform: the BlockMaskedMM, GatherMM and Hadamard rows
// (registered by register_linalg) and the block_masked_mm, gather_mm and hadamard_transform ops. Their
// CPU kernels are in backend/cpu/kernels/linalg/linalg_mm.cpp.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/linalg/linalg_checks.h"

namespace kiln {

std::pair<int, int> linalg_detail::split_hadamard_size(int n) {
  auto pow2 = [](int x) { return x > 0 && (x & (x - 1)) == 0; };
  int m = 1;
  if (!pow2(n)) {
    for (int f : {12, 20, 28}) {
      if (n % f == 0 && pow2(n / f)) {
        m = f;
        break;
      }
    }
    if (m == 1) throw std::invalid_argument("[hadamard] Only supports n = m*2^k where m in (1, 12, 20, 28).");
  }
  if (n / m > (1 << 26)) throw std::invalid_argument("[hadamard] Only supports n = m*2^k where k <= 26");
  return {n / m, m};
}

namespace {

using namespace linalg_detail;

// ---- Hadamard ----

std::vector<ArraySpec> hadamard_infer(const State&, const std::vector<ArraySpec>& in) {
  if (!is_floating_point(in[0].dtype)) {
    throw std::invalid_argument("[hadamard] Expected a floating point input but found " + dtype_name(in[0].dtype) + ".");
  }
  if (!in[0].shape.empty()) split_hadamard_size(in[0].shape.back());
  return {in[0]};
}

// ---- shared checks of the product variants ----

void check_operands(const char* api, const ArraySpec& a, const ArraySpec& b) {
  check_product_dims(api, a, b);
  if (a.dtype != b.dtype || !is_floating_point(a.dtype)) {
    std::ostringstream os;
    os << "[" << api << "] Expected real floating point inputs of one dtype but found " << a.dtype << " and "
       << b.dtype << ".";
    throw std::invalid_argument(os.str());
  }
}

// ---- BlockMaskedMM ----

std::vector<ArraySpec> block_masked_infer(const State& st, const std::vector<ArraySpec>& in) {
  const char* api = "block_masked_mm";
  check_operands(api, in[0], in[1]);
  const int bs = st.i(0);
  if (bs <= 0) throw std::invalid_argument("[block_masked_mm] Expected a positive block size but found " + std::to_string(bs) + ".");
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin())) {
    throw std::invalid_argument("[block_masked_mm] Expected operands with equal batch dims but found shapes " +
                                detail::shape_str(a) + " and " + detail::shape_str(b) + ".");
  }
  const int M = a[a.size() - 2], K = a.back(), N = b.back();
  auto tiles = [bs](int x) { return static_cast<int>((int64_t{x} + bs - 1) / bs); };
  Shape out = a;
  out.back() = N;
  // Masks: (batch, tiles of rows, tiles of cols) each, of bool or the operands' dtype.
  auto check_mask = [&](const ArraySpec& mk, int rows, int cols, const char* which) {
    Shape want(a.begin(), a.end() - 2);
    want.push_back(tiles(rows));
    want.push_back(tiles(cols));
    if (mk.shape != want || (mk.dtype != bool_ && mk.dtype != in[0].dtype)) {
      std::ostringstream os;
      os << "[block_masked_mm] Expected the " << which << " mask to have shape " << want << " and dtype bool or "
         << in[0].dtype << " but found shape " << mk.shape << " and dtype " << mk.dtype << ".";
      throw std::invalid_argument(os.str());
    }
  };
  const size_t n = in.size();
  if (n == 3 || n == 5) check_mask(in[2], M, N, "output");
  if (n >= 4) {
    check_mask(in[n - 2], M, K, "lhs");
    check_mask(in[n - 1], K, N, "rhs");
  }
  return {{out, in[0].dtype}};
}

// ---- GatherMM ----

std::vector<ArraySpec> gather_mm_infer(const State&, const std::vector<ArraySpec>& in) {
  check_operands("gather_mm", in[0], in[1]);
  if (in[2].shape != in[3].shape || !is_integral(in[2].dtype) || !is_integral(in[3].dtype)) {
    std::ostringstream os;
    os << "[gather_mm] Expected integer indices of one shape but found " << in[2].dtype << " " << in[2].shape
       << " and " << in[3].dtype << " " << in[3].shape << ".";
    throw std::invalid_argument(os.str());
  }
  Shape out = in[2].shape;
  out.push_back(in[0].shape[in[0].shape.size() - 2]);
  out.push_back(in[1].shape.back());
  return {{out, in[0].dtype}};
}

}  // namespace

namespace linalg_detail {
void register_linalg_mm() {
  registry::define(detail::row("Hadamard", 1, {{"scale", FieldType::Float}}, hadamard_infer));
  registry::define(detail::row("BlockMaskedMM", {2, 5}, {{"block_size", FieldType::Int}},
                               block_masked_infer, {.shapeless = false}));
  registry::define(detail::row("GatherMM", 4, {{"left_sorted", FieldType::Bool}, {"right_sorted", FieldType::Bool}},
                               gather_mm_infer, {.shapeless = false}));
}
}  // namespace linalg_detail

// ---- ops ----

array hadamard_transform(const array& a, std::optional<float> scale_opt, StreamOrDevice s) {
  if (a.size() == 0) throw std::invalid_argument("[hadamard_transform] Does not support empty arrays.");
  const int n = a.ndim() > 0 ? a.shape(-1) : 1;
  const float scale = scale_opt ? *scale_opt : 1.0f / std::sqrt(static_cast<float>(n));
  const Dtype t = is_floating_point(a.dtype()) ? a.dtype() : float32;
  if (n == 1) return scale == 1.0f ? a : multiply(a, array(scale, t), s);
  split_hadamard_size(n);
  static const PrimitiveDef& d = detail::def("Hadamard");
  return make_array(d, State{scale}, {astype(a, t, s)}, {{a.shape(), t}}, to_stream(s));
}

namespace {
// Expand 1-D operands to matrices, check the inner dims and promote to a real floating dtype.
Dtype prepare_product(const char* api, array& a, array& b, StreamOrDevice s) {
  expand_product_operands(api, a, b, s);
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_floating_point(t)) {
    std::ostringstream os;
    os << "[" << api << "] Only real floating point types are supported but " << a.dtype() << " and " << b.dtype()
       << " were provided which results in " << t << ", which is not a real floating point type.";
    throw std::invalid_argument(os.str());
  }
  a = astype(a, t, s);
  b = astype(b, t, s);
  return t;
}
}  // namespace

array block_masked_mm(array a, array b, int block_size, std::optional<array> mask_out, std::optional<array> mask_lhs,
                      std::optional<array> mask_rhs, StreamOrDevice s) {
  if (!mask_out && !mask_lhs && !mask_rhs) return matmul(a, b, s);
  if (block_size != 32 && block_size != 64) {
    throw std::invalid_argument("[block_masked_mm] Only block_sizes 32, 64 are supported.Got block size " +
                                std::to_string(block_size) + ".");
  }
  const int a_nd = static_cast<int>(a.ndim()), b_nd = static_cast<int>(b.ndim());
  const Dtype t = prepare_product("block_masked_mm", a, b, s);
  // Broadcast the batch dims of both operands.
  Shape batch = detail::broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                         Shape(b.shape().begin(), b.shape().end() - 2));
  const int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  auto with_tail = [&](int r, int c) {
    Shape sh = batch;
    sh.push_back(r);
    sh.push_back(c);
    return sh;
  };
  a = broadcast_to(a, with_tail(M, K), s);
  b = broadcast_to(b, with_tail(K, N), s);
  auto tiles = [block_size](int x) { return (x + block_size - 1) / block_size; };
  std::vector<array> inputs{a, b};
  if (mask_out) {
    array m = *mask_out;
    std::vector<int> ex;
    if (a_nd == 1) ex.push_back(-2);
    if (b_nd == 1) ex.push_back(-1);
    if (!ex.empty()) m = expand_dims(m, ex, s);
    m = astype(m, m.dtype() == bool_ ? bool_ : t, s);
    inputs.push_back(broadcast_to(m, with_tail(tiles(M), tiles(N)), s));
  }
  if (mask_lhs || mask_rhs) {
    array ml = mask_lhs.value_or(array({true}));
    array mr = mask_rhs.value_or(array({true}));
    const Dtype mt = ml.dtype() == bool_ && mr.dtype() == bool_ ? bool_ : t;
    if (a_nd == 1) ml = expand_dims(ml, -2, s);
    if (b_nd == 1) mr = expand_dims(mr, -1, s);
    inputs.push_back(broadcast_to(astype(ml, mt, s), with_tail(tiles(M), tiles(K)), s));
    inputs.push_back(broadcast_to(astype(mr, mt, s), with_tail(tiles(K), tiles(N)), s));
  }
  static const PrimitiveDef& d = detail::def("BlockMaskedMM");
  array out = make_array(d, State{block_size}, std::move(inputs), {{with_tail(M, N), t}}, to_stream(s));
  return squeeze_inserted(out, a_nd, b_nd, s);
}

array gather_mm(array a, array b, std::optional<array> lhs_indices, std::optional<array> rhs_indices,
                bool sorted_indices, StreamOrDevice s) {
  if (!lhs_indices && !rhs_indices) return matmul(a, b, s);
  const int a_nd = static_cast<int>(a.ndim()), b_nd = static_cast<int>(b.ndim());
  const Dtype t = prepare_product("gather_mm", a, b, s);
  // Missing indices enumerate the operand's batch entries.
  auto default_indices = [&](const array& x) {
    Shape batch(x.shape().begin(), x.shape().end() - 2);
    int total = 1;
    for (int d : batch) total *= d;
    return reshape(arange(static_cast<double>(total), uint32, s), batch, s);
  };
  array li = lhs_indices ? *lhs_indices : default_indices(a);
  array ri = rhs_indices ? *rhs_indices : default_indices(b);
  if (!is_integral(li.dtype())) {
    throw std::invalid_argument("[gather_mm] Got lhs_indices with invalid dtype. Indices must be integral.");
  }
  if (!is_integral(ri.dtype())) {
    throw std::invalid_argument("[gather_mm] Got rhs_indices with invalid dtype. Indices must be integral.");
  }
  li = astype(li, uint32, s);
  ri = astype(ri, uint32, s);
  auto idx = broadcast_arrays({li, ri}, s);
  Shape shape = idx[0].shape();
  shape.push_back(a.shape(-2));
  shape.push_back(b.shape(-1));
  static const PrimitiveDef& d = detail::def("GatherMM");
  array out = make_array(d, State{sorted_indices && !rhs_indices, sorted_indices && !lhs_indices},
                         {a, b, idx[0], idx[1]}, {{shape, t}}, to_stream(s));
  return squeeze_inserted(out, a_nd, b_nd, s);
}

}  // namespace kiln
