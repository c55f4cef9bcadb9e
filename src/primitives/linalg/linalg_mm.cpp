// Matrix-product variants and the Hadamard transform: the BlockMaskedMM, GatherMM and Hadamard
// primitives (registered by register_linalg) and the block_masked_mm, gather_mm and hadamard_transform
// ops. Products go through BLAS as in matmul.cpp; 16-bit floats compute in float32.
#include <cmath>
#include <sstream>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "backend/cpu/kernels/linalg/linalg_internal.h"

namespace kiln {

namespace {

using namespace linalg_detail;

// ---- Hadamard ----

// Hadamard matrices of orders 12, 20 and 28 (Sloane's library, the ones MLX uses), one row per entry:
// bit k set means +1 in column k, clear means -1.
constexpr uint32_t kH12[12] = {0x0000ffd, 0x0000554, 0x0000c37, 0x0000691, 0x00000df, 0x0000a45,
                               0x0000373, 0x0000919, 0x0000dc3, 0x0000469, 0x000070f, 0x00001a5};
constexpr uint32_t kH20[20] = {0x006cc21, 0x00d1c42, 0x00ab884, 0x005f108, 0x00b6610, 0x009c83e, 0x003945d,
                               0x007289b, 0x00e5117, 0x00ca60f, 0x00f05ac, 0x00e8b58, 0x00d92b1, 0x00ba163,
                               0x007c2c6, 0x0008592, 0x0010b05, 0x002122a, 0x0042074, 0x00840c9};
constexpr uint32_t kH28[28] = {0x3296181, 0x6528382, 0xc854704, 0x92a8e08, 0x2751c10, 0x4ca7820, 0x994b0c0,
                               0x4b980bc, 0x9534178, 0x2a6c271, 0x54d8463, 0xa9b0847, 0x536500f, 0xa4ce01e,
                               0x7804cda, 0xf009935, 0xe21326a, 0xc6224d5, 0x8e409ab, 0x1e81356, 0x3d0262d,
                               0x030ed66, 0x041dacd, 0x083b51b, 0x1072ab6, 0x20e15ec, 0x41c2b59, 0x81856b3};

const uint32_t* small_hadamard(int m) { return m == 12 ? kH12 : m == 20 ? kH20 : m == 28 ? kH28 : nullptr; }

// n = m · 2^k with m in {1, 12, 20, 28}; returns {2^k, m}.
std::pair<int, int> split_hadamard_size(int n) {
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

std::vector<ArraySpec> hadamard_infer(const State&, const std::vector<ArraySpec>& in) {
  if (!is_floating_point(in[0].dtype)) {
    throw std::invalid_argument("[hadamard] Expected a floating point input but found " + dtype_name(in[0].dtype) + ".");
  }
  if (!in[0].shape.empty()) split_hadamard_size(in[0].shape.back());
  return {in[0]};
}

// In-place transform of one row of length n·m: a fast Walsh–Hadamard transform of each length-n
// block, then the order-m matrix across blocks (that is, kron(H_m, H_n)), then the scale.
template <typename C>
void hadamard_row(C* x, int n, int m, C scale, std::vector<C>& tmp) {
  for (int blk = 0; blk < m; ++blk) {
    C* p = x + static_cast<size_t>(blk) * n;
    for (int h = 1; h < n; h <<= 1) {
      for (int i = 0; i < n; i += 2 * h) {
        for (int j = i; j < i + h; ++j) {
          C u = p[j], v = p[j + h];
          p[j] = u + v;
          p[j + h] = u - v;
        }
      }
    }
  }
  if (m > 1) {
    const uint32_t* H = small_hadamard(m);
    tmp.resize(m);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < m; ++j) {
        C s(0);
        for (int k = 0; k < m; ++k) {
          C v = x[static_cast<size_t>(k) * n + i];
          s += (H[j] >> k) & 1u ? v : -v;
        }
        tmp[j] = s;
      }
      for (int j = 0; j < m; ++j) x[static_cast<size_t>(j) * n + i] = tmp[j];
    }
  }
  const size_t len = static_cast<size_t>(n) * m;
  if (scale != C(1)) {
    for (size_t i = 0; i < len; ++i) x[i] *= scale;
  }
}

template <typename T>
void hadamard_impl(const array& in, array& out, float scale) {
  using C = compute_t<T>;
  out.alloc();
  if (out.size() == 0) return;
  const int len = out.ndim() ? out.shape().back() : 1;
  auto [n, m] = split_hadamard_size(len);
  std::shared_ptr<detail::Data> tmp;
  C* buf = compute_dst<C, T>(out, tmp);
  strided_cast_copy<T, C>(base_ptr<T>(in), in.shape(), in.strides(), buf, row_major_strides(in.shape()));
  const size_t rows = out.size() / len;
  const size_t grain = std::max<size_t>(1, cpu::kGrainMedium / len);
  cpu::parallel_for(rows, grain, [&, n = n, m = m](size_t s, size_t e) {
    std::vector<C> scratch;
    for (size_t r = s; r < e; ++r) hadamard_row<C>(buf + r * len, n, m, C(scale), scratch);
  });
  if constexpr (!std::is_same_v<C, T>) {
    T* o = out.data<T>();
    for (size_t i = 0; i < out.size(); ++i) o[i] = T(buf[i]);
  }
}

void hadamard_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_float(out[0].dtype(), "hadamard", [&](auto tag) {
    hadamard_impl<decltype(tag)>(in[0], out[0], node.state.f(0));
  });
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

// Zero (bool mask false) or scale (float mask != 1) the tiles of a rows × cols row-major matrix.
template <typename C, typename T>
void apply_block_mask(C* data, int rows, int cols, int64_t ld, int bs, const array& mask, int64_t mask_off) {
  const int nd = static_cast<int>(mask.ndim());
  const int64_t sr = mask.strides()[nd - 2], sc = mask.strides()[nd - 1];
  const int tr = mask.shape()[nd - 2], tc = mask.shape()[nd - 1];
  for (int i = 0; i < tr; ++i) {
    for (int j = 0; j < tc; ++j) {
      // A false bool tile is zeroed; a float tile is multiplied unless its value is exactly 1.
      bool zero = false;
      C factor(1);
      if (mask.dtype() == bool_) {
        zero = !base_ptr<bool>(mask)[mask_off + i * sr + j * sc];
      } else {
        factor = static_cast<C>(base_ptr<T>(mask)[mask_off + i * sr + j * sc]);
      }
      if (!zero && factor == C(1)) continue;
      for (int r = i * bs; r < std::min(rows, (i + 1) * bs); ++r) {
        C* row = data + r * ld;
        for (int c = j * bs; c < std::min(cols, (j + 1) * bs); ++c) row[c] = zero ? C(0) : row[c] * factor;
      }
    }
  }
}

template <typename T>
void block_masked_impl(const std::vector<array>& in, array& out, int bs) {
  using C = compute_t<T>;
  out.alloc();
  if (out.size() == 0) return;
  const array& A = in[0];
  const array& B = in[1];
  const int nd = static_cast<int>(out.ndim());
  const int M = out.shape()[nd - 2], N = out.shape()[nd - 1], K = A.shape()[nd - 1];
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const int64_t nbatch = static_cast<int64_t>(out.size() / (static_cast<size_t>(M) * N));
  const size_t n = in.size();
  const array* out_mask = (n == 3 || n == 5) ? &in[2] : nullptr;
  const array* lhs_mask = n >= 4 ? &in[n - 2] : nullptr;
  const array* rhs_mask = n >= 4 ? &in[n - 1] : nullptr;
  auto mask_strides = [&](const array* mk) {
    return mk ? aligned_batch_strides(mk->shape(), mk->strides(), batch) : std::vector<int64_t>{};
  };
  const auto om_st = mask_strides(out_mask), lm_st = mask_strides(lhs_mask), rm_st = mask_strides(rhs_mask);

  std::shared_ptr<detail::Data> tmp;
  C* dst = compute_dst<C, T>(out, tmp);
  // Operand masks change the operands, so each batch entry works on private copies.
  std::vector<C> a_buf, b_buf;
  MatOperand<C> a, b;
  if (lhs_mask) {
    a_buf.resize(static_cast<size_t>(M) * K);
    b_buf.resize(static_cast<size_t>(K) * N);
  } else if (K > 0) {
    a = prepare_operand<T, C>(A, batch);
    b = prepare_operand<T, C>(B, batch);
  }
  const auto a_st = aligned_batch_strides(A.shape(), A.strides(), batch);
  const auto b_st = aligned_batch_strides(B.shape(), B.strides(), batch);
  for (int64_t i = 0; i < nbatch; ++i) {
    C* o = dst + i * M * N;
    if (K == 0) {
      std::fill(o, o + static_cast<size_t>(M) * N, C(0));
    } else if (lhs_mask) {
      const T* ap = base_ptr<T>(A) + batch_offset(i, batch, a_st);
      const T* bp = base_ptr<T>(B) + batch_offset(i, batch, b_st);
      strided_cast_copy<T, C>(ap, {M, K}, {A.strides()[nd - 2], A.strides()[nd - 1]}, a_buf.data(), {K, 1});
      strided_cast_copy<T, C>(bp, {K, N}, {B.strides()[nd - 2], B.strides()[nd - 1]}, b_buf.data(), {N, 1});
      apply_block_mask<C, T>(a_buf.data(), M, K, K, bs, *lhs_mask, batch_offset(i, batch, lm_st));
      apply_block_mask<C, T>(b_buf.data(), K, N, N, bs, *rhs_mask, batch_offset(i, batch, rm_st));
      cpu::gemm(false, false, M, N, K, C(1), a_buf.data(), K, b_buf.data(), N, C(0), o, N);
    } else {
      cpu::gemm(a.trans, b.trans, M, N, K, C(1), a.ptr + batch_offset(i, batch, a.batch_strides), a.ld,
                b.ptr + batch_offset(i, batch, b.batch_strides), b.ld, C(0), o, N);
    }
    if (out_mask) apply_block_mask<C, T>(o, M, N, N, bs, *out_mask, batch_offset(i, batch, om_st));
  }
  if constexpr (!std::is_same_v<C, T>) {
    T* o = out.data<T>();
    for (size_t i = 0; i < out.size(); ++i) o[i] = T(dst[i]);
  }
}

void block_masked_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_float(out[0].dtype(), "block_masked_mm", [&](auto tag) {
    block_masked_impl<decltype(tag)>(in, out[0], node.state.i(0));
  });
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

// The indices of `idx` (any integer dtype, any strides) in row-major order, clamped to [0, limit).
std::vector<int64_t> read_indices(const array& idx, int64_t limit) {
  std::vector<int64_t> out(idx.size());
  detail::dispatch_all(idx.dtype(), [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_integral_v<I>) {
      strided_cast_copy<I, int64_t>(base_ptr<I>(idx), idx.shape(), idx.strides(), out.data(),
                                    row_major_strides(idx.shape()));
    }
  });
  // Out-of-range indices are clamped, as gathers are, so a bad file cannot read out of bounds.
  for (auto& v : out) v = std::clamp<int64_t>(v, 0, std::max<int64_t>(limit - 1, 0));
  return out;
}

