// Quantization (every mode, bit width and group size) and the quantized matmuls. Packed codes,
// scales, biases and dequantized values are compared bit for bit with MLX 0.30.1 (FNV-1a hashes of
// the bytes MLX produced for the same deterministic inputs, generated with the installed MLX); the
// matmuls against a scalar dequantize-and-multiply reference written here, and MLX's golden files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <kiln/export.h>
#include <kiln/kiln.h>
#include <kiln/ops/quantized.h>

#include <cstdio>
#include <unistd.h>

#include "unit/fast_test_util.h"

namespace {

namespace mx = kiln;
using namespace fast_test;
using ::testing::HasSubstr;

uint64_t fnv(const mx::array& a0) {
  mx::array a = a0;
  a.eval();
  EXPECT_TRUE(a.row_contiguous());
  const auto* p = static_cast<const uint8_t*>(a.raw_data());
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < a.nbytes(); ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// (dtype, group size, bits, seed, hash(w_q), hash(scales), hash(biases), hash(dequantize(...)))
struct AffineCase {
  mx::Dtype dtype;
  int gs, bits;
  uint32_t seed;
  uint64_t wq, scales, biases, deq;
};
// Inputs: rand_array({3, 256}, dtype, seed, -3, 2). Generated with mx.quantize / mx.dequantize.
const AffineCase kAffine[] = {
  {mx::float32, 32, 2, 1u, 0x5c93a788707a3ed2ull, 0x03bb89257eb12162ull, 0x43db5d93e7b5d1e2ull, 0x139060dc496cbccbull},
  {mx::float32, 32, 3, 2u, 0x3be3dd96621b5379ull, 0xbadd9dc71903c905ull, 0x8e85ba7a16be586aull, 0xf7eee186ba4f82a8ull},
  {mx::float32, 32, 4, 3u, 0x90453bf270dd3e30ull, 0x43eaae04e5648a97ull, 0x7d400729373c5ec2ull, 0x21736d939e242d50ull},
  {mx::float32, 32, 5, 4u, 0x36b00e9ae88bb66aull, 0x4cd8351d1e8934e6ull, 0x779779399a8262ebull, 0x6dd1a3d01d82d31dull},
  {mx::float32, 32, 6, 5u, 0xc9d51a86d6fc0928ull, 0x67439ce30bc0731full, 0x9e7fee4dd66322bbull, 0xc1177ce3ab6a734cull},
  {mx::float32, 32, 8, 6u, 0xe8569dfe6cc91690ull, 0x24f91a04a1df734bull, 0x288911e8dad40e6eull, 0x42a3dee95f896c8dull},
  {mx::float32, 64, 2, 7u, 0x13a8f58037e6bf33ull, 0x9e5ddd02bad2272full, 0x96f1e65f4c01b28bull, 0x08583b245943e36bull},
  {mx::float32, 64, 3, 8u, 0x59014cf1dffcfb6dull, 0x06bc72c9eadf64b7ull, 0xd848440be1a1b99bull, 0xdf4eaccd82e4d82aull},
  {mx::float32, 64, 4, 9u, 0x22dfd4f18d460668ull, 0xf6c345b174027523ull, 0x2e13b1cc187c4354ull, 0xc03113ba3eb6adc6ull},
  {mx::float32, 64, 5, 10u, 0x946fbfd126a1d3d9ull, 0xc0b656cc00fcf9fdull, 0xca86d1f03b1fe8e6ull, 0x95500ac6627f5956ull},
  {mx::float32, 64, 6, 11u, 0xdce74678ccf09fc5ull, 0xdb531cbb25d6ac72ull, 0x70dda5c21c5394acull, 0x6fb1a22abcf5a961ull},
  {mx::float32, 64, 8, 12u, 0xc8b6a6663307fc1aull, 0xa6e8f02f1d43463aull, 0xa39a2b964ff3b0ceull, 0x8e120299369fa8a5ull},
  {mx::float32, 128, 2, 13u, 0x61d0bea48ff2cc57ull, 0x04d6c3fd3a5edcb9ull, 0x04a6adf1c0cdc6b1ull, 0xccd731234731d5c3ull},
  {mx::float32, 128, 3, 14u, 0x4413c133d472b02full, 0x3c3ef712883da6fcull, 0x8a314e3c9303b494ull, 0x0e83bd436a5d1f39ull},
  {mx::float32, 128, 4, 15u, 0x9b64155dbd6a07b7ull, 0xbeac0ecea0d42c97ull, 0xab4997c6e3c2af8full, 0xb541a7f5b1c40846ull},
  {mx::float32, 128, 5, 16u, 0xa6f3b2225d9b0962ull, 0x25c68f2abb20cc41ull, 0x52dd588883b49998ull, 0x9774f31055545e65ull},
  {mx::float32, 128, 6, 17u, 0x58301a3ce1ed671aull, 0x0a1635205d4128a3ull, 0x7e59efd39c41aa24ull, 0xf713ed7083cdd2b7ull},
  {mx::float32, 128, 8, 18u, 0x6546b264a8664affull, 0x89a0761539708195ull, 0x44c49d1ba8f69b52ull, 0x5ae9a50e8b1ce2d0ull},
  {mx::float16, 32, 2, 19u, 0xedd03a85fdf98394ull, 0xfd0d67e562f57c99ull, 0x0e918c27a05103e9ull, 0x051a7b3017cd2823ull},
  {mx::float16, 32, 3, 20u, 0xbb274b4d6e9c314cull, 0x37764d644d8d9804ull, 0x8c0d39e1dc6af7c2ull, 0xc2967c47f72aebb8ull},
  {mx::float16, 32, 4, 21u, 0x94978924e9f4feedull, 0xa7cb2b2fbf75af88ull, 0x894b3d1976e56470ull, 0x6d48d94723dcd804ull},
  {mx::float16, 32, 5, 22u, 0x8406343e8df968ecull, 0x8f5d5fc356ca4f4bull, 0xa6ef8be245a2bf69ull, 0xf9750833710c83c4ull},
  {mx::float16, 32, 6, 23u, 0xfbcb3959c3ca4e16ull, 0xea765f5ad36b842aull, 0xfc2bfdecc7bff1b7ull, 0xdb3f0d2ab6c346d9ull},
  {mx::float16, 32, 8, 24u, 0xa802bac2bc1936b8ull, 0x58a109a3aaf17770ull, 0x0356b98e7ae7951eull, 0x21f30de32ff20586ull},
  {mx::float16, 64, 2, 25u, 0xde7e4770a12da5c5ull, 0x62f40739fed68505ull, 0x2cdb95b77dcc01cdull, 0xa57deaf699bec6bcull},
  {mx::float16, 64, 3, 26u, 0x0e61360a785ac06dull, 0x643e4bad3539df7full, 0xa5ba6f0283b1b56full, 0xa00929237060729full},
  {mx::float16, 64, 4, 27u, 0x0bdebc6660bc9eabull, 0xdc6296819c33217cull, 0x6401305accbe6422ull, 0xe7a916f59f4fa226ull},
  {mx::float16, 64, 5, 28u, 0x8d1aed752fe44c30ull, 0x59c2959e60fd8f1cull, 0xb37914acbb6b1081ull, 0xff7834ada2312bfdull},
  {mx::float16, 64, 6, 29u, 0xb78613162602cc68ull, 0x8748685bee0a98d3ull, 0x048a157d013d1c78ull, 0xee6bc2bdc0fafaeeull},
  {mx::float16, 64, 8, 30u, 0x4bfbd86a500fe150ull, 0xb21bcba33a77a0c1ull, 0xc8086ae5decbc181ull, 0x3f13aea6663c2672ull},
  {mx::float16, 128, 2, 31u, 0x433613a4689fe127ull, 0x11d369cc2f59acceull, 0xbd1a433c9b636016ull, 0x1ece70235afd3907ull},
  {mx::float16, 128, 3, 32u, 0x464b8b7d0f8d5582ull, 0x1d3ef658d9badb4dull, 0x9ddd06b76496145dull, 0x2287defd3528a0a7ull},
  {mx::float16, 128, 4, 33u, 0x3632b6fc6d942a1eull, 0x419bab82e983606full, 0x1b22912f4e93c81aull, 0x77c2f8693a5b7522ull},
  {mx::float16, 128, 5, 34u, 0x29b3317b059866e7ull, 0x2c456826f593722eull, 0xa89e8c98edeb5c58ull, 0x0578d3ac7966dbffull},
  {mx::float16, 128, 6, 35u, 0x32efd173f7dd11feull, 0x0d29d106376ac1fcull, 0x9633760721436c72ull, 0x8d88ae3995195035ull},
  {mx::float16, 128, 8, 36u, 0xb2b18b9b41eda3d8ull, 0x82a555cef682b106ull, 0x1d25bc1415176790ull, 0xeba86944a7cba7e6ull},
  {mx::bfloat16, 32, 2, 37u, 0xd2a3aa69f749ecc8ull, 0x8f90e8cd489e8271ull, 0xb439d5b3dc0cac35ull, 0x895fa5849a83e2b5ull},
  {mx::bfloat16, 32, 3, 38u, 0x169aec4c760e3816ull, 0xcce06a9b43140942ull, 0x89a0230ab594fcf2ull, 0x8eeb2b9f60630e29ull},
  {mx::bfloat16, 32, 4, 39u, 0xc56e22e7d14d67b1ull, 0xbf4da7cc70710590ull, 0x0e7e2d6581e49ba9ull, 0x952ded29b4a12911ull},
  {mx::bfloat16, 32, 5, 40u, 0x9b5f82d738c17e76ull, 0xe44b73dd800c2bdeull, 0x2fb50f71484fd2a1ull, 0xbb9b611f6b97e162ull},
  {mx::bfloat16, 32, 6, 41u, 0xbe9dfe4e38162024ull, 0xd39dde79676e5731ull, 0x477ec1675a8bda61ull, 0x9be3f43a5a72009bull},
  {mx::bfloat16, 32, 8, 42u, 0x43320b5e03a66c76ull, 0x6d2cfe2eb34ab11cull, 0x9247e9a8485fa8b3ull, 0xe67640c6d7e3c25cull},
  {mx::bfloat16, 64, 2, 43u, 0x25df97bc7ad91a04ull, 0x31329186a73e6090ull, 0xb007181c8af35328ull, 0xa457f778e1782d50ull},
  {mx::bfloat16, 64, 3, 44u, 0x24889eaa79b919a9ull, 0x5c6de8fab7e2b3e2ull, 0xe7c9b1d65369b75aull, 0x0cf651f1ade17ac4ull},
  {mx::bfloat16, 64, 4, 45u, 0x87920dc9b9d3c7d9ull, 0x178ca5bd8e0f13cbull, 0x18872af97a70494bull, 0xc4b9b5239bc1fbf0ull},
  {mx::bfloat16, 64, 5, 46u, 0x40db1ba673b84debull, 0xd29d023c6261f365ull, 0x052dda9ed9878addull, 0x8d5d674b3f24725bull},
  {mx::bfloat16, 64, 6, 47u, 0x154fc8b3ebb7299full, 0xeb34ee90ab0c9a65ull, 0x795efb9542a32715ull, 0x55378d88b362ef20ull},
  {mx::bfloat16, 64, 8, 48u, 0xee46d9ece43fed29ull, 0xd71dc432259d454eull, 0xf4d96b6f685d13a4ull, 0x65b685b3289887b3ull},
  {mx::bfloat16, 128, 2, 49u, 0xb97eabe75d2071a6ull, 0x7041f5455964b4c7ull, 0xd10ab5fc1355e593ull, 0xba62412614d3f55bull},
  {mx::bfloat16, 128, 3, 50u, 0x8483a261a1aa3dccull, 0x2ee49766ae58b65dull, 0xe240a06cd3f228bdull, 0x42d9a403cfe57fa7ull},
  {mx::bfloat16, 128, 4, 51u, 0x030220bab4c5c8c7ull, 0x65394cd9baaae800ull, 0x0b7b7d216821b2daull, 0xfcd27e2da041a6efull},
  {mx::bfloat16, 128, 5, 52u, 0x2a819e94993a2867ull, 0x2eab5cdfe0fce8ffull, 0x369fa07d703db5b7ull, 0xa47bdf587bf3437full},
  {mx::bfloat16, 128, 6, 53u, 0x2c13c2151f54b11aull, 0x218a86e0190b1a4dull, 0x3bd6bdaf3875143eull, 0xeddbfb9d6c8e3daaull},
  {mx::bfloat16, 128, 8, 54u, 0xeaa48d9ab0d3ea6bull, 0xf04655ca4f10d311ull, 0x93ebd35a0fdb270full, 0x3cd9bf7df5bb468cull},
};

TEST(QuantizeAffine, BitExactWithMLXEveryBitsGroupAndDtype) {
  for (const auto& c : kAffine) {
    mx::array w = rand_array({3, 256}, c.dtype, c.seed, -3.0f, 2.0f);
    auto q = mx::quantize(w, c.gs, c.bits);
    ASSERT_EQ(q.size(), 3u);
    const std::string what = mx::dtype_name(c.dtype) + " gs=" + std::to_string(c.gs) + " bits=" + std::to_string(c.bits);
    EXPECT_EQ(q[0].shape(), mx::Shape({3, 256 * c.bits / 32})) << what;
    EXPECT_EQ(q[0].dtype(), mx::uint32);
    EXPECT_EQ(q[1].shape(), mx::Shape({3, 256 / c.gs})) << what;
    EXPECT_EQ(q[1].dtype(), c.dtype);
    EXPECT_EQ(fnv(q[0]), c.wq) << what;
    EXPECT_EQ(fnv(q[1]), c.scales) << what;
    EXPECT_EQ(fnv(q[2]), c.biases) << what;
    auto d = mx::dequantize(q[0], q[1], q[2], c.gs, c.bits);
    EXPECT_EQ(d.dtype(), c.dtype);
    EXPECT_EQ(fnv(d), c.deq) << what;
  }
}

TEST(QuantizeAffine, ExplicitValuesNonContiguousAndFloat64) {
  std::vector<float> v;
  for (int i = 0; i < 32; ++i) v.push_back(i * 0.25f - 3.9f);
  auto q = mx::quantize(mx::array(v, {1, 32}), 32, 4);
  auto codes = vals(q[0]);
  EXPECT_EQ(codes, (std::vector<double>{0x43322110u, 0x87766554u, 0xcbbaa998u, 0xfffeeddcu}));
  EXPECT_EQ(q[1].item<float>(), 0.48750001192092896f);
  EXPECT_EQ(q[2].item<float>(), -3.9000000953674316f);
  // A transposed (strided) weight quantizes like its contiguous copy.
  mx::array base = rand_array({64, 6}, mx::float32, 7);
  mx::array wt = mx::transpose(base);
  mx::array wc(vals(wt), {6, 64}, mx::float64);
  auto a = mx::quantize(wt, 64, 3), b = mx::quantize(mx::astype(wc, mx::float32), 64, 3);
  EXPECT_EQ(fnv(a[0]), fnv(b[0]));
  EXPECT_EQ(fnv(a[1]), fnv(b[1]));
  // float64 (which MLX cannot quantize) follows MLX's algorithm in double: a scalar re-implementation.
  auto q64 = mx::quantize(wc, 32, 5);
  EXPECT_EQ(q64[1].dtype(), mx::float64);
  auto orig = vals(wc), codes64 = vals(q64[0]), s64 = vals(q64[1]), b64 = vals(q64[2]);
  for (size_t g = 0; g < orig.size() / 32; ++g) {
    double mn = INFINITY, mxv = -INFINITY;
    for (int j = 0; j < 32; ++j) mn = std::min(mn, orig[g * 32 + j]), mxv = std::max(mxv, orig[g * 32 + j]);
    const bool neg_edge = std::abs(mn) > std::abs(mxv);
    double scale = std::max((mxv - mn) / 31.0, double(1e-7f)) * (neg_edge ? 1 : -1);
    const double edge = neg_edge ? mn : mxv, q0 = std::rint(edge / scale);
    double bias = 0;
    if (q0 != 0) scale = edge / q0, bias = edge;
    EXPECT_EQ(s64[g], scale) << g;
    EXPECT_EQ(b64[g], bias) << g;
    for (int j = 0; j < 32; ++j) {
      const double want = std::clamp(std::rint((orig[g * 32 + j] - bias) / scale), 0.0, 31.0);
      const size_t bit = (g * 32 + j) * 5;  // 5-bit codes packed as one little-endian bit stream per row
      uint64_t lo = static_cast<uint64_t>(codes64[bit / 32]);
      uint64_t hi = bit / 32 + 1 < codes64.size() ? static_cast<uint64_t>(codes64[bit / 32 + 1]) : 0;
      const double got = static_cast<double>((((hi << 32) | lo) >> (bit % 32)) & 31u);
      EXPECT_EQ(got, want) << g << "," << j;
    }
  }
  auto d64 = vals(mx::dequantize(q64[0], q64[1], q64[2], 32, 5));
  // dequantize with an explicit output dtype.
  auto d16 = mx::dequantize(q64[0], q64[1], q64[2], 32, 5, "affine", mx::float16);
  EXPECT_EQ(d16.dtype(), mx::float16);
  expect_close(d16, d64, 1e-3, 1e-3, "dequantize to float16");
}

// (dtype, mode, hash(w_q), hash(scales), hash(dequantize(..., dtype)), hash(dequantize(...)) in bfloat16)
struct FpCase {
  mx::Dtype dtype;
  const char* mode;
  uint64_t wq, scales, deq, deq_bf16;
};
const FpCase kFp[] = {
  {mx::float32, "mxfp4", 0x49b7d62cc1eb37f3ull, 0x273c698a87f5cc57ull, 0xc42cf740091040caull, 0x0aef0d57419966f2ull},
  {mx::float32, "mxfp8", 0xf1ba6c0da30b74fbull, 0x501f9329d9a881d7ull, 0x96763669376e91acull, 0xbee2d9185b52aedcull},
  {mx::float32, "nvfp4", 0xbf4f174040da2b90ull, 0x80b2da0641dac9a3ull, 0xb95fe665131b9aadull, 0x6f0e13f9a9a74405ull},
  {mx::float16, "mxfp4", 0x49b7d62cc1eb37f3ull, 0x273c698a87f5cc57ull, 0xa80f67efbd1e28d7ull, 0x0aef0d57419966f2ull},
  {mx::float16, "mxfp8", 0xf1ba6c0da30b74fbull, 0x501f9329d9a881d7ull, 0x0f19f3747b885497ull, 0xbee2d9185b52aedcull},
  {mx::float16, "nvfp4", 0xbf4f174040da2b90ull, 0x80b2da0641dac9a3ull, 0xcfdab34bcf6f316cull, 0x6f0e13f9a9a74405ull},
  {mx::bfloat16, "mxfp4", 0x49b7d62cc1eb37f3ull, 0x273c698a87f5cc57ull, 0x0aef0d57419966f2ull, 0x0aef0d57419966f2ull},
  {mx::bfloat16, "mxfp8", 0xb96cb1211fc01362ull, 0x501f9329d9a881d7ull, 0x89d786f1ae68a20cull, 0x89d786f1ae68a20cull},
  {mx::bfloat16, "nvfp4", 0x68433671ba3f1540ull, 0x80b2da0641dac9a3ull, 0x0d5b8e4cb5260a30ull, 0x0d5b8e4cb5260a30ull},
};

// Five rows of 64 values with very different ranges, one of them all zeros.
mx::array fp_input(mx::Dtype t) {
  const float lo[] = {-3.0f, -1500.0f, -0.004f, 0.0f, -0.5f}, hi[] = {2.0f, 900.0f, 0.003f, 0.0f, 7.0f};
  std::vector<float> all;
  for (int r = 0; r < 5; ++r) {
    auto row = randu(64, 100 + r, lo[r], hi[r]);
    all.insert(all.end(), row.begin(), row.end());
  }
  mx::array w = mx::astype(mx::array(all, {5, 64}), t);
  w.eval();
  return w;
}

TEST(QuantizeFp, BitExactWithMLXEveryModeAndDtype) {
  for (const auto& c : kFp) {
    const std::string what = mx::dtype_name(c.dtype) + " " + c.mode;
    auto q = mx::quantize(fp_input(c.dtype), std::nullopt, std::nullopt, c.mode);
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q[1].dtype(), mx::uint8);
    EXPECT_EQ(fnv(q[0]), c.wq) << what;
    EXPECT_EQ(fnv(q[1]), c.scales) << what;
    EXPECT_EQ(fnv(mx::dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, c.mode, c.dtype)), c.deq)
        << what;
    auto d = mx::dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, c.mode);
    EXPECT_EQ(d.dtype(), mx::bfloat16);
    EXPECT_EQ(fnv(d), c.deq_bf16) << what;
  }
}

