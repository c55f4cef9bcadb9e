// The Quantize primitive (quantize and dequantize, every mode): its row and the quantize/dequantize
// ops. The kernel is in backend/cpu/kernels/quantized/quantized.cpp.
#include "core/mode.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/quantized/quantized_internal.h"

namespace kiln {

std::string quantization_mode_to_string(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::Affine: return "affine";
    case QuantizationMode::Mxfp4: return "mxfp4";
    case QuantizationMode::Mxfp8: return "mxfp8";
    case QuantizationMode::Nvfp4: return "nvfp4";
  }
  return "unknown";
}

QuantizationMode string_to_quantization_mode(const std::string& mode, std::string_view tag) {
  if (mode == "affine") return QuantizationMode::Affine;
  if (mode == "mxfp4") return QuantizationMode::Mxfp4;
  if (mode == "mxfp8") return QuantizationMode::Mxfp8;
  if (mode == "nvfp4") return QuantizationMode::Nvfp4;
  std::string msg;
  if (!tag.empty()) msg.append("[").append(tag).append("]");
  throw std::invalid_argument(msg + " Invalid quantization mode '" + mode + "'.");
}

namespace quant {

void validate_params(const char* api, QuantizationMode mode, int group_size, int bits) {
  const std::string tag = std::string("[") + api + "] ";
  if (mode == QuantizationMode::Affine) {
    if (group_size != 32 && group_size != 64 && group_size != 128) {
      throw std::invalid_argument(tag + "The requested group size " + std::to_string(group_size) +
                                  " is not supported. The supported group sizes are 32, 64, and 128.");
    }
    if (bits < 2 || bits > 8 || bits == 7) {
      throw std::invalid_argument(tag + "The requested number of bits " + std::to_string(bits) +
                                  " is not supported. The supported bits are 2, 3, 4, 5, 6 and 8.");
    }
    return;
  }
  const int gs = mode == QuantizationMode::Nvfp4 ? 16 : 32;
  const int b = mode == QuantizationMode::Mxfp8 ? 8 : 4;
  if (group_size != gs) {
    throw std::invalid_argument(tag + quantization_mode_to_string(mode) + " quantization requires group size " +
                                std::to_string(gs) + " but got " + std::to_string(group_size) + ".");
  }
  if (bits != b) {
    throw std::invalid_argument(tag + quantization_mode_to_string(mode) + " quantization requires bits to be " +
                                std::to_string(b) + " but got " + std::to_string(bits) + ".");
  }
}

QuantizationMode mode_from_code(const char* api, int code) {
  if (code < 0 || code > 3) {
    throw std::invalid_argument(std::string("[") + api + "] Invalid quantization mode code " + std::to_string(code) +
                                ".");
  }
  return static_cast<QuantizationMode>(code);
}

namespace {

// State: placeholder, group_size, bits, mode, dequantize.
std::vector<ArraySpec> quantize_infer(const State& st, const std::vector<ArraySpec>& in) {
  const bool deq = st.b(4);
  const char* api = deq ? "dequantize" : "quantize";
  const QuantizationMode mode = mode_from_code(api, st.i(3));
  const int gs = st.i(1), bits = st.i(2);
  validate_params(api, mode, gs, bits);
  const bool affine = mode == QuantizationMode::Affine;
  const size_t n_in = deq ? (affine ? 3 : 2) : 1;
  if (in.size() != n_in) {
    throw std::invalid_argument(std::string("[") + api + "] Expected " + std::to_string(n_in) + " inputs for mode '" +
                                quantization_mode_to_string(mode) + "' but got " + std::to_string(in.size()) + ".");
  }
  const ArraySpec& w = in[0];
  if (w.shape.size() < 2) {
    throw std::invalid_argument(std::string("[") + api + "] The matrix must have at least 2 dimensions but it has " +
                                std::to_string(w.shape.size()) + ".");
  }
  if (!deq) {
    if (!is_floating_point(w.dtype)) {
      throw std::invalid_argument("[quantize] Only real floating types can be quantized but w has type " +
                                  dtype_name(w.dtype) + ".");
    }
    if (w.shape.back() % gs != 0) {
      throw std::invalid_argument(
          "[quantize] The last dimension of the matrix needs to be divisible by the quantization group size " +
          std::to_string(gs) + ". However the provided  matrix has shape " + detail::shape_str(w.shape));
    }
    Shape wq = w.shape, sc = w.shape;
    wq.back() = w.shape.back() / 32 * bits + (w.shape.back() % 32) * bits / 32;
    sc.back() = w.shape.back() / gs;
    if (affine) return {{wq, uint32}, {sc, w.dtype}, {sc, w.dtype}};
    return {{wq, uint32}, {sc, uint8}};
  }
  const ArraySpec& s = in[1];
  if (w.dtype != uint32) throw std::invalid_argument("[dequantize] The matrix should be given as a uint32");
  Shape wb(w.shape.begin(), w.shape.end() - 1), sb(s.shape.begin(), s.shape.end());
  if (!sb.empty()) sb.pop_back();
  const int64_t out_last = static_cast<int64_t>(w.shape.back()) * 32 / bits;
  if (wb != sb || (static_cast<int64_t>(w.shape.back()) * 32) % bits != 0 ||
      out_last != static_cast<int64_t>(s.shape.back()) * gs ||
      (affine && in[2].shape != s.shape)) {
    throw std::invalid_argument(std::string("[dequantize] Shape of scales") + (affine ? " and biases" : "") +
                                " does not match the matrix given the quantization parameters. Provided matrix of "
                                "shape " +
                                detail::shape_str(w.shape) + " and scales of shape " + detail::shape_str(s.shape) +
                                " with group_size=" + std::to_string(gs) + " and bits=" + std::to_string(bits) + ".");
  }
  Shape out = w.shape;
  out.back() = static_cast<int32_t>(out_last);
  if (affine) {
    if (!is_floating_point(s.dtype) || in[2].dtype != s.dtype) {
      throw std::invalid_argument("[dequantize] Scales and biases must share one floating dtype but got " +
                                  dtype_name(s.dtype) + " and " + dtype_name(in[2].dtype) + ".");
    }
    return {{out, s.dtype}};
  }
  if (s.dtype != uint8) {
    throw std::invalid_argument("[dequantize] Scales must be uint8 for quantization mode '" +
                                quantization_mode_to_string(mode) + "' but have type " + dtype_name(s.dtype) + ".");
  }
  // The output dtype is a parameter of the op that the state does not hold: MLX's default here, the
  // recorded dtype when read from a file.
  return {{out, bfloat16}};
}

// A record's outputs: those of `infer`, except that a floating dequantization (fp modes) may have any
// floating dtype (the op's `dtype` argument, which the state does not hold).
void quantize_check(const State& st, const std::vector<ArraySpec>& in, const std::vector<ArraySpec>& out) {
  std::vector<ArraySpec> want = quantize_infer(st, in);
  const bool free_dtype = st.b(4) && st.i(3) != static_cast<int>(QuantizationMode::Affine);
  bool ok = want.size() == out.size();
  for (size_t i = 0; ok && i < want.size(); ++i) {
    ok = want[i].shape == out[i].shape &&
         (free_dtype ? is_floating_point(out[i].dtype) : want[i].dtype == out[i].dtype);
  }
  if (!ok) {
    std::string w, o;
    for (auto& a : want) w += detail::shape_str(a.shape) + " " + dtype_name(a.dtype) + "; ";
    for (auto& a : out) o += detail::shape_str(a.shape) + " " + dtype_name(a.dtype) + "; ";
    throw std::invalid_argument("[Quantize] Expected outputs " + w + "but the record has " + o);
  }
}

}  // namespace

void define_quantize() {
  registry::define(detail::row("Quantize", {1, 3},
                               {{"fallback", FieldType::Placeholder},
                                {"group_size", FieldType::Int},
                                {"bits", FieldType::Int},
                                {"mode", FieldType::Int},
                                {"dequantize", FieldType::Bool}},
                               quantize_infer, {.num_outputs = -1, .check = quantize_check}));
}

}  // namespace quant

