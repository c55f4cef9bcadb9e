// Calls written the way MLX's C++ API is used must compile and mean the same in kiln (code written
// against mlx::core compiles with `namespace mx = kiln;`). A braced integer list is axes, strides or a
// shape, never a stream: kiln::Stream, like MLX's, is not constructible from an int implicitly.
#include <gtest/gtest.h>

#include <type_traits>

#include "kiln/kiln.h"

namespace mx = kiln;

static_assert(!std::is_convertible_v<int, mx::Stream>, "Stream must not be implicitly built from an int");
static_assert(!std::is_convertible_v<int, mx::StreamOrDevice>, "an int must not convert to a stream or device");
static_assert(std::is_convertible_v<mx::Device, mx::StreamOrDevice>);
static_assert(std::is_convertible_v<mx::Device::DeviceType, mx::StreamOrDevice>);

TEST(ApiCompat, BracedAxesAreNotStreams) {
  mx::array x = mx::reshape(mx::arange(6, mx::float32), {2, 3});
  // fftshift(x, {1}) rolls axis 1 by 3 / 2 = 1.
  auto y = mx::fft::fftshift(x, {1});
  mx::eval(y);
  auto yc = mx::contiguous(y);
  mx::eval(yc);
  EXPECT_EQ(std::vector<float>(yc.data<float>(), yc.data<float>() + 6), (std::vector<float>{2, 0, 1, 5, 3, 4}));
  // ifftshift(x, {0}) on 2 rows swaps them.
  auto z = mx::contiguous(mx::fft::ifftshift(x, {0}));
  mx::eval(z);
  EXPECT_EQ(std::vector<float>(z.data<float>(), z.data<float>() + 6), (std::vector<float>{3, 4, 5, 0, 1, 2}));
  // Explicit streams and devices still work where MLX takes them.
  auto s = mx::sum(x, mx::Device::cpu);
  EXPECT_EQ(s.item<float>(), 15.0f);
  auto t = mx::sum(x, mx::Stream(0, mx::Device{mx::Device::cpu}));
  EXPECT_EQ(t.item<float>(), 15.0f);
}