TEST(QuantizeFp, TiesZerosAndCodesAsMLX) {
  std::vector<float> v = {6,   -6,  0.25f, -0.25f, 0.75f, -0.75f, 1.25f, -1.25f, 1.75f, -1.75f, 2.5f,
                          -2.5f, 3.5f, -3.5f, 5,     -5,     0.1f,  -0.1f, 0,     -0.0f, 4.4f,  2.25f,
                          -2.75f, 1.0f, 0.5f, -0.5f, 3,      -3,     4,     -4,    5.5f,  -5.9f};
  mx::array w(v, {1, 32});
  auto m4 = mx::quantize(w, 32, 4, "mxfp4");
  EXPECT_EQ(vals(m4[0]), (std::vector<double>{0xa29100f7u, 0xe6d5c4b3u, 0x2d460000u, 0xf7e6d591u}));
  EXPECT_EQ(vals(m4[1]), (std::vector<double>{127}));
  auto n4 = mx::quantize(w, 16, 4, "nvfp4");
  EXPECT_EQ(vals(n4[0]), vals(m4[0]));
  EXPECT_EQ(vals(n4[1]), (std::vector<double>{56, 56}));
  auto m8 = mx::quantize(w, 32, 8, "mxfp8");
  EXPECT_EQ(vals(m8[0]), (std::vector<double>{0xd858fc7cu, 0xea6ae464u, 0xf272ee6eu, 0xfa7af676u, 0x8000cd4du,
                                              0x68f37179u, 0xf474e060u, 0xfc7bf878u}));
  EXPECT_EQ(vals(m8[1]), (std::vector<double>{121}));
  auto d8 = vals(mx::dequantize(m8[0], m8[1], std::nullopt, 32, 8, "mxfp8", mx::float32));
  EXPECT_EQ(d8[16], 0.1015625);
  EXPECT_EQ(d8[20], 4.5);
  // All-zero, infinite and tiny groups (values from MLX).
  auto z = mx::quantize(mx::zeros({1, 32}), 32, 4, "mxfp4");
  EXPECT_EQ(vals(z[1]), (std::vector<double>{127}));
  auto inf4 = mx::quantize(mx::full({1, 32}, INFINITY), 32, 4, "mxfp4");
  EXPECT_EQ(vals(inf4[0]), (std::vector<double>(4, 0)));
  EXPECT_EQ(vals(inf4[1]), (std::vector<double>{128}));
  auto inf8 = mx::quantize(mx::full({1, 32}, INFINITY), 32, 8, "mxfp8");
  EXPECT_EQ(vals(inf8[0]), (std::vector<double>(8, 2122219134.0)));
  auto tiny = mx::quantize(mx::full({1, 32}, 1e-30f), 32, 4, "mxfp4");
  EXPECT_EQ(vals(tiny[0]), (std::vector<double>(4, 2004318071.0)));
  EXPECT_EQ(vals(tiny[1]), (std::vector<double>{25}));
  auto nz = mx::quantize(mx::zeros({1, 32}), 16, 4, "nvfp4");
  EXPECT_EQ(vals(nz[1]), (std::vector<double>{0, 0}));
  auto ninf = mx::quantize(mx::full({1, 32}, INFINITY), 16, 4, "nvfp4");
  EXPECT_EQ(vals(ninf[1]), (std::vector<double>{126, 126}));
  auto az = mx::quantize(mx::zeros({1, 32}), 32, 4);
  EXPECT_EQ(az[1].item<float>(), -1e-7f);
  EXPECT_EQ(az[2].item<float>(), 0.0f);
}

