// FFT (src/primitives/fft/) and the complex64 values around it. ONNX Runtime has no complex64 kernels,
// so a complex64 value inside the graph is a float32 tensor with a trailing dimension of 2 (real,
// imaginary), the form ONNX's DFT takes; the driver refuses complex64 graph inputs and outputs and
// stores complex constants in that form. The element-wise lowerings of complex operands are here too.
#include <climits>
#include <cstdint>

#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

std::string part(Context& c, const std::string& z, int k) {
  return c.op("Squeeze", {c.op("Slice", {z, c.ints({k}), c.ints({k + 1}), c.ints({-1})}), c.ints({-1})});
}

std::string make_complex(Context& c, const std::string& re, const std::string& im) {
  return c.op("Concat", {c.op("Unsqueeze", {re, c.ints({-1})}), c.op("Unsqueeze", {im, c.ints({-1})})},
              {{"axis", -1}});
}

std::string conj(Context& c, const std::string& z) {
  return c.op("Mul", {z, c.constant(array({1.0f, -1.0f}, Shape{2}))});
}

// One DFT along `axis` of a (..., 2) value.
std::string dft(Context& c, const std::string& z, int64_t axis, bool inverse, bool onesided = false) {
  return c.op("DFT", {z, "", c.ints({axis}, true)}, {{"inverse", inverse ? 1 : 0}, {"onesided", onesided ? 1 : 0}});
}

void fft(Context& c) {
  c.need_opset(20, "DFT with its axis as an input");
  const auto& axes_u = c.arg<std::vector<uint64_t>>(0);
  const bool inverse = c.bool_arg(1), real = c.bool_arg(2);
  const Tensor& x = c.in.at(0);
  const Tensor& out = c.out.at(0);
  std::vector<int64_t> axes(axes_u.begin(), axes_u.end());
  if (axes.empty()) {
    c.set_output(0, x.name);
    return;
  }
  for (auto a : axes) {
    if (!real && x.shape.at(a) != out.shape.at(a)) c.refuse("an FFT whose recorded size differs from its input's");
  }
  std::string z;
  if (!real) {
    z = x.name;
    for (auto a : axes) z = dft(c, z, a, inverse);
    c.set_output(0, z);
    return;
  }
  const int64_t last = axes.back();
  if (!inverse) {
    // rfftn: the real transform (one-sided) along the last axis, then the complex ones.
    std::string r = x.dtype == float32 ? x.name : c.cast(x.name, float32);
    z = dft(c, c.op("Unsqueeze", {r, c.ints({-1})}), last, false, true);
    for (size_t k = 0; k + 1 < axes.size(); ++k) z = dft(c, z, axes[k], false);
    c.set_output(0, z);
    return;
  }
  // irfftn: the inverse complex transforms on the other axes, then the last one from the whole spectrum
  // rebuilt by Hermitian symmetry (X[n - k] = conj(X[k])), its real part.
  z = x.name;
  for (size_t k = 0; k + 1 < axes.size(); ++k) z = dft(c, z, axes[k], true);
  const int64_t n = out.shape.at(last), m = x.shape.at(last);
  if (m != n / 2 + 1) c.refuse("an inverse real FFT of " + std::to_string(m) + " bins for " + std::to_string(n) +
                               " samples");
  if (n - m > 0) {
    std::string mirror = c.op("Slice", {z, c.ints({n - m}), c.ints({0}), c.ints({last}), c.ints({-1})});
    z = c.op("Concat", {z, conj(c, mirror)}, {{"axis", last}});
  }
  z = dft(c, z, last, true);
  store(c, 0, part(c, z, 0), float32);
}

bool any_complex(const Context& c) {
  for (auto& t : c.in) {
    if (t.dtype == complex64) return true;
  }
  return c.out.at(0).dtype == complex64;
}

}  // namespace

bool lower_complex(Context& c) {
  if (!any_complex(c)) return false;
  const std::string& p = c.primitive();
  auto pair_of = [&](const Tensor& t) {
    if (t.dtype == complex64) return t.name;
    std::string r = t.dtype == float32 ? t.name : c.cast(t.name, float32);
    return make_complex(c, r, c.op("Sub", {r, r}));
  };
  if (p == "AsType") {
    const Tensor& x = c.in.at(0);
    if (c.out.at(0).dtype == complex64) {
      // Real to complex: a zero imaginary part (Expand of 0, not x - x, which is NaN for infinities).
      std::string r = x.dtype == float32 ? x.name : c.cast(x.name, float32);
      std::string zero = c.op("Expand", {c.scalar(0, float32), c.op("Shape", {r})});
      c.set_output(0, make_complex(c, r, zero));
    } else {
      store(c, 0, part(c, x.name, 0), float32);  // complex to real keeps the real part
    }
    return true;
  }
  if (p == "Real" || p == "Imag") {
    c.set_output(0, part(c, c.in.at(0).name, p == "Real" ? 0 : 1));
    return true;
  }
  if (p == "Conjugate") {
    c.set_output(0, conj(c, c.in.at(0).name));
    return true;
  }
  if (p == "Negative") {
    c.op_to(0, "Neg", {c.in.at(0).name});
    return true;
  }
  if (p == "Abs") {
    std::string z = c.in.at(0).name;
    std::string m = c.op("Sqrt", {c.op("ReduceSum", {c.op("Mul", {z, z}), c.ints({-1})}, {{"keepdims", 0}})});
    c.set_output(0, make_complex(c, m, c.op("Expand", {c.scalar(0, float32), c.op("Shape", {m})})));
    return true;
  }
  if (p == "Add" || p == "Subtract") {
    std::string a = pair_of(c.in.at(0)), b = pair_of(c.in.at(1));
    c.op_to(0, p == "Add" ? "Add" : "Sub", {a, b});
    return true;
  }
  if (p == "Multiply") {
    std::string a = pair_of(c.in.at(0)), b = pair_of(c.in.at(1));
    std::string ar = part(c, a, 0), ai = part(c, a, 1), br = part(c, b, 0), bi = part(c, b, 1);
    std::string re = c.op("Sub", {c.op("Mul", {ar, br}), c.op("Mul", {ai, bi})});
    std::string im = c.op("Add", {c.op("Mul", {ar, bi}), c.op("Mul", {ai, br})});
    c.set_output(0, make_complex(c, re, im));
    return true;
  }
  if (p == "Broadcast" || p == "BroadcastAxes" || p == "Full") {
    std::vector<int64_t> s = dims(c.out.at(0).shape);
    s.push_back(2);
    c.op_to(0, "Expand", {pair_of(c.in.at(0)), c.ints(s)});
    return true;
  }
  if (p == "Reshape" || p == "Flatten" || p == "Unflatten" || p == "ExpandDims" || p == "Squeeze") {
    std::vector<int64_t> s = dims(c.out.at(0).shape);
    s.push_back(2);
    c.op_to(0, "Reshape", {c.in.at(0).name, c.ints(s)});
    return true;
  }
  if (p == "Copy" || p == "StopGradient" || p == "Contiguous") {
    c.set_output(0, c.in.at(0).name);
    return true;
  }
  if (p == "FFT") return false;
  c.refuse("complex64 operands (lowered for FFT, AsType, Real, Imag, Conjugate, Abs, Negative, Add, Subtract, "
           "Multiply, broadcasts and reshapes; ONNX Runtime has no complex64 kernels)");
}

void register_fft_onnx(LoweringTable& table) { table.add("FFT", fft); }

}  // namespace kiln::onnx_export