namespace primitives {
void register_quantized() {
  quant::define_quantize();
  quant::define_qmm();
}
}  // namespace primitives

namespace {

std::pair<int, int> params_for(QuantizationMode mode, std::optional<int> gs, std::optional<int> bits) {
  int dg = 64, db = 4;
  if (mode == QuantizationMode::Nvfp4) dg = 16;
  if (mode == QuantizationMode::Mxfp4 || mode == QuantizationMode::Mxfp8) dg = 32;
  if (mode == QuantizationMode::Mxfp8) db = 8;
  return {gs.value_or(dg), bits.value_or(db)};
}

const PrimitiveDef& quantize_def() {
  static const PrimitiveDef& d = detail::def("Quantize");
  return d;
}

// Affine dequantization as the graph of plain ops that MLX records on CPU streams. Used while
// tracing for export on a CPU stream: MLX 0.30.1's CPU build evaluates a dequantizing Quantize node
// as a quantization (and crashes), so such files would not run there.
array affine_dequantize_graph(const array& w0, const array& scales, const array& biases, int gs, int bits,
                              StreamOrDevice s) {
  Shape wshape = w0.shape(), sshape = scales.shape();
  wshape.back() = -1;
  sshape.back() = -1;
  array w = w0;
  if ((bits & (bits - 1)) == 0) {
    std::vector<array> parts;
    for (int start = 0; start < 32; start += bits) {
      parts.push_back(expand_dims(right_shift(left_shift(w, array(32 - (start + bits), uint32), s),
                                              array(32 - bits, uint32), s),
                                  -1, s));
    }
    w = concatenate(parts, -1, s);
  } else {
    w = expand_dims(w, -1, s);
    w = bitwise_and(right_shift(w, arange(32, uint32, s), s), array({1}, uint32), s);
    Shape ns = w.shape();
    ns[ns.size() - 2] = -1;
    ns.back() = bits;
    w = reshape(w, ns, s);
    w = sum(left_shift(w, arange(bits, uint32, s), s), -1, false, s);
  }
  wshape.push_back(gs);
  w = reshape(w, wshape, s);
  w = multiply(w, expand_dims(scales, -1, s), s);
  w = add(w, expand_dims(biases, -1, s), s);
  return reshape(w, sshape, s);
}

}  // namespace