TEST(QuantizeErrors, MessagesAsMLX) {
  mx::array w = rand_array({4, 64}, mx::float32, 1);
  EXPECT_THAT(error_of([&] { mx::quantize(w, 16, 4); }),
              HasSubstr("[quantize] The requested group size 16 is not supported. The supported group sizes are 32, 64, and 128."));
  EXPECT_THAT(error_of([&] { mx::quantize(w, 64, 7); }),
              HasSubstr("[quantize] The requested number of bits 7 is not supported. The supported bits are 2, 3, 4, 5, 6 and 8."));
  EXPECT_THAT(error_of([&] { mx::quantize(w, 16, 4, "mxfp4"); }),
              HasSubstr("[quantize] mxfp4 quantization requires group size 32 but got 16."));
  EXPECT_THAT(error_of([&] { mx::quantize(w, 32, 8, "mxfp4"); }),
              HasSubstr("[quantize] mxfp4 quantization requires bits to be 4 but got 8."));
  EXPECT_THAT(error_of([&] { mx::quantize(w, 64, 4, "foo"); }), HasSubstr("[quantize] Invalid quantization mode 'foo'."));
  EXPECT_THAT(error_of([&] { mx::quantize(mx::zeros({64}), 64, 4); }),
              HasSubstr("[quantize] The matrix to be quantized must have at least 2 dimension but it has only 1."));
  EXPECT_THAT(error_of([&] { mx::quantize(mx::zeros({4, 48}), 32, 4); }),
              HasSubstr("[quantize] The last dimension of the matrix needs to be divisible by the quantization group size 32. However the provided  matrix has shape (4,48)"));
  EXPECT_THAT(error_of([&] { mx::quantize(mx::astype(w, mx::int32), 64, 4); }),
              HasSubstr("[quantize] Only real floating types can be quantized but w has type int32."));
  auto q = mx::quantize(w, 64, 4);
  EXPECT_THAT(error_of([&] { mx::dequantize(q[0], q[1], q[2], 32, 4); }),
              HasSubstr("[dequantize] Shape of scales and biases does not match the matrix given the quantization parameters. Provided matrix of shape (4,8) and scales/biases of shape (4,1) with group_size=32 and bits=4."));
  EXPECT_THAT(error_of([&] { mx::dequantize(q[0], q[1], std::nullopt, 64, 4); }),
              HasSubstr("[dequantize] Biases must be provided for affine quantization."));
  EXPECT_THAT(error_of([&] { mx::dequantize(q[0], q[1], q[2], 64, 4, "mxfp4"); }),
              HasSubstr("[dequantize] Biases must be null for quantization mode 'mxfp4'."));
  EXPECT_THAT(error_of([&] { mx::dequantize(mx::astype(q[0], mx::int32), q[1], q[2], 64, 4); }),
              HasSubstr("[dequantize] The matrix should be given as a uint32"));
  EXPECT_THROW(mx::quantize(w, 16, 4), std::invalid_argument);
}

