// kiln::fft: discrete Fourier transforms, with the names, signatures and conventions of mlx/fft.h.
// Forward transforms are unscaled, inverse transforms scale by 1/n. `n` pads (with zeros) or crops the
// input along each axis first. rfft* keep n/2 + 1 entries of the last listed axis; irfft* take those and
// produce n real values (by default n = 2 * (m - 1) for an input of size m).
#pragma once

#include <vector>

#include "kiln/array.h"

namespace kiln::fft {

array fftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {});
array fftn(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array fftn(const array& a, StreamOrDevice s = {});

array ifftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {});
array ifftn(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array ifftn(const array& a, StreamOrDevice s = {});

inline array fft(const array& a, int n, int axis, StreamOrDevice s = {}) { return fftn(a, {n}, {axis}, s); }
inline array fft(const array& a, int axis = -1, StreamOrDevice s = {}) { return fftn(a, std::vector<int>{axis}, s); }

inline array ifft(const array& a, int n, int axis, StreamOrDevice s = {}) { return ifftn(a, {n}, {axis}, s); }
inline array ifft(const array& a, int axis = -1, StreamOrDevice s = {}) {
  return ifftn(a, std::vector<int>{axis}, s);
}

inline array fft2(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {}) {
  return fftn(a, n, axes, s);
}
inline array fft2(const array& a, const std::vector<int>& axes = {-2, -1}, StreamOrDevice s = {}) {
  return fftn(a, axes, s);
}

inline array ifft2(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {}) {
  return ifftn(a, n, axes, s);
}
inline array ifft2(const array& a, const std::vector<int>& axes = {-2, -1}, StreamOrDevice s = {}) {
  return ifftn(a, axes, s);
}

array rfftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {});
array rfftn(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array rfftn(const array& a, StreamOrDevice s = {});

array irfftn(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {});
array irfftn(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array irfftn(const array& a, StreamOrDevice s = {});

inline array rfft(const array& a, int n, int axis, StreamOrDevice s = {}) { return rfftn(a, {n}, {axis}, s); }
inline array rfft(const array& a, int axis = -1, StreamOrDevice s = {}) {
  return rfftn(a, std::vector<int>{axis}, s);
}

inline array irfft(const array& a, int n, int axis, StreamOrDevice s = {}) { return irfftn(a, {n}, {axis}, s); }
inline array irfft(const array& a, int axis = -1, StreamOrDevice s = {}) {
  return irfftn(a, std::vector<int>{axis}, s);
}

inline array rfft2(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {}) {
  return rfftn(a, n, axes, s);
}
inline array rfft2(const array& a, const std::vector<int>& axes = {-2, -1}, StreamOrDevice s = {}) {
  return rfftn(a, axes, s);
}

inline array irfft2(const array& a, const Shape& n, const std::vector<int>& axes, StreamOrDevice s = {}) {
  return irfftn(a, n, axes, s);
}
inline array irfft2(const array& a, const std::vector<int>& axes = {-2, -1}, StreamOrDevice s = {}) {
  return irfftn(a, axes, s);
}

/** Move the zero-frequency entry to the centre (a roll by size / 2 along each axis). */
array fftshift(const array& a, StreamOrDevice s = {});
array fftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
/** The inverse of fftshift (a roll by -(size / 2)). */
array ifftshift(const array& a, StreamOrDevice s = {});
array ifftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});

}  // namespace kiln::fft
