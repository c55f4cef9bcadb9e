// QuantizedMatmul and GatherQMM: their rows, the quantized operand checks, and their ops. The kernels
// are in backend/cpu/kernels/quantized/quantized_matmul.cpp.
#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/quantized/quantized_internal.h"

namespace kiln {

namespace quant {

namespace {

struct QShape {
  int64_t K, N;
};

// Checks the quantized operand (w, scales[, biases]) against x; returns the expanded (K, N).
QShape check_quantized(const char* api, const State& st, const std::vector<ArraySpec>& in, size_t n_fixed) {
  const QuantizationMode mode = mode_from_code(api, st.i(2));
  const int gs = st.i(0), bits = st.i(1);
  const bool transpose = st.b(3);
  validate_params(api, mode, gs, bits);
  const bool affine = mode == QuantizationMode::Affine;
  const size_t want = n_fixed + (affine ? 4 : 3);
  if (in.size() != want) {
    throw std::invalid_argument(std::string("[") + api + "] Expected " + std::to_string(want) + " inputs for mode '" +
                                quantization_mode_to_string(mode) + "' but got " + std::to_string(in.size()) + ".");
  }
  const ArraySpec &x = in[0], &w = in[1], &s = in[2];
  const std::string tag = std::string("[") + api + "] ";
  if (w.dtype != uint32) {
    throw std::invalid_argument(tag + "The weight matrix should be uint32 but received " + dtype_name(w.dtype));
  }
  if (w.shape.size() < 2 || x.shape.empty()) {
    throw std::invalid_argument(tag + "Expected a quantized matrix of at least 2 dimensions and a non-scalar input "
                                      "but got shapes " +
                                detail::shape_str(w.shape) + " and " + detail::shape_str(x.shape) + ".");
  }
  if (affine && in[3].shape != s.shape) {
    throw std::invalid_argument(tag + "Scales and biases should have the same shape. Received scales with shape " +
                                detail::shape_str(s.shape) + " and biases with " + detail::shape_str(in[3].shape));
  }
  const int64_t wl = w.shape.back();
  if (s.shape.size() != w.shape.size() || !std::equal(w.shape.begin(), w.shape.end() - 1, s.shape.begin()) ||
      (wl * 32) % bits != 0 || wl * 32 / bits != static_cast<int64_t>(s.shape.back()) * gs) {
    throw std::invalid_argument(tag + "The shapes of the weight and scales are incompatible based on bits and "
                                      "group_size. w.shape() == " +
                                detail::shape_str(w.shape) + " and scales.shape() == " + detail::shape_str(s.shape) +
                                " with group_size=" + std::to_string(gs) + " and bits=" + std::to_string(bits));
  }
  if (!is_floating_point(x.dtype)) {
    throw std::invalid_argument(tag + "Only real floating types are supported but x.dtype() == " +
                                dtype_name(x.dtype) + ".");
  }
  if (affine ? (s.dtype != x.dtype || in[3].dtype != x.dtype) : s.dtype != uint8) {
    throw std::invalid_argument(tag + "Expected scales" + (affine ? " and biases of x's dtype " : " of dtype uint8 ") +
                                "but got " + dtype_name(s.dtype) + ".");
  }
  const int64_t packed = wl * 32 / bits, rows = w.shape[w.shape.size() - 2];
  QShape q{transpose ? packed : rows, transpose ? rows : packed};
  if (x.shape.back() != q.K) {
    throw std::invalid_argument(tag + "Last dimension of first input with shape (..., " +
                                std::to_string(x.shape.back()) + ") does not match the expanded quantized matrix (" +
                                std::to_string(q.K) + ", " + std::to_string(q.N) + ") computed from shape " +
                                detail::shape_str(w.shape) + " with group_size=" + std::to_string(gs) + ", bits=" +
                                std::to_string(bits) + " and transpose=" + (transpose ? "true" : "false"));
  }
  return q;
}

// State: group_size, bits, mode, transpose.
std::vector<ArraySpec> qmm_infer(const State& st, const std::vector<ArraySpec>& in) {
  QShape q = check_quantized("quantized_matmul", st, in, 0);
  const ArraySpec &x = in[0], &w = in[1];
  if (x.shape.size() > 2 && w.shape.size() > 2) {
    for (size_t i = 1; i < in.size(); ++i) {
      if (!std::equal(x.shape.begin(), x.shape.end() - 2, in[i].shape.begin(), in[i].shape.end() - 2)) {
        throw std::invalid_argument("[quantized_matmul] The batch shapes of x " + detail::shape_str(x.shape) +
                                    " and the quantized operand " + detail::shape_str(in[i].shape) +
                                    " must be equal (broadcast by the op).");
      }
    }
  }
  Shape out = x.shape;
  out.back() = static_cast<int32_t>(q.N);
  return {{out, x.dtype}};
}

// State: group_size, bits, mode, transpose, left_sorted, right_sorted.
std::vector<ArraySpec> gather_qmm_infer(const State& st, const std::vector<ArraySpec>& in) {
  if (in.size() < 5) {
    throw std::invalid_argument("[gather_qmm] Expected 5 or 6 inputs but got " + std::to_string(in.size()) + ".");
  }
  std::vector<ArraySpec> head(in.begin(), in.end() - 2);
  QShape q = check_quantized("gather_qmm", st, head, 0);
  const ArraySpec &x = in[0], &lhs = in[in.size() - 2], &rhs = in.back();
  if (x.shape.size() < 2) {
    throw std::invalid_argument("[gather_qmm] Non-quantized input must have at least two dimensions but got input "
                                "with shape " +
                                detail::shape_str(x.shape) + ".");
  }
  if (lhs.dtype != uint32 || rhs.dtype != uint32 || lhs.shape != rhs.shape) {
    throw std::invalid_argument("[gather_qmm] The indices must be uint32 arrays of one shape but got " +
                                detail::shape_str(lhs.shape) + " " + dtype_name(lhs.dtype) + " and " +
                                detail::shape_str(rhs.shape) + " " + dtype_name(rhs.dtype) + ".");
  }
  Shape out = lhs.shape;
  out.push_back(x.shape[x.shape.size() - 2]);
  out.push_back(static_cast<int32_t>(q.N));
  return {{out, x.dtype}};
}

}  // namespace

void define_qmm() {
  registry::define(detail::row("QuantizedMatmul", {3, 4},
                               {{"group_size", FieldType::Int},
                                {"bits", FieldType::Int},
                                {"mode", FieldType::Int},
                                {"transpose", FieldType::Bool}},
                               qmm_infer));
  registry::define(detail::row("GatherQMM", {5, 6},
                               {{"group_size", FieldType::Int},
                                {"bits", FieldType::Int},
                                {"mode", FieldType::Int},
                                {"transpose", FieldType::Bool},
                                {"left_sorted", FieldType::Bool},
                                {"right_sorted", FieldType::Bool}},
                               gather_qmm_infer, {.shapeless = false}));
}

}  // namespace quant

namespace {

struct Checked {
  QuantizationMode mode;
  int gs, bits;
  Dtype dtype;
};

// MLX's validate_mode_with_type and defaults, then the quantized operand checks (shared by both ops).
Checked check_op(const char* api, const array& x, const array& w, const array& scales,
                 const std::optional<array>& biases, bool transpose, std::optional<int> gs_, std::optional<int> bits_,
                 const std::string& mode) {
  const std::string tag = std::string("[") + api + "] ";
  Checked c{string_to_quantization_mode(mode, api), 0, 0, x.dtype()};
  const bool affine = c.mode == QuantizationMode::Affine;
  if (affine) {
    if (!biases) throw std::invalid_argument(tag + "Biases must be provided for affine quantization.");
    const Dtype t = promote_types(scales.dtype(), biases->dtype());
    if (!is_floating_point(t)) {
      throw std::invalid_argument(tag + "Only real floating types are supported but scales.dtype() == " +
                                  dtype_name(scales.dtype()) + " and biases.dtype() == " +
                                  dtype_name(biases->dtype()) + ".");
    }
    c.dtype = promote_types(x.dtype(), t);
  } else if (biases) {
    throw std::invalid_argument(tag + "Biases must be null for quantization mode '" + mode + "'.");
  }
  c.gs = gs_.value_or(c.mode == QuantizationMode::Affine ? 64 : c.mode == QuantizationMode::Nvfp4 ? 16 : 32);
  c.bits = bits_.value_or(c.mode == QuantizationMode::Mxfp8 ? 8 : 4);
  if (c.bits <= 0 || c.gs <= 0) {
    throw std::invalid_argument(tag + "Invalid group_size " + std::to_string(c.gs) + " or bits " +
                                std::to_string(c.bits) + ".");
  }
  // Shapes and dtypes through the primitive's own rule, on the specs the node will have.
  State st{c.gs, c.bits, static_cast<int32_t>(c.mode), transpose};
  std::vector<ArraySpec> specs{{x.shape(), c.dtype}, {w.shape(), w.dtype()}, {scales.shape(), affine ? c.dtype : scales.dtype()}};
  if (affine) specs.push_back({biases->shape(), c.dtype});
  if (w.dtype() != uint32) {
    throw std::invalid_argument(tag + "The weight matrix should be uint32 but received " + dtype_name(w.dtype()));
  }
  quant::check_quantized(api, st, specs, 0);
  return c;
}

// Broadcast the batch axes (all but the last two) of every input to one shape.
std::vector<array> broadcast_batch(const std::vector<array>& ins, StreamOrDevice s) {
  Shape batch;
  for (auto& a : ins) batch = detail::broadcast_shapes(batch, Shape(a.shape().begin(), a.shape().end() - 2));
  std::vector<array> out;
  for (auto& a : ins) {
    Shape target = batch;
    target.insert(target.end(), a.shape().end() - 2, a.shape().end());
    out.push_back(broadcast_to(a, target, s));
  }
  return out;
}

}  // namespace

array quantized_matmul(array x, array w, array scales, std::optional<array> biases, bool transpose,
                       std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                       StreamOrDevice s) {
  Checked c = check_op("quantized_matmul", x, w, scales, biases, transpose, group_size, bits, mode);
  std::vector<array> inputs{astype(x, c.dtype, s), w};
  if (c.mode == QuantizationMode::Affine) {
    inputs.push_back(astype(scales, c.dtype, s));
    inputs.push_back(astype(*biases, c.dtype, s));
  } else {
    inputs.push_back(scales);
  }
  if (x.ndim() > 2 && w.ndim() > 2) inputs = broadcast_batch(inputs, s);
  State st{c.gs, c.bits, static_cast<int32_t>(c.mode), transpose};
  static const PrimitiveDef& d = detail::def("QuantizedMatmul");
  return make_array(d, std::move(st), std::move(inputs), {}, to_stream(s));
}

array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<array> lhs_indices, std::optional<array> rhs_indices, bool transpose,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                 bool sorted_indices, StreamOrDevice s) {
  if (!lhs_indices && !rhs_indices) {
    return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode, s);
  }
  Checked c = check_op("gather_qmm", x, w, scales, biases, transpose, group_size, bits, mode);
  auto default_indices = [&](const array& a) {
    Shape batch(a.shape().begin(), a.shape().end() - std::min<size_t>(2, a.ndim()));
    int64_t total = 1;
    for (int d : batch) total *= d;
    return reshape(arange(0.0, static_cast<double>(total), 1.0, uint32, s), batch, s);
  };
  array lhs = lhs_indices ? *lhs_indices : default_indices(x);
  array rhs = rhs_indices ? *rhs_indices : default_indices(w);
  auto b = broadcast_arrays({lhs, rhs}, s);
  if (!is_integral(b[0].dtype())) {
    throw std::invalid_argument("[gather_qmm] Got lhs_indices with invalid dtype. Indices must be integral.");
  }
  if (!is_integral(b[1].dtype())) {
    throw std::invalid_argument("[gather_qmm] Got rhs_indices with invalid dtype. Indices must be integral.");
  }
  if (x.ndim() < 2) {
    throw std::invalid_argument("[gather_qmm] Non-quantized input must have at least two dimensions but got input "
                                "with shape " +
                                detail::shape_str(x.shape()) + ".");
  }
  std::vector<array> inputs{astype(x, c.dtype, s), w};
  if (c.mode == QuantizationMode::Affine) {
    inputs.push_back(astype(scales, c.dtype, s));
    inputs.push_back(astype(*biases, c.dtype, s));
  } else {
    inputs.push_back(scales);
  }
  inputs.push_back(astype(b[0], uint32, s));
  inputs.push_back(astype(b[1], uint32, s));
  State st{c.gs, c.bits, static_cast<int32_t>(c.mode), transpose, sorted_indices && !rhs_indices,
           sorted_indices && !lhs_indices};
  static const PrimitiveDef& d = detail::def("GatherQMM");
  return make_array(d, std::move(st), std::move(inputs), {}, to_stream(s));
}

}  // namespace kiln