// ---------------------------------------------------------------- matmuls

// Independent dequantization: codes read bit by bit from the packed stream, values in double.
double e4m3(int c) {
  const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if ((c & 127) == 127) return NAN;
  const double v = e == 0 ? m * std::pow(2.0, -9) : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -v : v;
}

std::vector<double> ref_dequant(const mx::array& wq, const mx::array& sc, const std::optional<mx::array>& bi,
                                const std::string& mode, int gs, int bits) {
  auto w = vals(wq), s = vals(sc);
  std::vector<double> b = bi ? vals(*bi) : std::vector<double>{};
  const size_t words = wq.shape().back(), rows = w.size() / words, K = words * 32 / bits;
  std::vector<double> out(rows * K);
  const double fp4[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < K; ++j) {
      uint32_t code = 0;
      for (int t = 0; t < bits; ++t) {
        const size_t bit = j * bits + t;
        const uint32_t word = static_cast<uint32_t>(w[r * words + bit / 32]);
        code |= ((word >> (bit % 32)) & 1u) << t;
      }
      const size_t g = r * (K / gs) + j / gs;
      double v;
      if (mode == "affine") v = s[g] * code + b[g];
      else if (mode == "nvfp4") v = fp4[code] * e4m3(static_cast<int>(s[g]));
      else v = (bits == 8 ? e4m3(code) : fp4[code]) * std::pow(2.0, s[g] - 127);
      out[r * K + j] = v;
    }
  }
  return out;
}

