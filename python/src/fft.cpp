// kiln.fft: discrete Fourier transforms, as mlx.core.fft.
#include "ops_common.h"

namespace kiln::py {

namespace {

using OneFn = array (*)(const array&, std::optional<int>, int, StreamOrDevice);
using ManyFn = array (*)(const array&, const std::optional<Shape>&, const std::optional<std::vector<int>>&,
                         StreamOrDevice);

// The n-d forms: s and axes both given, only axes, or neither (every axis; for the 2-D forms the
// default axes are the last two). s without axes is an error (checked by the caller), as in MLX.
template <array (*WithN)(const array&, const Shape&, const std::vector<int>&, StreamOrDevice),
          array (*WithAxes)(const array&, const std::vector<int>&, StreamOrDevice),
          array (*All)(const array&, StreamOrDevice)>
array nd(const array& a, const std::optional<Shape>& s, const std::optional<std::vector<int>>& axes,
         StreamOrDevice st) {
  if (s) return WithN(a, *s, *axes, st);
  if (axes) return WithAxes(a, *axes, st);
  return All(a, st);
}

// Overload picks for the template arguments.
array fftn_n(const array& a, const Shape& n, const std::vector<int>& ax, StreamOrDevice s) { return fft::fftn(a, n, ax, s); }
array fftn_ax(const array& a, const std::vector<int>& ax, StreamOrDevice s) { return fft::fftn(a, ax, s); }
array fftn_all(const array& a, StreamOrDevice s) { return fft::fftn(a, s); }
array ifftn_n(const array& a, const Shape& n, const std::vector<int>& ax, StreamOrDevice s) { return fft::ifftn(a, n, ax, s); }
array ifftn_ax(const array& a, const std::vector<int>& ax, StreamOrDevice s) { return fft::ifftn(a, ax, s); }
array ifftn_all(const array& a, StreamOrDevice s) { return fft::ifftn(a, s); }
array rfftn_n(const array& a, const Shape& n, const std::vector<int>& ax, StreamOrDevice s) { return fft::rfftn(a, n, ax, s); }
array rfftn_ax(const array& a, const std::vector<int>& ax, StreamOrDevice s) { return fft::rfftn(a, ax, s); }
array rfftn_all(const array& a, StreamOrDevice s) { return fft::rfftn(a, s); }
array irfftn_n(const array& a, const Shape& n, const std::vector<int>& ax, StreamOrDevice s) { return fft::irfftn(a, n, ax, s); }
array irfftn_ax(const array& a, const std::vector<int>& ax, StreamOrDevice s) { return fft::irfftn(a, ax, s); }
array irfftn_all(const array& a, StreamOrDevice s) { return fft::irfftn(a, s); }

struct OneDef {
  const char* name;
  OneFn fn;
  const char* doc;
};
struct ManyDef {
  const char* name;
  ManyFn fn;
  bool two_d;
  const char* doc;
};

std::optional<Shape> opt_shape(nb::handle h, const std::optional<std::vector<int>>& axes, const char* api) {
  if (h.is_none()) return std::nullopt;
  if (!axes) {
    throw std::invalid_argument(std::string("[") + api + "] Expected axes when s is given, found axes=None.");
  }
  return shape_arg(h, api);
}

}  // namespace

void init_fft(nb::module_& m) {
  const OneDef ones[] = {
      {"fft",
       [](const array& a, std::optional<int> n, int axis, StreamOrDevice s) {
         return n ? fft::fft(a, *n, axis, s) : fft::fft(a, axis, s);
       },
       "1-D discrete Fourier transform along an axis (n pads or crops the axis first)."},
      {"ifft",
       [](const array& a, std::optional<int> n, int axis, StreamOrDevice s) {
         return n ? fft::ifft(a, *n, axis, s) : fft::ifft(a, axis, s);
       },
       "1-D inverse discrete Fourier transform along an axis."},
      {"rfft",
       [](const array& a, std::optional<int> n, int axis, StreamOrDevice s) {
         return n ? fft::rfft(a, *n, axis, s) : fft::rfft(a, axis, s);
       },
       "1-D Fourier transform of a real input: the n // 2 + 1 non-negative frequencies."},
      {"irfft",
       [](const array& a, std::optional<int> n, int axis, StreamOrDevice s) {
         return n ? fft::irfft(a, *n, axis, s) : fft::irfft(a, axis, s);
       },
       "Inverse of rfft: n real values (default 2 * (m - 1))."},
  };
  for (const auto& d : ones) {
    OneFn fn = d.fn;
    const char* name = d.name;
    m.def(
        d.name,
        [fn, name](nb::handle a, std::optional<int> n, int axis, nb::handle stream) {
          return fn(arr(a, name), n, axis, S(stream));
        },
        "a"_a, "n"_a.none() = nb::none(), "axis"_a = -1, KILN_STREAM, d.doc);
  }
  const ManyDef manys[] = {
      {"fft2", &nd<fftn_n, fftn_ax, fftn_all>, true, "2-D discrete Fourier transform (the last two axes by default)."},
      {"ifft2", &nd<ifftn_n, ifftn_ax, ifftn_all>, true, "2-D inverse discrete Fourier transform."},
      {"rfft2", &nd<rfftn_n, rfftn_ax, rfftn_all>, true, "2-D Fourier transform of a real input."},
      {"irfft2", &nd<irfftn_n, irfftn_ax, irfftn_all>, true, "Inverse of rfft2."},
      {"fftn", &nd<fftn_n, fftn_ax, fftn_all>, false, "N-D discrete Fourier transform (every axis by default)."},
      {"ifftn", &nd<ifftn_n, ifftn_ax, ifftn_all>, false, "N-D inverse discrete Fourier transform."},
      {"rfftn", &nd<rfftn_n, rfftn_ax, rfftn_all>, false, "N-D Fourier transform of a real input."},
      {"irfftn", &nd<irfftn_n, irfftn_ax, irfftn_all>, false, "Inverse of rfftn."},
  };
  for (const auto& d : manys) {
    ManyFn fn = d.fn;
    const char* name = d.name;
    if (d.two_d) {
      m.def(
          d.name,
          [fn, name](nb::handle a, nb::handle s, nb::handle axes, nb::handle stream) {
            auto ax = axes_arg(axes, name);
            return fn(arr(a, name), opt_shape(s, ax, name), ax, S(stream));
          },
          "a"_a, "s"_a.none() = nb::none(), "axes"_a.none() = nb::make_tuple(-2, -1), KILN_STREAM, d.doc);
    } else {
      m.def(
          d.name,
          [fn, name](nb::handle a, nb::handle s, nb::handle axes, nb::handle stream) {
            auto ax = axes_arg(axes, name);
            return fn(arr(a, name), opt_shape(s, ax, name), ax, S(stream));
          },
          "a"_a, "s"_a.none() = nb::none(), "axes"_a.none() = nb::none(), KILN_STREAM, d.doc);
    }
  }
  m.def(
      "fftshift",
      [](nb::handle a, nb::handle axes, nb::handle stream) {
        auto ax = axes_arg(axes, "fftshift");
        array x = arr(a, "fftshift");
        return ax ? fft::fftshift(x, *ax, S(stream)) : fft::fftshift(x, S(stream));
      },
      "a"_a, "axes"_a.none() = nb::none(), KILN_STREAM, "Moves the zero frequency to the centre (every axis by default).");
  m.def(
      "ifftshift",
      [](nb::handle a, nb::handle axes, nb::handle stream) {
        auto ax = axes_arg(axes, "ifftshift");
        array x = arr(a, "ifftshift");
        return ax ? fft::ifftshift(x, *ax, S(stream)) : fft::ifftshift(x, S(stream));
      },
      "a"_a, "axes"_a.none() = nb::none(), KILN_STREAM, "The inverse of fftshift.");
}

}  // namespace kiln::py
