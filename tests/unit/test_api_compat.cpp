// Calls written the way MLX's C++ API is used must compile and mean the same in kiln (code written
// against mlx::core compiles with `namespace mx = kiln;`). A braced integer list is axes, strides or a
// shape, never a stream: kiln::Stream, like MLX's, is not constructible from an int implicitly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <sstream>
#include <type_traits>

#include "core/mode.h"
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

// ---------------------------------------------------------------- array constructors

TEST(ApiCompat, MixedAndEmptyBracedListsAreFloat32) {
  const float inf = std::numeric_limits<float>::infinity();
  mx::array empty({});
  EXPECT_EQ(empty.dtype(), mx::float32);
  EXPECT_EQ(empty.shape(), mx::Shape{0});
  mx::array with_inf({1.0, inf});
  EXPECT_EQ(with_inf.dtype(), mx::float32);
  EXPECT_EQ(with_inf.data<float>()[1], inf);
  mx::array mixed({3, 2.75});
  EXPECT_EQ(mixed.dtype(), mx::float32);
  EXPECT_EQ(mixed.data<float>()[0], 3.0f);
  EXPECT_EQ(mixed.data<float>()[1], 2.75f);
  // Lists of one type keep their type; an empty list with a type is an empty array of that type.
  EXPECT_EQ(mx::array({1, 2}).dtype(), mx::int32);
  EXPECT_EQ(mx::array({true, false}).dtype(), mx::bool_);
  mx::array typed({}, mx::int32);
  EXPECT_EQ(typed.dtype(), mx::int32);
  EXPECT_EQ(typed.size(), 0u);
  EXPECT_EQ(mx::array({1, 2}, mx::float16).dtype(), mx::float16);
  EXPECT_EQ(mx::array({1, 2}, {2, 1}).shape(), (mx::Shape{2, 1}));
}

// ---------------------------------------------------------------- flags, data_size, tracers, iteration

TEST(ApiCompat, FlagsAndDataSizeFollowTheView) {
  auto x = mx::zeros({2, 4});
  mx::eval(x);
  EXPECT_EQ(x.data_size(), 8u);
  EXPECT_TRUE(x.flags().row_contiguous);
  EXPECT_FALSE(x.flags().col_contiguous);
  EXPECT_TRUE(x.flags().contiguous);

  auto t = mx::transpose(x);
  mx::eval(t);
  EXPECT_EQ(t.data_size(), 8u);
  EXPECT_FALSE(t.flags().row_contiguous);
  EXPECT_TRUE(t.flags().col_contiguous);
  EXPECT_TRUE(t.flags().contiguous);

  auto b = mx::broadcast_to(mx::array(1.0f), {2, 8, 10});
  mx::eval(b);
  EXPECT_EQ(b.data_size(), 1u);
  EXPECT_TRUE(b.flags().contiguous);
  EXPECT_FALSE(b.flags().row_contiguous);
  EXPECT_FALSE(b.flags().col_contiguous);

  // Every other column: a strided view spans 7 elements of 8 and is not dense.
  auto s = mx::slice(mx::arange(8.0f), {0}, {8}, {2});
  mx::eval(s);
  EXPECT_EQ(s.data_size(), 7u);
  EXPECT_FALSE(s.flags().contiguous);
  EXPECT_FALSE(s.flags().row_contiguous);

  auto e = mx::broadcast_to(mx::zeros({4, 2, 1}), {4, 2, 0});
  mx::eval(e);
  EXPECT_EQ(e.data_size(), 0u);
  EXPECT_TRUE(e.flags().contiguous && e.flags().row_contiguous && e.flags().col_contiguous);

  mx::array one(1.0f);
  EXPECT_EQ(one.data_size(), 1u);
  EXPECT_TRUE(one.flags().contiguous && one.flags().row_contiguous && one.flags().col_contiguous);
}