// out (rows × N) = x (rows × K) · W, W given as dequantized (N × K) when transposed, else (K × N).
void expect_qmm(const mx::array& got, const std::vector<double>& x, const std::vector<double>& w, size_t K, size_t N,
                bool transpose, double rtol, const std::string& what) {
  auto g = vals(got);
  const size_t rows = x.size() / K;
  ASSERT_EQ(g.size(), rows * N) << what;
  size_t bad = 0;
  for (size_t m = 0; m < rows; ++m)
    for (size_t n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (size_t k = 0; k < K; ++k) {
        const double wv = transpose ? w[n * K + k] : w[k * N + n];
        acc += x[m * K + k] * wv;
        mag += std::abs(x[m * K + k] * wv);
      }
      if (!(std::abs(g[m * N + n] - acc) <= rtol * mag + 1e-6)) {
        if (++bad <= 3) ADD_FAILURE() << what << " (" << m << "," << n << "): got " << g[m * N + n] << " want " << acc;
      }
    }
  EXPECT_EQ(bad, 0u) << what;
}

struct ModeCfg {
  const char* mode;
  int gs, bits;
};
const ModeCfg kModes[] = {{"affine", 32, 2}, {"affine", 64, 3}, {"affine", 128, 4}, {"affine", 32, 5},
                          {"affine", 64, 6}, {"affine", 32, 8}, {"mxfp4", 32, 4},   {"mxfp8", 32, 8},
                          {"nvfp4", 16, 4}};

