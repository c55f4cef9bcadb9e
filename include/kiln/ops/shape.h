// kiln ops: shapes, views, slicing, joining, padding and array creation. Names and signatures follow
// mlx/ops.h.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln {

// ---- creation ----
array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, double step, StreamOrDevice s = {});
array arange(double start, double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, StreamOrDevice s = {});
array arange(double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double stop, StreamOrDevice s = {});
array arange(int start, int stop, int step, StreamOrDevice s = {});
array arange(int start, int stop, StreamOrDevice s = {});
array arange(int stop, StreamOrDevice s = {});
array linspace(double start, double stop, int num = 50, Dtype dtype = float32, StreamOrDevice s = {});
array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s = {});
array full(Shape shape, array vals, StreamOrDevice s = {});
template <typename T>
array full(Shape shape, T val, Dtype dtype, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val, dtype), s);
}
template <typename T>
array full(Shape shape, T val, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val), s);
}
array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array zeros(const Shape& shape, StreamOrDevice s = {}) { return zeros(shape, float32, s); }
array zeros_like(const array& a, StreamOrDevice s = {});
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array ones(const Shape& shape, StreamOrDevice s = {}) { return ones(shape, float32, s); }
array ones_like(const array& a, StreamOrDevice s = {});
array full_like(const array& a, array vals, Dtype dtype, StreamOrDevice s = {});
array full_like(const array& a, array vals, StreamOrDevice s = {});
template <typename T>
array full_like(const array& a, T val, Dtype dtype, StreamOrDevice s = {}) {
  return full_like(a, array(val, dtype), dtype, s);
}
template <typename T>
array full_like(const array& a, T val, StreamOrDevice s = {}) {
  return full_like(a, array(val, a.dtype()), s);
}
array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s = {});
inline array eye(int n, Dtype dtype, StreamOrDevice s = {}) { return eye(n, n, 0, dtype, s); }
inline array eye(int n, int m, StreamOrDevice s = {}) { return eye(n, m, 0, float32, s); }
inline array eye(int n, int m, int k, StreamOrDevice s = {}) { return eye(n, m, k, float32, s); }
inline array eye(int n, StreamOrDevice s = {}) { return eye(n, n, 0, float32, s); }
array identity(int n, Dtype dtype, StreamOrDevice s = {});
inline array identity(int n, StreamOrDevice s = {}) { return identity(n, float32, s); }
array tri(int n, int m, int k, Dtype type, StreamOrDevice s = {});
inline array tri(int n, Dtype type, StreamOrDevice s = {}) { return tri(n, n, 0, type, s); }
array tril(array x, int k = 0, StreamOrDevice s = {});
array triu(array x, int k = 0, StreamOrDevice s = {});

// ---- shape and views ----
array reshape(const array& a, Shape shape, StreamOrDevice s = {});
array flatten(const array& a, int start_axis, int end_axis = -1, StreamOrDevice s = {});
array flatten(const array& a, StreamOrDevice s = {});
array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s = {});
array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array squeeze(const array& a, int axis, StreamOrDevice s = {});
array squeeze(const array& a, StreamOrDevice s = {});
array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array expand_dims(const array& a, int axis, StreamOrDevice s = {});
array transpose(const array& a, std::vector<int> axes, StreamOrDevice s = {});
inline array transpose(const array& a, std::initializer_list<int> axes, StreamOrDevice s = {}) {
  return transpose(a, std::vector<int>(axes), s);
}
array transpose(const array& a, StreamOrDevice s = {});
array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s = {});
array moveaxis(const array& a, int source, int destination, StreamOrDevice s = {});
array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s = {});
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s = {});
// Broadcast all but the trailing `ignore_axes` (negative, increasing), which keep each input's sizes.
// Internal in MLX (used by matmul-like ops); under a shapeless trace it emits BroadcastAxes.
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, std::vector<int> ignore_axes,
                                    StreamOrDevice s = {});
// NumPy broadcasting of two shapes; throws "[broadcast_shapes] Shapes (a) and (b) cannot be broadcast."
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Coordinate arrays from coordinate vectors; indexing "xy" (Cartesian) or "ij" (matrix).
std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse = false, const std::string& indexing = "xy",
                            StreamOrDevice s = {});
array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s = {});
array contiguous(const array& a, bool allow_col_major = false, StreamOrDevice s = {});
array atleast_1d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_2d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_3d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s = {});

// ---- slicing ----
array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s = {});
// Braced starts pick the static form (an initializer list could also make an array).
inline array slice(const array& a, std::initializer_list<int> start, Shape stop, Shape strides,
                   StreamOrDevice s = {}) {
  return slice(a, Shape(start.begin(), start.end()), std::move(stop), std::move(strides), s);
}
array slice(const array& a, Shape start, Shape stop, StreamOrDevice s = {});
// Dynamic start (an integer array, one entry per axis in `axes`).
array slice(const array& a, const array& start, std::vector<int> axes, Shape slice_size, StreamOrDevice s = {});
array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s = {});
array slice_update(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s = {});
// Braced starts pick the static form (kiln addition; in MLX such calls are ambiguous).
inline array slice_update(const array& src, const array& update, std::initializer_list<int> start, Shape stop,
                          Shape strides, StreamOrDevice s = {}) {
  return slice_update(src, update, Shape(start.begin(), start.end()), std::move(stop), std::move(strides), s);
}
inline array slice_update(const array& src, const array& update, std::initializer_list<int> start, Shape stop,
                          StreamOrDevice s = {}) {
  return slice_update(src, update, Shape(start.begin(), start.end()), std::move(stop), s);
}
array slice_update(const array& src, const array& update, const array& start, std::vector<int> axes,
                   StreamOrDevice s = {});
std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, int num_splits, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s = {});

// ---- joining, repeating, padding ----
array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s = {});
array concatenate(std::vector<array> arrays, StreamOrDevice s = {});
array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s = {});
array stack(const std::vector<array>& arrays, StreamOrDevice s = {});
array tile(const array& arr, std::vector<int> reps, StreamOrDevice s = {});
array repeat(const array& arr, int repeats, int axis, StreamOrDevice s = {});
array repeat(const array& arr, int repeats, StreamOrDevice s = {});
array roll(const array& a, int shift, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, StreamOrDevice s = {});
array roll(const array& a, int shift, int axis, StreamOrDevice s = {});
array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s = {});
// mode: "constant" or "edge".
array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size, const Shape& high_pad_size,
          const array& pad_value = array(0), const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, int pad_width, const array& pad_value = array(0), const std::string& mode = "constant",
          StreamOrDevice s = {});

}  // namespace kiln
