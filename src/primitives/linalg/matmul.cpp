// Matrix products: the Matmul and AddMM rows and the product ops built on them (matmul, addmm, inner,
// outer, tensordot, kron). Their CPU kernels (through BLAS) are in backend/cpu/kernels/linalg/matmul.cpp.
#include <algorithm>
#include <sstream>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/linalg/linalg_checks.h"

namespace kiln {

void linalg_detail::check_product_dims(const char* api, const ArraySpec& a, const ArraySpec& b) {
  if (a.shape.size() < 2 || b.shape.size() < 2) {
    std::ostringstream os;
    os << "[" << api << "] Expected inputs with at least 2 dimensions but found shapes " << a.shape << " and "
       << b.shape << ".";
    throw std::invalid_argument(os.str());
  }
  if (a.shape.back() != b.shape[b.shape.size() - 2]) {
    throw std::invalid_argument(product_dims_message(api, a.shape, b.shape));
  }
}

std::string linalg_detail::product_dims_message(const char* api, const Shape& a, const Shape& b) {
  std::ostringstream os;
  os << "[" << api << "] Last dimension of first input with shape " << a
     << " must match second to last dimension of second input with shape " << b << ".";
  return os.str();
}

void linalg_detail::expand_product_operands(const char* api, array& a, array& b, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw std::invalid_argument(std::string("[") + api +
                                "] Got 0 dimension input. Inputs must have at least one dimension.");
  }
  if (a.ndim() == 1) a = expand_dims(a, 0, s);
  if (b.ndim() == 1) b = expand_dims(b, 1, s);
  if (a.shape(-1) != b.shape(-2)) throw std::invalid_argument(product_dims_message(api, a.shape(), b.shape()));
}

array linalg_detail::squeeze_inserted(array out, int a_nd, int b_nd, StreamOrDevice s) {
  std::vector<int> axes;
  if (a_nd == 1) axes.push_back(static_cast<int>(out.ndim()) - 2);
  if (b_nd == 1) axes.push_back(static_cast<int>(out.ndim()) - 1);
  return axes.empty() ? out : squeeze(out, axes, s);
}

namespace {

using namespace linalg_detail;

// Output shape of a product of (..., M, K) and (..., K, N) whose batch dims broadcast.
Shape product_shape(const char* api, const ArraySpec& a, const ArraySpec& b) {
  check_product_dims(api, a, b);
  if (a.dtype != b.dtype) {
    std::ostringstream os;
    os << "[" << api << "] Expected inputs of one dtype but found " << a.dtype << " and " << b.dtype << ".";
    throw std::invalid_argument(os.str());
  }
  Shape out = detail::broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2), Shape(b.shape.begin(), b.shape.end() - 2));
  out.push_back(a.shape[a.shape.size() - 2]);
  out.push_back(b.shape.back());
  return out;
}

void check_inexact(const char* api, Dtype t) {
  if (!is_inexact(t)) {
    std::ostringstream os;
    os << "[" << api << "] Only inexact types are supported but found " << t << ".";
    throw std::invalid_argument(os.str());
  }
}

std::vector<ArraySpec> matmul_infer(const State&, const std::vector<ArraySpec>& in) {
  Shape out = product_shape("matmul", in[0], in[1]);
  check_inexact("matmul", in[0].dtype);
  return {{out, in[0].dtype}};
}

std::vector<ArraySpec> addmm_infer(const State&, const std::vector<ArraySpec>& in) {
  Shape out = product_shape("addmm", in[0], in[1]);
  if (!is_floating_point(in[0].dtype) || in[2].dtype != in[0].dtype) {
    std::ostringstream os;
    os << "[addmm] Expected real floating point inputs of one dtype but found " << in[0].dtype << ", "
       << in[1].dtype << " and " << in[2].dtype << ".";
    throw std::invalid_argument(os.str());
  }
  // c must broadcast to the output (right-aligned, each dim 1 or equal).
  const Shape& c = in[2].shape;
  bool fits = c.size() <= out.size();
  for (size_t i = 0; fits && i < c.size(); ++i) {
    const int o = out[out.size() - c.size() + i];
    fits = c[i] == 1 || c[i] == o;
  }
  if (!fits) throw std::invalid_argument("[addmm] input c must broadcast to the output shape");
  return {{out, in[0].dtype}};
}

}  // namespace

namespace linalg_detail {
void register_matmul() {
  registry::define(detail::row("Matmul", 2, {}, matmul_infer));
  registry::define(detail::row("AddMM", 3, {{"alpha", FieldType::Float}, {"beta", FieldType::Float}},
                               addmm_infer, {.shapeless = false}));
}
}  // namespace linalg_detail