TEST(QuantizedMatmul, EveryModeBothLayoutsAllDtypes) {
  for (mx::Dtype t : {mx::float32, mx::float16, mx::bfloat16, mx::float64}) {
    const double rtol = t == mx::float32 ? 1e-5 : t == mx::float64 ? 1e-10 : 2e-2;
    for (const auto& c : kModes) {
      const bool affine = std::string(c.mode) == "affine";
      for (bool transpose : {true, false}) {
        for (int M : {1, 3, 20}) {  // decoding rows and the wide-tile path
          const int K = transpose ? 256 : 128, N = transpose ? 40 : 256;
          mx::array wf = rand_array(transpose ? mx::Shape{N, K} : mx::Shape{K, N}, mx::float32, 11);
          auto q = mx::quantize(wf, c.gs, c.bits, c.mode);
          std::optional<mx::array> bias;
          if (affine) bias = q[2];
          mx::array sc = affine ? mx::astype(q[1], t) : q[1];
          if (affine) bias = mx::astype(*bias, t);
          mx::array x = rand_array({M, K}, t, 12);
          auto y = mx::quantized_matmul(x, q[0], sc, bias, transpose, c.gs, c.bits, c.mode);
          EXPECT_EQ(y.dtype(), t);
          EXPECT_EQ(y.shape(), mx::Shape({M, N}));
          const std::string what = std::string(c.mode) + " bits=" + std::to_string(c.bits) + " " + mx::dtype_name(t) +
                                   (transpose ? " T" : " N") + " M=" + std::to_string(M);
          expect_qmm(y, vals(x), ref_dequant(q[0], sc, bias, c.mode, c.gs, c.bits), K, N, transpose, rtol, what);
        }
      }
    }
  }
}

TEST(QuantizedMatmul, BatchingVectorsAndStrides) {
  mx::array wf = rand_array({3, 16, 64}, mx::float32, 20);  // a batch of three weight matrices
  auto q = mx::quantize(wf, 32, 4);
  // x (2, 3, 5, 64) against w (3, 16, 64): batch axes broadcast.
  mx::array x = rand_array({2, 1, 5, 64}, mx::float32, 21);
  auto y = mx::quantized_matmul(x, q[0], q[1], q[2], true, 32, 4);
  EXPECT_EQ(y.shape(), mx::Shape({2, 3, 5, 16}));
  auto xv = vals(x), wd = ref_dequant(q[0], q[1], q[2], "affine", 32, 4), yv = vals(y);
  for (int a = 0; a < 2; ++a)
    for (int e = 0; e < 3; ++e) {
      std::vector<double> xs(xv.begin() + a * 320, xv.begin() + (a + 1) * 320);
      std::vector<double> ws(wd.begin() + e * 1024, wd.begin() + (e + 1) * 1024);
      mx::array ya = mx::slice(y, {a, e, 0, 0}, {a + 1, e + 1, 5, 16});
      expect_qmm(ya, xs, ws, 64, 16, true, 1e-5, "batch " + std::to_string(a) + "," + std::to_string(e));
    }
  // A 1-D x, and a 3-D x against a 2-D w (rows fold together); x transposed (strided).
  mx::array w2 = rand_array({24, 64}, mx::float32, 22);
  auto q2 = mx::quantize(w2, 64, 8);
  auto wd2 = ref_dequant(q2[0], q2[1], q2[2], "affine", 64, 8);
  mx::array x1 = rand_array({64}, mx::float32, 23);
  auto y1 = mx::quantized_matmul(x1, q2[0], q2[1], q2[2], true, 64, 8);
  EXPECT_EQ(y1.shape(), mx::Shape({24}));
  expect_qmm(y1, vals(x1), wd2, 64, 24, true, 1e-5, "1-D x");
  mx::array xt = mx::transpose(rand_array({64, 3, 2}, mx::float32, 24), {2, 1, 0});
  auto y3 = mx::quantized_matmul(xt, q2[0], q2[1], q2[2], true, 64, 8);
  EXPECT_EQ(y3.shape(), mx::Shape({2, 3, 24}));
  expect_qmm(y3, vals(xt), wd2, 64, 24, true, 1e-5, "strided 3-D x");
  // float16 x with float32 scales promotes to float32 (affine).
  auto yp = mx::quantized_matmul(mx::astype(x1, mx::float16), q2[0], q2[1], q2[2], true, 64, 8);
  EXPECT_EQ(yp.dtype(), mx::float32);
}

TEST(QuantizedMatmul, GoldenMLX) {
  auto in = [](const std::string& c, int i) { return read_npy(golden(c + "/call0_arg" + std::to_string(i) + ".npy")); };
  auto out = [](const std::string& c, int i) { return vals(read_npy(golden(c + "/call0_out" + std::to_string(i) + ".npy"))); };
  {
    auto q = mx::quantize(in("quantize_8bit_notrans", 1), 32, 8);
    expect_close(mx::quantized_matmul(in("quantize_8bit_notrans", 0), q[0], q[1], q[2], false, 32, 8),
                 out("quantize_8bit_notrans", 0), 1e-3, 1e-3, "quantize_8bit_notrans");
  }
  {
    auto q = mx::quantize(in("quantize_qmm", 1), 64, 4);
    expect_close(mx::quantized_matmul(in("quantize_qmm", 0), q[0], q[1], q[2], true, 64, 4), out("quantize_qmm", 0),
                 1e-3, 1e-3, "quantize_qmm");
  }
  std::string c = "quantized_matmul_mxfp4";
  expect_close(mx::quantized_matmul(in(c, 0), in(c, 1), in(c, 2), std::nullopt, true, 32, 4, "mxfp4"), out(c, 0), 1e-3,
               1e-3, c);
  // MLX 0.30.1's CPU kernel runs every non-affine mode as mxfp4, so its mxfp8 and nvfp4 golden outputs are
  // not x @ dequantize(w).T; kiln computes the real product (as MLX's GPU kernels do).
  for (auto [mode, gs, bits] : {std::tuple{"mxfp8", 32, 8}, std::tuple{"nvfp4", 16, 4}}) {
    c = std::string("quantized_matmul_") + mode;
    auto y = mx::quantized_matmul(in(c, 0), in(c, 1), in(c, 2), std::nullopt, true, gs, bits, mode);
    expect_qmm(y, vals(in(c, 0)), ref_dequant(in(c, 1), in(c, 2), std::nullopt, mode, gs, bits), 64, 8, true, 1e-5, c);
  }
  // gather_qmm: w (3, 8, 64) quantized, lhs_indices = arange(2), rhs_indices given.
  c = "gather_qmm";
  auto q = mx::quantize(in(c, 1), 64, 4);
  auto y = mx::gather_qmm(in(c, 0), q[0], q[1], q[2], mx::array({0u, 1u}, mx::uint32), in(c, 2), true, 64, 4);
  expect_close(y, out(c, 0), 1e-3, 1e-3, c);
}

