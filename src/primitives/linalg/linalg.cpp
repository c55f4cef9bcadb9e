// The linalg family's rows: the decompositions QRF, SVD, Inverse, Cholesky, Eig, Eigh and LUF (their
// shape rules here; their LAPACK kernels in backend/cpu/kernels/linalg/linalg.cpp), and register_linalg,
// which also adds the rows of matmul.cpp and linalg_mm.cpp.
#include <algorithm>
#include <sstream>

#include "primitives/common.h"

namespace kiln {

namespace linalg_detail {
void register_matmul();     // matmul.cpp: Matmul, AddMM
void register_linalg_mm();  // linalg_mm.cpp: Hadamard, BlockMaskedMM, GatherMM
}

namespace {

// ---- shape rules ----

void check_matrix(const char* api, const ArraySpec& a, bool square) {
  if (a.shape.size() < 2) {
    std::ostringstream os;
    os << "[" << api << "] Arrays must have >= 2 dimensions. Received array with " << a.shape.size()
       << " dimensions.";
    throw std::invalid_argument(os.str());
  }
  if (square && a.shape.back() != a.shape[a.shape.size() - 2]) {
    std::ostringstream os;
    os << "[" << api << "] Expected square matrices but found shape " << a.shape << ".";
    throw std::invalid_argument(os.str());
  }
}

void check_dtype(const char* api, Dtype t, bool allow_complex) {
  if (t == float32 || t == float64 || (allow_complex && t == complex64)) return;
  std::ostringstream os;
  os << "[" << api << "] Arrays must have type float32" << (allow_complex ? ", float64 or complex64" : " or float64")
     << ". Received array with type " << t << ".";
  throw std::invalid_argument(os.str());
}

std::vector<ArraySpec> qrf_infer(const State&, const std::vector<ArraySpec>& in) {
  check_matrix("linalg::qr", in[0], false);
  check_dtype("linalg::qr", in[0].dtype, false);
  Shape q = in[0].shape, r = in[0].shape;
  const int k = std::min(q[q.size() - 2], q.back());
  q.back() = k;
  r[r.size() - 2] = k;
  return {{q, in[0].dtype}, {r, in[0].dtype}};
}

std::vector<ArraySpec> svd_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_matrix("linalg::svd", in[0], false);
  check_dtype("linalg::svd", in[0].dtype, true);
  const Shape& a = in[0].shape;
  const int m = a[a.size() - 2], n = a.back();
  Shape s(a.begin(), a.end() - 1);
  s.back() = std::min(m, n);
  Dtype sd = in[0].dtype == complex64 ? float32 : in[0].dtype;
  if (!st.b(0)) return {{s, sd}};
  Shape u = a, vt = a;
  u[u.size() - 1] = m;
  vt[vt.size() - 2] = n;
  return {{u, in[0].dtype}, {s, sd}, {vt, in[0].dtype}};
}

std::vector<ArraySpec> inverse_infer(const State&, const std::vector<ArraySpec>& in) {
  check_matrix("linalg::inv", in[0], true);
  check_dtype("linalg::inv", in[0].dtype, false);
  return {in[0]};
}

std::vector<ArraySpec> cholesky_infer(const State&, const std::vector<ArraySpec>& in) {
  check_matrix("linalg::cholesky", in[0], true);
  check_dtype("linalg::cholesky", in[0].dtype, false);
  return {in[0]};
}

std::vector<ArraySpec> eig_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_matrix("linalg::eig", in[0], true);
  check_dtype("linalg::eig", in[0].dtype, true);
  Shape v(in[0].shape.begin(), in[0].shape.end() - 1);
  if (!st.b(0)) return {{v, complex64}};
  return {{v, complex64}, {in[0].shape, complex64}};
}

std::vector<ArraySpec> eigh_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_matrix("linalg::eigh", in[0], true);
  check_dtype("linalg::eigh", in[0].dtype, true);
  const std::string& uplo = st.get<std::string>(0);
  if (uplo != "L" && uplo != "U") {
    throw std::invalid_argument("[linalg::eigh] UPLO must be 'L' or 'U' but found '" + uplo + "'.");
  }
  Shape v(in[0].shape.begin(), in[0].shape.end() - 1);
  Dtype vd = in[0].dtype == complex64 ? float32 : in[0].dtype;
  if (!st.b(1)) return {{v, vd}};
  return {{v, vd}, in[0]};
}

std::vector<ArraySpec> luf_infer(const State&, const std::vector<ArraySpec>& in) {
  check_matrix("linalg::lu", in[0], false);
  check_dtype("linalg::lu", in[0].dtype, false);
  const Shape& a = in[0].shape;
  Shape piv(a.begin(), a.end() - 1), rows(a.begin(), a.end() - 1);
  piv.back() = std::min(a[a.size() - 2], a.back());
  return {in[0], {piv, uint32}, {rows, uint32}};
}

}  // namespace

namespace primitives {
void register_linalg() {
  linalg_detail::register_matmul();
  registry::define(detail::row("QRF", 1, {}, qrf_infer,
                               {.num_outputs = 2, .flags = kNoCSE, .shapeless = false}));
  registry::define(detail::row("SVD", 1, {{"compute_uv", FieldType::Bool}}, svd_infer,
                               {.num_outputs = -1, .flags = kNoCSE, .shapeless = false}));
  registry::define(detail::row("Inverse", 1, {{"tri", FieldType::Bool}, {"upper", FieldType::Bool}},
                               inverse_infer, {.flags = kNoCSE, .shapeless = false}));
  registry::define(detail::row("Cholesky", 1, {{"upper", FieldType::Bool}}, cholesky_infer,
                               {.flags = kNoCSE, .shapeless = false}));
  registry::define(detail::row("Eig", 1, {{"compute_eigenvectors", FieldType::Bool}}, eig_infer,
                               {.num_outputs = -1}));
  registry::define(detail::row("Eigh", 1, {{"uplo", FieldType::String}, {"compute_eigenvectors", FieldType::Bool}},
                               eigh_infer, {.num_outputs = -1}));
  registry::define(detail::row("LUF", 1, {}, luf_infer,
                               {.num_outputs = 3, .flags = kNoCSE | kNotSerializable, .shapeless = false}));
  linalg_detail::register_linalg_mm();
}
}  // namespace primitives

}  // namespace kiln
