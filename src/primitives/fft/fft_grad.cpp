// Derivative rules of the FFT row (autodiff_rules.h). Every FFT is linear over the reals, so its jvp is
// the node applied to the tangent. Its vjp is the adjoint (cotangents of complex arrays are
// dL/dRe + i dL/dIm, so a complex-linear map's adjoint is its conjugate transpose):
//   c2c forward (unnormalized):   N * inverse FFT of the cotangent;  c2c inverse (1/N): forward FFT / N;
//   real forward (rfft, last axis halved): the cotangent zero-padded to the full last axis, then
//     N * inverse c2c FFT over the axes, real part;
//   real inverse (irfft): the real forward FFT of the cotangent / N, with the bins that stand for two
//     (neither the first nor, for even sizes, the last) doubled.
// N is the product of the logical sizes along the transformed axes.
#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

// FFT state: (axes, inverse, real).
array fft_node(const Application& app, const array& x, bool inverse, bool real, const ArraySpec& out) {
  State st{app.state().get<std::vector<uint64_t>>(0), inverse, real};
  return make_array(*app.node.def, std::move(st), {x}, {out}, app.node.stream);
}

Arrays fft_jvp(const Application& app, const Arrays& tan, const Ints&) {
  return {make_array(*app.node.def, app.state(), {tan[0]}, app.node.specs, app.node.stream)};
}

Arrays fft_vjp(const Application& app, const Arrays& cot, const Ints&) {
  const auto& axes = app.state().get<std::vector<uint64_t>>(0);
  const bool inverse = app.state().b(1), real = app.state().b(2);
  const array& x = app.inputs[0];
  const array& y = app.outputs[0];
  auto s = app.s();
  const Shape& logical = real && inverse ? y.shape() : x.shape();
  double n = 1;
  for (uint64_t a : axes) n *= logical[a];
  const int last = static_cast<int>(axes.back());
  if (!real) {
    array r = fft_node(app, cot[0], !inverse, false, {x.shape(), complex64});
    return {multiply(r, array(inverse ? 1.0f / static_cast<float>(n) : static_cast<float>(n)), s)};
  }
  if (!inverse) {  // rfft: complex cotangent on the half axis
    const array& g = cot[0];
    std::vector<std::pair<int, int>> widths(g.ndim(), {0, 0});
    widths[last].second = x.shape(last) - g.shape(last);
    array full = pad(g, widths, array(complex64_t{0.0f, 0.0f}), "constant", s);
    array r = fft_node(app, full, true, false, {x.shape(), complex64});
    return {multiply(kiln::real(r, s), array(static_cast<float>(n)), s)};
  }
  // irfft: real cotangent of the full last axis; the input is the half axis.
  array r = fft_node(app, cot[0], false, true, {x.shape(), complex64});
  const int half = x.shape(last), full = y.shape(last);
  std::vector<float> w(half, 2.0f / static_cast<float>(n));
  w[0] = 1.0f / static_cast<float>(n);
  if (full % 2 == 0) w[half - 1] = 1.0f / static_cast<float>(n);
  Shape ws(x.ndim(), 1);
  ws[last] = half;
  return {multiply(r, astype(array(w.data(), ws, float32), complex64, s), s)};
}

}  // namespace

namespace primitives {
void register_fft_grad(RuleTable& t) { t.add("FFT", fft_vjp, fft_jvp); }
}  // namespace primitives

}  // namespace kiln