template <typename T>
void gather_mm_impl(const std::vector<array>& in, array& out) {
  using C = compute_t<T>;
  out.alloc();
  if (out.size() == 0) return;
  const array& A = in[0];
  const array& B = in[1];
  const int M = A.shape(-2), K = A.shape(-1), N = B.shape(-1);
  const Shape a_batch(A.shape().begin(), A.shape().end() - 2), b_batch(B.shape().begin(), B.shape().end() - 2);
  const int64_t na = static_cast<int64_t>(shape_size(a_batch)), nb = static_cast<int64_t>(shape_size(b_batch));
  const int64_t nbatch = static_cast<int64_t>(in[2].size());
  std::shared_ptr<detail::Data> tmp;
  C* dst = compute_dst<C, T>(out, tmp);
  if (K == 0 || na == 0 || nb == 0) {
    std::fill(dst, dst + out.size(), C(0));
  } else {
    auto li = read_indices(in[2], na), ri = read_indices(in[3], nb);
    MatOperand<C> a = prepare_operand<T, C>(A, a_batch);
    MatOperand<C> b = prepare_operand<T, C>(B, b_batch);
    batched_gemm<C>(
        nbatch, M, N, K, C(1), a, b, C(0), dst, [&](int64_t i) { return batch_offset(li[i], a_batch, a.batch_strides); },
        [&](int64_t i) { return batch_offset(ri[i], b_batch, b.batch_strides); });
  }
  if constexpr (!std::is_same_v<C, T>) {
    T* o = out.data<T>();
    for (size_t i = 0; i < out.size(); ++i) o[i] = T(dst[i]);
  }
}

void gather_mm_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_float(out[0].dtype(), "gather_mm", [&](auto tag) { gather_mm_impl<decltype(tag)>(in, out[0]); });
}

}  // namespace

namespace linalg_detail {
void register_linalg_mm() {
  registry::define(detail::row("Hadamard", 1, {{"scale", FieldType::Float}}, hadamard_infer, hadamard_cpu));
  registry::define(detail::row("BlockMaskedMM", {2, 5}, {{"block_size", FieldType::Int}},
                               block_masked_infer, block_masked_cpu, {.shapeless = false}));
  registry::define(detail::row("GatherMM", 4, {{"left_sorted", FieldType::Bool}, {"right_sorted", FieldType::Bool}},
                               gather_mm_infer, gather_mm_cpu, {.shapeless = false}));
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