TEST(GatherQMM, MatchesPerIndexReference) {
  for (const char* mode : {"affine", "mxfp4", "nvfp4"}) {
    const bool affine = std::string(mode) == "affine";
    const int gs = affine ? 64 : std::string(mode) == "nvfp4" ? 16 : 32;
    mx::array wf = rand_array({4, 24, 64}, mx::float32, 30);  // 4 experts, N = 24, K = 64
    auto q = mx::quantize(wf, gs, 4, mode);
    std::optional<mx::array> bias;
    if (affine) bias = q[2];
    mx::array x = rand_array({3, 2, 64}, mx::float16, 31);
    mx::array lhs({2u, 0u, 1u, 2u, 1u, 0u}, {2, 3}, mx::uint32);
    mx::array rhs({3u, 3u, 0u, 1u, 2u, 0u}, {2, 3}, mx::uint32);
    auto y = mx::gather_qmm(x, q[0], affine ? mx::astype(q[1], mx::float16) : q[1],
                            affine ? std::optional<mx::array>(mx::astype(*bias, mx::float16)) : std::nullopt, lhs, rhs,
                            true, gs, 4, mode);
    EXPECT_EQ(y.shape(), mx::Shape({2, 3, 2, 24}));
    EXPECT_EQ(y.dtype(), affine ? mx::float16 : mx::float16);
    auto wd = ref_dequant(q[0], affine ? mx::astype(q[1], mx::float16) : q[1],
                          affine ? std::optional<mx::array>(mx::astype(*bias, mx::float16)) : std::nullopt, mode, gs, 4);
    auto xv = vals(x), lv = vals(lhs), rv = vals(rhs);
    for (int i = 0; i < 6; ++i) {
      const int li = static_cast<int>(lv[i]), ri = static_cast<int>(rv[i]);
      std::vector<double> xs(xv.begin() + li * 128, xv.begin() + (li + 1) * 128);
      std::vector<double> ws(wd.begin() + ri * 24 * 64, wd.begin() + (ri + 1) * 24 * 64);
      mx::array yi = mx::slice(y, {i / 3, i % 3, 0, 0}, {i / 3 + 1, i % 3 + 1, 2, 24});
      expect_qmm(yi, xs, ws, 64, 24, true, 2e-2, std::string(mode) + " index " + std::to_string(i));
    }
  }
  // Default lhs indices (x's own batch), a non-transposed w, and an index out of range.
  mx::array w2 = rand_array({2, 64, 32}, mx::float32, 32);
  auto q2 = mx::quantize(w2, 32, 8);
  mx::array x2 = rand_array({2, 1, 64}, mx::float32, 33);
  auto y2 = mx::gather_qmm(x2, q2[0], q2[1], q2[2], std::nullopt, mx::array({1u, 1u}, mx::uint32), false, 32, 8);
  auto wd2 = ref_dequant(q2[0], q2[1], q2[2], "affine", 32, 8);
  auto xv2 = vals(x2);
  for (int i = 0; i < 2; ++i) {
    std::vector<double> xs(xv2.begin() + i * 64, xv2.begin() + (i + 1) * 64);
    std::vector<double> ws(wd2.begin() + 64 * 32, wd2.end());
    expect_qmm(mx::slice(y2, {i, 0, 0}, {i + 1, 1, 32}), xs, ws, 64, 32, false, 1e-5, "default lhs");
  }
  auto bad = mx::gather_qmm(x2, q2[0], q2[1], q2[2], std::nullopt, mx::array({1u, 2u}, mx::uint32), false, 32, 8);
  EXPECT_THAT(error_of([&] { bad.eval(); }), HasSubstr("[gather_qmm] Index 2 of rhs_indices is out of range for 2"));
}

TEST(QuantizedMatmul, ErrorsAsMLX) {
  mx::array w = rand_array({4, 64}, mx::float32, 40);
  auto q = mx::quantize(w, 64, 4);
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 32}), q[0], q[1], q[2], true, 64, 4); }),
              HasSubstr("[quantized_matmul] Last dimension of first input with shape (..., 32) does not match the expanded quantized matrix (64, 4) computed from shape (4,8) with group_size=64, bits=4 and transpose=true"));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}), q[0], q[1], q[2], false, 64, 4); }),
              HasSubstr("and transpose=false"));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}), q[0], q[1], std::nullopt, true, 64, 4); }),
              HasSubstr("[quantized_matmul] Biases must be provided for affine quantization."));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}), q[0], q[1], q[2], true, 64, 4, "mxfp4"); }),
              HasSubstr("[quantized_matmul] Biases must be null for quantization mode 'mxfp4'."));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}), mx::astype(q[0], mx::int32), q[1], q[2]); }),
              HasSubstr("[quantized_matmul] The weight matrix should be uint32 but received int32"));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}), q[0], q[1], q[2], true, 32, 4); }),
              HasSubstr("[quantized_matmul] The shapes of the weight and scales are incompatible based on bits and group_size."));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}), q[0], q[1], mx::ones({4, 2}), true, 64, 4); }),
              HasSubstr("[quantized_matmul] Scales and biases should have the same shape."));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}, mx::int32), q[0], mx::astype(q[1], mx::int32), mx::astype(q[2], mx::int32)); }),
              HasSubstr("[quantized_matmul] Only real floating types are supported but scales.dtype() == int32"));
  EXPECT_THAT(error_of([&] { mx::quantized_matmul(mx::ones({2, 64}), q[0], q[1], q[2], true, 64, 4, "bogus"); }),
              HasSubstr("[quantized_matmul] Invalid quantization mode 'bogus'."));
}