std::vector<array> quantize(const array& w, std::optional<int> group_size_, std::optional<int> bits_,
                            const std::string& mode, StreamOrDevice s) {
  const QuantizationMode qmode = string_to_quantization_mode(mode, "quantize");
  auto [gs, bits] = params_for(qmode, group_size_, bits_);
  if (!is_floating_point(w.dtype())) {
    throw std::invalid_argument("[quantize] Only real floating types can be quantized but w has type " +
                                dtype_name(w.dtype()) + ".");
  }
  if (w.ndim() < 2) {
    throw std::invalid_argument("[quantize] The matrix to be quantized must have at least 2 dimension but it has only " +
                                std::to_string(w.ndim()) + ".");
  }
  if (gs <= 0 || w.shape(-1) % gs != 0) {
    throw std::invalid_argument(
        "[quantize] The last dimension of the matrix needs to be divisible by the quantization group size " +
        std::to_string(gs) + ". However the provided  matrix has shape " + detail::shape_str(w.shape()));
  }
  quant::validate_params("quantize", qmode, gs, bits);
  State st{std::monostate{}, gs, bits, static_cast<int32_t>(qmode), false};
  return make_arrays(quantize_def(), std::move(st), {w}, {}, to_stream(s));
}

array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size_, std::optional<int> bits_, const std::string& mode,
                 std::optional<Dtype> dtype, StreamOrDevice s) {
  const QuantizationMode qmode = string_to_quantization_mode(mode, "dequantize");
  if (dtype && !is_floating_point(*dtype)) {
    throw std::invalid_argument("[dequantize] Only real floating types are supported but output dtype == " +
                                dtype_name(*dtype) + ".");
  }
  const bool affine = qmode == QuantizationMode::Affine;
  Dtype out_type = dtype.value_or(bfloat16);
  if (affine) {
    if (!biases) throw std::invalid_argument("[dequantize] Biases must be provided for affine quantization.");
    const Dtype t = promote_types(scales.dtype(), biases->dtype());
    if (!is_floating_point(t)) {
      throw std::invalid_argument("[dequantize] Only real floating types are supported but scales.dtype() == " +
                                  dtype_name(scales.dtype()) + " and biases.dtype() == " +
                                  dtype_name(biases->dtype()) + ".");
    }
    if (!dtype) out_type = t;
  } else if (biases) {
    throw std::invalid_argument("[dequantize] Biases must be null for quantization mode '" + mode + "'.");
  }
  auto [gs, bits] = params_for(qmode, group_size_, bits_);
  if (bits <= 0) throw std::invalid_argument("[dequantize] Invalid value for bits: " + std::to_string(bits));
  if (gs <= 0) throw std::invalid_argument("[dequantize] Invalid value for group_size: " + std::to_string(gs));
  if (w.dtype() != uint32) throw std::invalid_argument("[dequantize] The matrix should be given as a uint32");
  if (w.ndim() < 2) {
    throw std::invalid_argument(
        "[dequantize] The matrix to be dequantized must have at least 2 dimension but it has only " +
        std::to_string(w.ndim()) + ".");
  }
  if (!affine) quant::validate_params("dequantize", qmode, gs, bits);
  Shape wb = w.shape(), sb = scales.shape();
  const bool rank_ok = wb.size() == sb.size() && (!affine || biases->ndim() == sb.size());
  wb.back() = sb.empty() ? 0 : -1;
  if (!sb.empty()) sb.back() = -1;
  if (!rank_ok || wb != sb || (affine && biases->shape() != scales.shape())) {
    throw std::invalid_argument(affine ? "[dequantize] Shape of scales and biases does not match the matrix"
                                       : "[dequantize] Shape of scales does not match the matrix");
  }
  if (static_cast<int64_t>(w.shape(-1)) * 32 / bits != static_cast<int64_t>(scales.shape(-1)) * gs) {
    std::ostringstream msg;
    msg << "[dequantize] Shape of scales" << (affine ? " and biases" : "")
        << " does not match the matrix given the quantization parameters. Provided matrix of shape " << w.shape()
        << " and scales" << (affine ? "/biases" : "") << " of shape " << scales.shape();
    if (affine) msg << " with group_size=" << gs << " and bits=" << bits;
    msg << ".";
    throw std::invalid_argument(msg.str());
  }
  if (affine) quant::validate_params("dequantize", qmode, gs, bits);
  if (affine && detail::in_tracing() && to_stream(s).device == Device::cpu) {
    return astype(affine_dequantize_graph(w, scales, *biases, gs, bits, s), out_type, s);
  }
  State st{std::monostate{}, gs, bits, static_cast<int32_t>(qmode), true};
  if (affine) {
    const Dtype t = promote_types(scales.dtype(), biases->dtype());
    auto ins = std::vector<array>{w, astype(scales, t, s), astype(*biases, t, s)};
    return astype(make_arrays(quantize_def(), std::move(st), std::move(ins), {}, to_stream(s))[0], out_type, s);
  }
  if (scales.dtype() != uint8) {
    throw std::invalid_argument("[dequantize] Scales must be uint8 for quantization mode '" + mode +
                                "' but have type " + dtype_name(scales.dtype()) + ".");
  }
  Shape out_shape = w.shape();
  out_shape.back() = static_cast<int32_t>(static_cast<int64_t>(w.shape(-1)) * 32 / bits);
  return make_arrays(quantize_def(), std::move(st), {w, scales}, {{out_shape, out_type}}, to_stream(s))[0];
}

}  // namespace kiln