// ---- ops ----

array matmul(const array& in_a, const array& in_b, StreamOrDevice s) {
  array a = in_a, b = in_b;
  expand_product_operands("matmul", a, b, s);  // the inserted dims are squeezed at the end
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (!is_inexact(t)) {
    std::ostringstream os;
    os << "[matmul] Only inexact types are supported but " << a.dtype() << " and " << b.dtype()
       << " were provided which results in " << t << ", which is not a floating point type.";
    throw std::invalid_argument(os.str());
  }
  a = astype(a, t, s);
  b = astype(b, t, s);
  // A batched a times a single matrix b is one tall product; otherwise the batch dims broadcast.
  const bool fold = in_a.ndim() > 2 && in_b.ndim() <= 2;
  if (fold) {
    a = flatten(a, 0, -2, s);
  } else if (in_b.ndim() > 2) {
    auto ab = broadcast_arrays({a, b}, {-2, -1}, s);
    a = ab[0];
    b = ab[1];
  }
  Shape shape = a.shape();
  shape.back() = b.shape(-1);
  static const PrimitiveDef& d = detail::def("Matmul");
  array out = make_array(d, {}, {a, b}, {{shape, t}}, to_stream(s));
  if (fold) {
    Shape lead(in_a.shape().begin(), in_a.shape().end() - 1);
    out = unflatten(out, 0, lead, s);
  }
  return squeeze_inserted(out, static_cast<int>(in_a.ndim()), static_cast<int>(in_b.ndim()), s);
}

array addmm(array c, array a, array b, const float& alpha, const float& beta, StreamOrDevice s) {
  const int a_nd = static_cast<int>(a.ndim()), b_nd = static_cast<int>(b.ndim());
  if (a_nd == 0 || b_nd == 0) {
    throw std::invalid_argument("[addmm] Got 0 dimension input. Inputs must have at least one dimension.");
  }
  Dtype t = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  if (t == complex64) {
    // No complex AddMM kernel in MLX: the op falls back to element-wise arithmetic.
    return add(multiply(matmul(a, b, s), array(alpha), s), multiply(array(beta), c, s), s);
  }
  if (a_nd == 1) a = expand_dims(a, 0, s);
  if (b_nd == 1) b = expand_dims(b, 1, s);
  if (a.shape(-1) != b.shape(-2)) throw std::invalid_argument(product_dims_message("addmm", a.shape(), b.shape()));
  if (!is_floating_point(t)) {
    std::ostringstream os;
    os << "[addmm] Only real floating point types are supported but " << c.dtype() << ", " << a.dtype() << " and "
       << b.dtype() << " were provided which results in " << t << ", which is not a real floating point type.";
    throw std::invalid_argument(os.str());
  }
  a = astype(a, t, s);
  b = astype(b, t, s);
  c = astype(c, t, s);
  static const PrimitiveDef& d = detail::def("AddMM");
  const State st{alpha, beta};

  // A batched a, a matrix b and a vector (or scalar) c: one tall product.
  if (a.ndim() > 2 && b.ndim() == 2 && c.ndim() <= 1) {
    Shape final_shape = a.shape();
    final_shape.back() = b.shape(-1);
    if (b_nd == 1) final_shape.pop_back();
    a = reshape(a, {-1, a.shape(-1)}, s);
    Shape flat{a.shape(0), b.shape(1)};
    c = broadcast_to(c, flat, s);
    array out = make_array(d, st, {a, b, c}, {{flat, t}}, to_stream(s));
    return reshape(out, final_shape, s);
  }

  if (a.ndim() > 2 || b.ndim() > 2) {
    Shape batch = detail::broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                           Shape(b.shape().begin(), b.shape().end() - 2));
    Shape sa = batch, sb = batch;
    sa.insert(sa.end(), a.shape().end() - 2, a.shape().end());
    sb.insert(sb.end(), b.shape().end() - 2, b.shape().end());
    a = broadcast_to(a, sa, s);
    b = broadcast_to(b, sb, s);
  }
  Shape shape = a.shape();
  shape.back() = b.shape(-1);
  // c broadcasts against the result as the user sees it (without the dims inserted for 1-D operands).
  Shape user_shape = shape;
  if (a_nd == 1 || b_nd == 1) {
    user_shape.erase(user_shape.end() - (a_nd == 1 ? 2 : 1), user_shape.end() - (b_nd == 1 ? 0 : 1));
  }
  c = broadcast_to(c, detail::broadcast_shapes(c.shape(), user_shape), s);
  if (a_nd == 1 || b_nd == 1) {
    Shape cs = c.shape();
    if (b_nd == 1) cs.push_back(1);
    if (a_nd == 1) cs.insert(cs.end() - 1, 1);
    c = reshape(c, cs, s);
  }
  if (c.shape() != shape) throw std::invalid_argument("[addmm] input c must broadcast to the output shape");
  array out = make_array(d, st, {a, b, c}, {{shape, t}}, to_stream(s));
  std::vector<int> axes;
  if (a_nd == 1) axes.push_back(static_cast<int>(out.ndim()) - 2);
  if (b_nd == 1) axes.push_back(static_cast<int>(out.ndim()) - 1);
  return axes.empty() ? out : squeeze(out, axes, s);
}