// MLX stores flags and a reshape that views (does not copy) data that is not row-contiguous keeps
// its input's: a (10, 10) transpose reshaped to (2, 5, 10) (strides (5, 1, 10)) still says
// col_contiguous, as in MLX. A reshape that must copy, or of row-contiguous data, derives them.
TEST(ApiCompat, ReshapeOfAViewKeepsItsInputsFlagsAsMlxDoes) {
  auto x = mx::transpose(mx::ones({10, 10}), {1, 0});
  mx::eval(x);
  ASSERT_TRUE(x.flags().col_contiguous);
  auto y = mx::reshape(x, {2, 5, 10});
  mx::eval(y);
  EXPECT_EQ(y.strides(), (mx::Strides{5, 1, 10}));
  EXPECT_EQ(y.data<float>(), x.data<float>());  // a view, no copy
  EXPECT_FALSE(y.flags().row_contiguous);
  EXPECT_TRUE(y.flags().col_contiguous);
  auto y2 = mx::reshape(y, {10, 10});  // kept through a second view
  mx::eval(y2);
  EXPECT_TRUE(y2.flags().col_contiguous);
  auto c = mx::reshape(x, {2, 50});  // no strides describe it: copied, row-contiguous
  mx::eval(c);
  EXPECT_TRUE(c.flags().row_contiguous);
  EXPECT_FALSE(c.flags().col_contiguous);
  auto v = mx::reshape(x, {10, 1, 10, 1});
  mx::eval(v);
  EXPECT_FALSE(v.flags().row_contiguous);
  EXPECT_TRUE(v.flags().col_contiguous);
  // A transpose derives its flags again: (5, 1, 10) transposed to (10, 1, 5) is not col-contiguous.
  auto t = mx::transpose(y, {2, 1, 0});
  mx::eval(t);
  EXPECT_FALSE(t.flags().col_contiguous);
  // The values are the data's, whatever the flags say.
  auto r = mx::reshape(mx::transpose(mx::reshape(mx::arange(100.0f), {10, 10})), {2, 5, 10});
  EXPECT_EQ(mx::slice(r, {1, 2, 3}, {2, 3, 4}).item<float>(), 37.0f);  // r[1,2,3] = x.T[7,3] = 37
  EXPECT_EQ(mx::sum(mx::multiply(r, r)).item<float>(), 328350.0f);
}

TEST(ApiCompat, BroadcastGivesSizeOneAxesStrideZero) {
  auto y = mx::broadcast_to(mx::full({1, 1}, 2.3f), {5, 1});
  mx::eval(y);
  EXPECT_EQ(y.strides(), (mx::Strides{0, 0}));
  auto z = mx::broadcast_to(mx::reshape(mx::arange(3.0f), {3, 1}), {2, 3, 4});
  mx::eval(z);
  EXPECT_EQ(z.strides(), (mx::Strides{0, 1, 0}));
  auto zc = mx::contiguous(z);
  mx::eval(zc);
  EXPECT_EQ(zc.data<float>()[4 * 2 + 3], 2.0f);  // z[0, 2, 3]
}

TEST(ApiCompat, TracerFlagCountsOnlyWhileTracing) {
  auto x = mx::array(1);
  x.set_tracer(true);
  EXPECT_FALSE(x.is_tracer());
  {
    mx::detail::TraceGuard guard(false);
    EXPECT_TRUE(x.is_tracer());
    x.set_tracer(false);
    EXPECT_FALSE(x.is_tracer());
  }
}

TEST(ApiCompat, RangeForVisitsTheFirstAxis) {
  auto x = mx::reshape(mx::arange(6.0f), {3, 2});
  std::vector<float> firsts;
  int rows = 0;
  static_assert(std::is_const_v<decltype(*x.begin())>);
  for (auto row : x) {
    EXPECT_EQ(row.shape(), mx::Shape{2});
    firsts.push_back(mx::take(row, mx::array(0)).item<float>());
    ++rows;
  }
  EXPECT_EQ(rows, 3);
  EXPECT_EQ(firsts, (std::vector<float>{0, 2, 4}));
  auto empty_rows = mx::zeros({0, 3});
  int n = 0;
  for (auto r : empty_rows) n += static_cast<int>(r.size()) + 1;
  EXPECT_EQ(n, 0);
  EXPECT_THROW(mx::array(1.0f).begin(), std::invalid_argument);
}