TEST(QuantizeExport, DequantizeOnCpuStreamsExportsMLXsGraph) {
  // MLX's CPU build cannot evaluate a dequantizing Quantize node, so on CPU streams the exported
  // function holds the plain-op graph MLX itself records; it still dequantizes bit for bit.
  const std::string file = "/tmp/kiln_test_dequant_" + std::to_string(::getpid()) + ".mlxfn";
  for (int bits : {4, 3}) {
    mx::array w = rand_array({8, 64}, mx::float32, 50 + bits);
    auto q = mx::quantize(w, 32, bits);
    mx::eval(q);
    mx::export_function(file, [&](const mx::Args& a) {
      return std::vector<mx::array>{mx::dequantize(a[0], a[1], a[2], 32, bits), mx::quantize(a[3], 32, bits)[0]};
    }, {q[0], q[1], q[2], w});
    auto f = mx::import_function(file);
    size_t quantize_nodes = 0;
    for (auto& e : f.info().functions[0].tape) {
      if (e.name == "Quantize") {
        ++quantize_nodes;
        EXPECT_FALSE(std::get<bool>(e.state[4])) << "a dequantizing Quantize node was exported";
      }
    }
    EXPECT_EQ(quantize_nodes, 1u);  // the quantization itself stays one node, as in MLX
    auto outs = f({q[0], q[1], q[2], w});
    EXPECT_EQ(fnv(outs[0]), fnv(mx::dequantize(q[0], q[1], q[2], 32, bits))) << bits;
    EXPECT_EQ(fnv(outs[1]), fnv(q[0])) << bits;
  }
  // fp modes keep the Quantize node; its output dtype (here float16) comes from the record.
  mx::array w = rand_array({4, 64}, mx::float16, 60);
  auto f4 = mx::quantize(w, 32, 4, "mxfp4");
  mx::export_function(file, [](const mx::Args& a) {
    return std::vector<mx::array>{mx::dequantize(a[0], a[1], std::nullopt, 32, 4, "mxfp4", mx::float16)};
  }, {f4[0], f4[1]});
  auto f = mx::import_function(file);
  auto out = f({f4[0], f4[1]})[0];
  EXPECT_EQ(out.dtype(), mx::float16);
  EXPECT_EQ(fnv(out), fnv(mx::dequantize(f4[0], f4[1], std::nullopt, 32, 4, "mxfp4", mx::float16)));
  std::remove(file.c_str());
}

TEST(QuantizedPrimitives, SchemasAndInfer) {
  auto fields = [](const char* name) {
    std::vector<mx::FieldType> t;
    for (auto& f : mx::registry::get(name).fields) t.push_back(f.type);
    return t;
  };
  using FT = mx::FieldType;
  EXPECT_EQ(fields("Quantize"), (std::vector<FT>{FT::Placeholder, FT::Int, FT::Int, FT::Int, FT::Bool}));
  EXPECT_EQ(fields("QuantizedMatmul"), (std::vector<FT>{FT::Int, FT::Int, FT::Int, FT::Bool}));
  EXPECT_EQ(fields("GatherQMM"), (std::vector<FT>{FT::Int, FT::Int, FT::Int, FT::Bool, FT::Bool, FT::Bool}));
  EXPECT_FALSE(mx::registry::get("GatherQMM").shapeless);
  EXPECT_TRUE(mx::registry::get("QuantizedMatmul").shapeless);
  // Records are validated through infer: unknown modes, bad widths, wrong arity.
  const auto& qd = mx::registry::get("Quantize");
  auto specs = qd.infer(mx::State{std::monostate{}, 16, 4, 3, false}, {{{2, 32}, mx::float16}});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, mx::Shape({2, 4}));
  EXPECT_EQ(specs[1].shape, mx::Shape({2, 2}));
  EXPECT_EQ(specs[1].dtype, mx::uint8);
  EXPECT_THAT(error_of([&] { qd.infer(mx::State{std::monostate{}, 64, 4, 9, false}, {{{2, 64}, mx::float32}}); }),
              HasSubstr("Invalid quantization mode code 9"));
  EXPECT_THAT(error_of([&] { qd.infer(mx::State{std::monostate{}, 64, 7, 0, false}, {{{2, 64}, mx::float32}}); }),
              HasSubstr("The requested number of bits 7 is not supported"));
  ASSERT_NE(qd.check, nullptr);
  const mx::State deq{std::monostate{}, 32, 4, 1, true};
  const std::vector<mx::ArraySpec> deq_in{{{2, 4}, mx::uint32}, {{2, 1}, mx::uint8}};
  EXPECT_NO_THROW(qd.check(deq, deq_in, {{{2, 32}, mx::float16}}));
  EXPECT_NO_THROW(qd.check(deq, deq_in, {{{2, 32}, mx::float32}}));
  EXPECT_THROW(qd.check(deq, deq_in, {{{2, 32}, mx::int32}}), std::invalid_argument);
  EXPECT_THROW(qd.check(deq, deq_in, {{{2, 31}, mx::float16}}), std::invalid_argument);
  const auto& qmm = mx::registry::get("QuantizedMatmul");
  EXPECT_THAT(error_of([&] {
                qmm.infer(mx::State{64, 4, 0, true}, {{{2, 64}, mx::float32}, {{4, 8}, mx::uint32}, {{4, 1}, mx::float32}});
              }),
              HasSubstr("[quantized_matmul] Expected 4 inputs for mode 'affine' but got 3."));
}

}  // namespace