array tensordot(const array& a, const array& b, const int axis, StreamOrDevice s) {
  if (axis < 0) throw std::invalid_argument("[tensordot] axis must be greater or equal to 0.");
  if (axis > static_cast<int>(std::min(a.ndim(), b.ndim()))) {
    throw std::invalid_argument("[tensordot] axis must be less than the number of dimensions of a and b.");
  }
  std::vector<int> axes_a, axes_b;
  for (int i = 0; i < axis; ++i) {
    axes_a.push_back(i - axis);
    axes_b.push_back(i);
  }
  return tensordot(a, b, axes_a, axes_b, s);
}

array tensordot(const array& a, const array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b,
                StreamOrDevice s) {
  if (axes_a.size() != axes_b.size()) throw std::invalid_argument("[tensordot] axes must have the same size.");
  const int na = static_cast<int>(a.ndim()), nb = static_cast<int>(b.ndim());
  int csize = 1;
  std::vector<bool> contracted_a(na, false), contracted_b(nb, false);
  for (size_t i = 0; i < axes_a.size(); ++i) {
    if (a.shape(axes_a[i]) != b.shape(axes_b[i])) {
      throw std::invalid_argument("[tensordot] a and b must have the same shape on the contracted axes.");
    }
    csize *= a.shape(axes_a[i]);
    contracted_a[axes_a[i] < 0 ? axes_a[i] + na : axes_a[i]] = true;
    contracted_b[axes_b[i] < 0 ? axes_b[i] + nb : axes_b[i]] = true;
  }
  // a's free axes then its contracted ones; b's contracted axes then its free ones.
  std::vector<int> perm_a, perm_b;
  Shape out_shape;
  int free_a = 1, free_b = 1;
  for (int i = 0; i < na; ++i) {
    if (!contracted_a[i]) {
      perm_a.push_back(i);
      free_a *= a.shape(i);
      out_shape.push_back(a.shape(i));
    }
  }
  perm_a.insert(perm_a.end(), axes_a.begin(), axes_a.end());
  perm_b.assign(axes_b.begin(), axes_b.end());
  for (int i = 0; i < nb; ++i) {
    if (!contracted_b[i]) {
      perm_b.push_back(i);
      free_b *= b.shape(i);
      out_shape.push_back(b.shape(i));
    }
  }
  array x = reshape(transpose(a, perm_a, s), {free_a, csize}, s);
  array y = reshape(transpose(b, perm_b, s), {csize, free_b}, s);
  return reshape(matmul(x, y, s), out_shape, s);
}

array outer(const array& a, const array& b, StreamOrDevice s) {
  return multiply(reshape(a, {static_cast<int>(a.size()), 1}, s), flatten(b, s), s);
}

array inner(const array& a, const array& b, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b, s);
  if (a.shape(-1) != b.shape(-1)) throw std::invalid_argument("[inner] a and b must have the same last dimension.");
  return tensordot(a, b, {-1}, {-1}, s);
}

array kron(const array& a, const array& b, StreamOrDevice s) {
  if (a.size() == 0 || b.size() == 0) throw std::invalid_argument("[kron] Input arrays cannot be empty.");
  // Interleave the axes: a's sizes at even positions, b's at odd ones, then merge each pair.
  const int nd = static_cast<int>(std::max(a.ndim(), b.ndim()));
  Shape sa(2 * nd, 1), sb(2 * nd, 1), out(nd, 1);
  for (int j = static_cast<int>(a.ndim()) - 1, i = nd - 1; j >= 0; --j, --i) {
    sa[2 * i] = a.shape(j);
    out[i] *= a.shape(j);
  }
  for (int j = static_cast<int>(b.ndim()) - 1, i = nd - 1; j >= 0; --j, --i) {
    sb[2 * i + 1] = b.shape(j);
    out[i] *= b.shape(j);
  }
  return reshape(multiply(reshape(a, sa, s), reshape(b, sb, s), s), out, s);
}

}  // namespace kiln