// ---------------------------------------------------------------- type information

TEST(ApiCompat, FinfoIinfoResultTypeKindof) {
  EXPECT_EQ(mx::finfo(mx::float32).max, std::numeric_limits<float>::max());
  EXPECT_EQ(mx::finfo(mx::float32).min, std::numeric_limits<float>::lowest());
  EXPECT_EQ(mx::finfo(mx::float32).eps, std::numeric_limits<float>::epsilon());
  EXPECT_EQ(mx::finfo(mx::complex64).dtype, mx::float32);
  EXPECT_EQ(mx::finfo(mx::float16).max, 65504.0);
  EXPECT_EQ(mx::finfo(mx::float16).min, -65504.0);
  EXPECT_EQ(mx::finfo(mx::float16).eps, 1.0 / 1024);
  EXPECT_EQ(mx::finfo(mx::bfloat16).eps, 1.0 / 128);
  EXPECT_FLOAT_EQ(static_cast<float>(mx::finfo(mx::bfloat16).max), 3.3895314e38f);
  EXPECT_EQ(mx::finfo(mx::float64).max, std::numeric_limits<double>::max());
  EXPECT_THROW((void)mx::finfo{mx::int32}, std::invalid_argument);

  EXPECT_EQ(mx::iinfo(mx::int8).min, -128);
  EXPECT_EQ(mx::iinfo(mx::int8).max, 127u);
  EXPECT_EQ(mx::iinfo(mx::uint64).max, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(mx::iinfo(mx::int64).min, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(mx::iinfo(mx::uint16).min, 0);
  EXPECT_THROW((void)mx::iinfo{mx::float32}, std::invalid_argument);

  mx::array i(1), f(1.0f), h(1, mx::float16);
  EXPECT_EQ(mx::result_type(i, h), mx::float16);
  EXPECT_EQ(mx::result_type(i, h, f), mx::float32);
  EXPECT_EQ(mx::result_type(std::vector<mx::array>{i, mx::array(true)}), mx::int32);
  EXPECT_THROW(mx::result_type(std::vector<mx::array>{}), std::invalid_argument);

  EXPECT_EQ(mx::kindof(mx::uint8), mx::Dtype::Kind::u);
  EXPECT_EQ(mx::kindof(mx::bfloat16), mx::Dtype::Kind::V);  // as MLX: bfloat16 has no NumPy kind letter
  EXPECT_EQ(mx::kindof(mx::float16), mx::Dtype::Kind::f);
  EXPECT_EQ(mx::kindof(mx::complex64), mx::Dtype::Kind::c);

  EXPECT_EQ(mx::normalize_axis_index(-1, 3), 2);
  EXPECT_EQ(mx::normalize_axis_index(1, 3), 1);
  try {
    mx::normalize_axis_index(3, 3, "[f] ");
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[f] Axis 3 is out of bounds for array with 3 dimensions.");
  }
}

// ---------------------------------------------------------------- axis errors

TEST(ApiCompat, AxisOutsideTheArrayIsOutOfRangeWhereMlxSaysSo) {
  auto x = mx::zeros({2, 3});
  EXPECT_THROW(mx::sum(x, 2), std::out_of_range);
  EXPECT_THROW(mx::sum(x, -3), std::out_of_range);
  EXPECT_THROW(mx::argmax(x, 2), std::out_of_range);
  EXPECT_THROW(mx::swapaxes(x, 0, 2), std::out_of_range);
  EXPECT_THROW(mx::moveaxis(x, -3, 0), std::out_of_range);
  EXPECT_THROW(mx::diagonal(x, 0, 0, 2), std::out_of_range);
  // Duplicates, and mean's own check, stay invalid_argument as in MLX.
  EXPECT_THROW(mx::sum(x, {0, 0}), std::invalid_argument);
  EXPECT_THROW(mx::mean(x, 2), std::invalid_argument);
}

// ---------------------------------------------------------------- devices and streams

TEST(ApiCompat, StreamsDevicesAndContexts) {
  EXPECT_TRUE(mx::is_available(mx::Device::cpu));
  EXPECT_FALSE(mx::is_available(mx::Device::gpu));
  EXPECT_FALSE(mx::gpu::is_available());
  EXPECT_FALSE(mx::metal::is_available());
  EXPECT_FALSE(mx::cu::is_available());

  EXPECT_EQ(mx::default_device(), mx::Device(mx::Device::cpu));
  EXPECT_THROW(mx::default_stream(mx::Device::gpu), std::invalid_argument);
  // An op given the GPU device throws, as MLX's without a GPU; one given a GPU stream records it.
  EXPECT_THROW(mx::to_stream(mx::Device(mx::Device::gpu)), std::invalid_argument);
  EXPECT_THROW(mx::add(mx::array(1.0f), mx::array(1.0f), mx::Device::gpu), std::invalid_argument);
  EXPECT_EQ(mx::to_stream(mx::Stream(0, mx::Device::gpu)), mx::Stream(0, mx::Device::gpu));
  EXPECT_EQ(mx::add(mx::array(1.0f), mx::array(2.0f), mx::Stream(0, mx::Device::gpu)).item<float>(), 3.0f);
  mx::set_default_device(mx::Device::cpu);
  EXPECT_THROW(mx::set_default_device(mx::Device::gpu), std::invalid_argument);
  EXPECT_THROW(mx::new_stream(mx::Device::gpu), std::invalid_argument);

  auto s0 = mx::default_stream(mx::Device::cpu);
  EXPECT_EQ(s0.index, 0);
  auto s1 = mx::new_stream(mx::Device::cpu);
  auto s2 = mx::new_stream(mx::Device::cpu);
  EXPECT_NE(s1.index, 0);
  EXPECT_EQ(s2.index, s1.index + 1);
  EXPECT_EQ(mx::get_stream(s1.index), s1);
  EXPECT_THROW(mx::get_stream(1 << 20), std::out_of_range);
  EXPECT_TRUE(mx::stream_exists(s2));
  EXPECT_FALSE(mx::stream_exists(mx::Stream(1 << 20, mx::Device::cpu)));

  {
    mx::StreamContext ctx(s1);
    EXPECT_EQ(mx::default_stream(mx::Device::cpu), s1);
    auto y = mx::add(mx::array(1.0f), mx::array(2.0f));
    EXPECT_EQ(y.node()->stream, s1);
    EXPECT_EQ(y.item<float>(), 3.0f);
  }
  EXPECT_EQ(mx::default_stream(mx::Device::cpu), s0);
  EXPECT_THROW(mx::StreamContext(mx::StreamOrDevice{}), std::invalid_argument);

  mx::set_default_stream(s2);
  EXPECT_EQ(mx::to_stream({}), s2);
  mx::set_default_stream(s0);
  EXPECT_THROW(mx::set_default_stream(mx::Stream(1 << 20, mx::Device::cpu)), std::invalid_argument);

  mx::synchronize();
  mx::synchronize(s1);
  EXPECT_THROW(mx::synchronize(mx::Stream(1 << 20, mx::Device::cpu)), std::invalid_argument);

  std::ostringstream os;
  os << s1 << " " << mx::Device(mx::Device::gpu, 1);
  EXPECT_EQ(os.str(), "Stream(cpu:0, " + std::to_string(s1.index) + ") Device(gpu, 1)");
  EXPECT_EQ(mx::set_wired_limit(1 << 20), 0u);
}

TEST(ApiCompat, ImportRefusesACpuStreamThatDoesNotExist) {
  auto path = (std::filesystem::temp_directory_path() / "kiln_api_compat_stream.mlxfn").string();
  auto fun = [](const mx::Args& a) { return std::vector<mx::array>{mx::abs(a[0], mx::Stream(1000, mx::Device::cpu))}; };
  mx::export_function(path, fun, {mx::array({0, 1, 2})});
  try {
    mx::import_function(path);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("names CPU stream 1000 (device cpu:0), which does not exist"));
  }
  // A stream this process made imports.
  auto s = mx::new_stream(mx::Device::cpu);
  auto fun2 = [s](const mx::Args& a) { return std::vector<mx::array>{mx::abs(a[0], s)}; };
  mx::export_function(path, fun2, {mx::array({0, -1, 2})});
  auto f = mx::import_function(path);
  auto out = f({mx::array({-3, 1, -2})})[0];
  EXPECT_EQ(mx::sum(out).item<int>(), 6);
  std::filesystem::remove(path);
}

TEST(ApiCompat, IteratorAndUserBufferConstructors) {
  std::vector<int> v{1, 2, 3, 4};
  mx::array a(v.begin(), {2, 2});
  EXPECT_EQ(a.dtype(), mx::int32);
  EXPECT_EQ(a.shape(), (mx::Shape{2, 2}));
  EXPECT_EQ(a.data<int>()[3], 4);
  std::vector<float> f{1.5f, 2.5f};
  mx::array b(f.cbegin(), {2}, mx::float16);
  EXPECT_EQ(b.dtype(), mx::float16);
  EXPECT_EQ(mx::sum(b).item<float>(), 4.0f);

  std::vector<int> buffer(64, 2);
  int deleted = 0;
  {
    mx::array u(buffer.data(), mx::Shape{8, 8}, mx::int32, [&deleted](void* p) {
      EXPECT_NE(p, nullptr);
      ++deleted;
    });
    EXPECT_EQ(u.data<int>(), buffer.data());  // no copy
    auto s = mx::sum(mx::add(u, mx::array(1)));
    EXPECT_EQ(s.item<int>(), 64 * 3);
    auto view = mx::slice(u, {0, 0}, {2, 8});
    u = mx::array();
    mx::eval(view);
    EXPECT_EQ(deleted, 0);  // the view still uses the buffer
  }
  EXPECT_EQ(deleted, 1);
  EXPECT_THROW(mx::array(nullptr, mx::Shape{2}, mx::float32, [](void*) {}), std::invalid_argument);
}

TEST(ApiCompat, BoolVectorConstructors) {
  std::vector<bool> v{true, false, false, true};
  mx::array a(v.begin(), {2, 2});
  EXPECT_EQ(a.dtype(), mx::bool_);
  EXPECT_TRUE(mx::array_equal(a, mx::array({true, false, false, true}, {2, 2})).item<bool>());
  mx::array b(v, {4});
  EXPECT_EQ(b.dtype(), mx::bool_);
  EXPECT_EQ(mx::sum(b).item<int>(), 2);
}

TEST(ApiCompat, Fp8Codes) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // value -> E4M3 code: exact values, ties to even (1.0625 -> 1.0, 1.1875 -> 1.25, 1.5 x 2^-9 -> 2 x 2^-9),
  // subnormals, the largest normal, and saturation of everything at or past 448.
  const std::vector<std::pair<float, int>> known = {
      {0.0f, 0x00},      {-0.0f, 0x80},       {1.0f, 0x38},         {-1.0f, 0xB8},       {1.125f, 0x39},
      {1.0625f, 0x38},   {1.1875f, 0x3A},     {0x1p-9f, 0x01},      {0x1.8p-9f, 0x02},   {0x1p-6f, 0x08},
      {0x1.cp-7f, 0x07}, {448.0f, 0x7E},      {-448.0f, 0xFE},      {600.0f, 0x7E},      {-600.0f, 0xFE},
      {inf, 0x7E},       {-inf, 0xFE},        {nan, 0x7E},          {240.0f, 0x77},      {0.1f, 0x1D}};
  std::vector<float> in;
  for (auto& [v, c] : known) in.push_back(v);
  auto codes = mx::to_fp8(mx::array(in.data(), {static_cast<int>(in.size())}));
  ASSERT_EQ(codes.dtype(), mx::uint8);
  mx::eval(codes);
  for (size_t i = 0; i < known.size(); ++i) {
    EXPECT_EQ(static_cast<int>(codes.data<uint8_t>()[i]), known[i].second) << "value " << known[i].first;
  }
  // Every code decodes and encodes back to itself, except the NaN codes (which saturate).
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  for (mx::Dtype t : {mx::float32, mx::float16, mx::bfloat16}) {
    auto values = mx::from_fp8(mx::array(all.data(), {256}, mx::uint8), t);
    EXPECT_EQ(values.dtype(), t);
    auto back = mx::to_fp8(values);
    auto f = mx::astype(values, mx::float32);
    mx::eval(back, f);
    for (int i = 0; i < 256; ++i) {
      const bool is_nan = (i & 0x7f) == 0x7f;
      EXPECT_EQ(std::isnan(f.data<float>()[i]), is_nan) << "code " << i;
      EXPECT_EQ(static_cast<int>(back.data<uint8_t>()[i]), is_nan ? (i & 0x80) | 0x7e : i) << "code " << i;
    }
  }
  EXPECT_EQ(mx::from_fp8(mx::array({0x7E}, mx::uint8), mx::float32).item<float>(), 448.0f);
  EXPECT_EQ(mx::from_fp8(mx::array({0x01}, mx::uint8), mx::float32).item<float>(), 0x1p-9f);
  try {
    mx::to_fp8(mx::array({1, 2}));
    ADD_FAILURE() << "to_fp8 of int32 did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[to_fp8] Only real floating types are supported but x.dtype() == int32.");
  }
  try {
    mx::from_fp8(mx::array({1.0f}), mx::float32);
    ADD_FAILURE() << "from_fp8 of float32 did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[from_fp8] Input must have type uint8 but x.dtype() == float32.");
  }
  EXPECT_THROW(mx::from_fp8(mx::array({1}, mx::uint8), mx::int32), std::invalid_argument);
}

TEST(ApiCompat, EinsumPath) {
  // ab,bc,cd with a small b and c: b c first frees the most (20 + 30 - 6), then the rest.
  auto [path, info] = mx::einsum_path("ab,bc,cd", {mx::ones({10, 2}), mx::ones({2, 10}), mx::ones({10, 3})});
  EXPECT_EQ(path, (std::vector<std::vector<int>>{{1, 2}, {0, 1}}));
  EXPECT_EQ(info.rfind("  Complete contraction:  ab,bc,cd\n         Naive scaling:  4\n", 0), 0u) << info;
  // One or two operands: a single step over all of them.
  EXPECT_EQ(mx::einsum_path("ij,jk", {mx::ones({2, 3}), mx::ones({3, 4})}).first, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(mx::einsum_path("ii", {mx::ones({3, 3})}).first, (std::vector<std::vector<int>>{{0}}));
  // Only outer products left: they are taken anyway.
  EXPECT_EQ(mx::einsum_path("a,b,c", {mx::ones({2}), mx::ones({3}), mx::ones({4})}).first.size(), 2u);
  try {
    mx::einsum_path("ij,jk", {mx::ones({2, 3})});
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[einsum_path] Number of operands, 1, does not match number of input subscripts, 2");
  }
  EXPECT_THROW(mx::einsum_path("i", {}), std::invalid_argument);
  // einsum's own errors keep their tag after einsum_path failed.
  try {
    mx::einsum("ij,jk", {mx::ones({2, 3})});
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("[einsum] "));
  }
}

TEST(ApiCompat, PrintGraph) {
  mx::array x = mx::array({1.0f, 2.0f});
  mx::array y = mx::exp(x);
  mx::array z = mx::add(y, x);
  std::ostringstream os;
  mx::print_graph(os, z);
  EXPECT_EQ(os.str(), "Inputs: A [(2), float32]\nOutputs: B [(2), float32]\nExp A [(2), float32] -> C [(2), float32]\n"
                      "Add C [(2), float32], A [(2), float32] -> B [(2), float32]\n");
  std::ostringstream named;
  mx::print_graph(named, {z}, {{x, "x"}});
  EXPECT_EQ(named.str().substr(0, 20), "Inputs: x [(2), floa");
  std::ostringstream dot;
  mx::export_to_dot(dot, z);
  EXPECT_EQ(dot.str().rfind("digraph {", 0), 0u);
}
