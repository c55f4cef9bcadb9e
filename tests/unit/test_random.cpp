// kiln::random: RandomBits bit for bit against MLX 0.30.1 (values printed by MLX's C++ API and the
// golden corpus), and the distributions against values printed by MLX's Python API for the same keys.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <kiln/kiln.h>
#include <kiln/random.h>
#include <sstream>

#include "unit/test_util.h"

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

using test_util::message_of;
using test_util::vals;

// A minimal .npy reader for the golden files (version 1.0 headers, little-endian, C order).
struct Npy {
  std::string descr;
  mx::Shape shape;
  std::string data;
};
Npy read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint16_t hlen;
  std::memcpy(&hlen, bytes.data() + 8, 2);
  std::string header = bytes.substr(10, hlen);
  Npy n;
  auto d = header.find("'descr': '") + 10;
  n.descr = header.substr(d, header.find('\'', d) - d);
  auto s = header.find("'shape': (") + 10;
  std::stringstream ss(header.substr(s, header.find(')', s) - s));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(' ') != std::string::npos) n.shape.push_back(std::stoi(tok));
  }
  n.data = bytes.substr(10 + hlen);
  return n;
}
std::string golden(const std::string& rel) { return std::string(KILN_TEST_DATA) + "/golden/mlx-0.30.1/" + rel; }

mx::array key2(uint32_t a, uint32_t b) { return mx::array({a, b}); }

template <typename T>
std::vector<uint64_t> as_u64(const mx::array& a) {
  auto v = vals<T>(a);
  return std::vector<uint64_t>(v.begin(), v.end());
}

}  // namespace

// ---- RandomBits ----

struct BitsCase {
  uint32_t k0, k1;
  int width;
  mx::Shape shape;
  std::vector<uint64_t> expect;  // from MLX 0.30.1 (C++ API, CPU)
};

TEST(RandomBits, BitExactWithMLXForEveryWidth) {
  const std::vector<BitsCase> cases = {
      {0, 7, 4, {3, 4}, {2687091327u, 479631483, 737687000, 1136870432, 2050508044, 4028859945u, 3539857703u,
                         139339095, 62160918, 1127502691, 618713603, 1017035898}},
      {0, 7, 2, {5}, {38825, 14744, 55624, 27928, 48643}},
      {0, 7, 1, {7}, {191, 40, 160, 11, 191, 86, 32}},
      {12345, 678, 4, {1}, {510440254}},
      {12345, 678, 4, {2}, {2362237244u, 509186377}},
      {12345, 678, 4, {3}, {2341361397u, 2568205493u, 1891163719}},
      {12345, 678, 4, {13}, {3287967777u, 2185267945u, 3521338478u, 2991853774u, 3178272836u, 3445746120u, 2135474529,
                             3170597435u, 1805936251, 1914055282, 1908434631, 437622643, 1418320797}},
      {12345, 678, 2, {1}, {45886}},
      {12345, 678, 2, {2}, {45886, 7788}},
      {12345, 678, 2, {3}, {57660, 36044, 37193}},
      {12345, 678, 2, {6}, {22261, 35726, 46261, 39187, 56903, 28856}},
      {12345, 678, 2, {9}, {47656, 46685, 21126, 13034, 29671, 753, 50636, 9226, 2959}},
      {12345, 678, 1, {1}, {62}},
      {12345, 678, 1, {3}, {62, 179, 108}},
      {12345, 678, 1, {4}, {62, 179, 108, 30}},
      {12345, 678, 1, {5}, {60, 225, 204, 140, 73}},
      {12345, 678, 1, {11}, {245, 86, 142, 139, 181, 180, 19, 153, 71, 222, 184}},
      {12345, 678, 1, {2, 3, 3}, {40, 186, 93, 182, 134, 82, 234, 50, 231, 115, 241, 2, 204, 197, 10, 36, 143, 11}},
      {4294967295u, 1, 4, {2, 3, 2}, {3476684268u, 1363319859, 1428670934, 2027103708, 2497128927u, 3941063046u,
                                       90191015, 4249385031u, 3426395150u, 1838869544, 3781631108u, 2381948944u}},
      {4294967295u, 1, 2, {2, 7}, {12144, 19677, 37451, 5093, 28614, 57546, 37762, 34941, 41968, 12378, 11565,
                                   58809, 55954, 8236}},
      {4294967295u, 1, 1, {16}, {66, 15, 45, 2, 155, 84, 173, 246, 55, 138, 122, 142, 169, 117, 12, 95}},
  };
  for (auto& c : cases) {
    SCOPED_TRACE("key (" + std::to_string(c.k0) + ", " + std::to_string(c.k1) + ") width " + std::to_string(c.width) +
                 " shape " + ::testing::PrintToString(c.shape));
    auto b = mx::random::bits(c.shape, c.width, key2(c.k0, c.k1));
    EXPECT_EQ(b.shape(), c.shape);
    EXPECT_EQ(b.dtype(), c.width == 4 ? mx::uint32 : c.width == 2 ? mx::uint16 : mx::uint8);
    std::vector<uint64_t> got = c.width == 4   ? as_u64<uint32_t>(b)
                                : c.width == 2 ? as_u64<uint16_t>(b)
                                               : as_u64<uint8_t>(b);
    EXPECT_EQ(got, c.expect);
  }
}

TEST(RandomBits, LargeOutputsMatchMLXChecksums) {
  // Sum and polynomial hash (h = h * 1000003 + v mod 2^64) of MLX's output for key (3, 9).
  struct Big {
    int width;
    mx::Shape shape;
    uint64_t sum, hash;
  };
  const std::vector<Big> cases = {
      {4, {100003}, 214799413247450u, 10122854486373055480u},
      {2, {100001}, 3275592184u, 387738951900124536u},
      {1, {100003}, 12793278u, 1172780947541223992u},
      {1, {257, 129}, 4218322u, 14131216159698429314u},
      {2, {64, 1000}, 2096706248u, 6626080856942488952u},
  };
  for (auto& c : cases) {
    auto b = mx::random::bits(c.shape, c.width, key2(3, 9));
    std::vector<uint64_t> v = c.width == 4   ? as_u64<uint32_t>(b)
                              : c.width == 2 ? as_u64<uint16_t>(b)
                                             : as_u64<uint8_t>(b);
    uint64_t s = 0, h = 0;
    for (uint64_t x : v) {
      s += x;
      h = h * 1000003u + x;
    }
    EXPECT_EQ(s, c.sum) << "width " << c.width;
    EXPECT_EQ(h, c.hash) << "width " << c.width;
  }
}

TEST(RandomBits, EmptyShapeAndBatchedKeys) {
  auto e = mx::random::bits({0, 3}, 4, key2(1, 2));
  EXPECT_EQ(e.shape(), mx::Shape({0, 3}));
  EXPECT_EQ(vals<uint32_t>(e).size(), 0u);
  // A batch of keys (as vmap produces) splits the output evenly: each key's share equals what the key
  // alone gives for the per-key shape.
  const auto& def = mx::registry::get("RandomBits");
  mx::array keys({1u, 2u, 7u, 8u, 0u, 7u}, {3, 2});
  for (int width : {1, 2, 4}) {
    auto out = mx::make_array(def, mx::State{std::vector<int32_t>{3, 5}, int32_t(width)}, {keys});
    auto all = width == 4 ? as_u64<uint32_t>(out) : width == 2 ? as_u64<uint16_t>(out) : as_u64<uint8_t>(out);
    for (int k = 0; k < 3; ++k) {
      auto one = mx::random::bits({5}, width, key2(keys.data<uint32_t>()[2 * k], keys.data<uint32_t>()[2 * k + 1]));
      auto ref = width == 4 ? as_u64<uint32_t>(one) : width == 2 ? as_u64<uint16_t>(one) : as_u64<uint8_t>(one);
      EXPECT_EQ(std::vector<uint64_t>(all.begin() + 5 * k, all.begin() + 5 * k + 5), ref) << "width " << width;
    }
  }
  // Non-contiguous key: the transposed view of a (2, 1) column.
  auto kt = mx::transpose(mx::array({0u, 7u}, {2, 1}));
  auto b = mx::make_array(def, mx::State{std::vector<int32_t>{5}, int32_t(2)}, {kt});
  EXPECT_EQ(as_u64<uint16_t>(b), (std::vector<uint64_t>{38825, 14744, 55624, 27928, 48643}));
}

TEST(RandomBits, GoldenRandomBitsCase) {
  auto k = read_npy(golden("random_bits/call0_arg0.npy"));
  ASSERT_EQ(k.descr, "<u4");
  mx::array key = mx::array::from_bytes(k.data.data(), k.data.size(), k.shape, mx::uint32);
  struct Out {
    const char* file;
    mx::Shape shape;
    int width;
  };
  for (auto o : {Out{"random_bits/call0_out0.npy", {3, 4}, 4}, Out{"random_bits/call0_out1.npy", {5}, 2},
                 Out{"random_bits/call0_out2.npy", {7}, 1}}) {
    auto expect = read_npy(golden(o.file));
    ASSERT_EQ(expect.shape, o.shape);
    auto b = mx::random::bits(o.shape, o.width, key);
    b.eval();
    ASSERT_EQ(b.nbytes(), expect.data.size());
    EXPECT_EQ(std::memcmp(b.raw_data(), expect.data.data(), b.nbytes()), 0) << o.file;
  }
}

TEST(RandomBits, GoldenRandomDistsCase) {
  // The golden function: ks = split(key, 3); uniform((4,), ks[0]), normal((4,), ks[1]),
  // randint(0, 10, (6,), ks[0]).
  auto k = read_npy(golden("random_dists/call0_arg0.npy"));
  mx::array key = mx::array::from_bytes(k.data.data(), k.data.size(), k.shape, mx::uint32);
  auto ks = mx::random::split(key, 3);
  auto k0 = mx::take(ks, 0, 0);
  auto k1 = mx::take(ks, 1, 0);
  auto u = mx::random::uniform({4}, k0);
  auto n = mx::random::normal({4}, k1);
  auto r = mx::random::randint(0, 10, {6}, mx::int32, k0);
  auto eu = read_npy(golden("random_dists/call0_out0.npy"));
  auto en = read_npy(golden("random_dists/call0_out1.npy"));
  auto er = read_npy(golden("random_dists/call0_out2.npy"));
  std::vector<float> fu(4), fn(4);
  std::vector<int32_t> ir(6);
  std::memcpy(fu.data(), eu.data.data(), 16);
  std::memcpy(fn.data(), en.data.data(), 16);
  std::memcpy(ir.data(), er.data.data(), 24);
  EXPECT_EQ(vals<float>(u), fu);  // uniform is exact: bits / 2^32, clamped
  auto gn = vals<float>(n);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(gn[i], fn[i], 1e-6 * (1 + std::abs(fn[i])));
  EXPECT_EQ(vals<int32_t>(r), ir);
}

TEST(RandomBits, StateRowAndValidation) {
  const auto& def = mx::registry::get("RandomBits");
  ASSERT_EQ(def.fields.size(), 2u);
  EXPECT_EQ(def.fields[0].type, mx::FieldType::ShapeF);
  EXPECT_EQ(def.fields[1].type, mx::FieldType::Int);
  EXPECT_FALSE(def.shapeless);
  auto specs = def.infer(mx::State{std::vector<int32_t>{4, 2}, int32_t(2)}, {{{2}, mx::uint32}});
  EXPECT_EQ(specs[0].shape, mx::Shape({4, 2}));
  EXPECT_EQ(specs[0].dtype, mx::uint16);
  EXPECT_THAT(message_of([&] { def.infer(mx::State{std::vector<int32_t>{4}, int32_t(3)}, {{{2}, mx::uint32}}); }),
              HasSubstr("Bit width must be in {1, 2, 4} but got 3"));
  EXPECT_THAT(message_of([&] { def.infer(mx::State{std::vector<int32_t>{4}, int32_t(4)}, {{{2}, mx::int32}}); }),
              HasSubstr("Expected key type uint32"));
  EXPECT_THAT(message_of([&] { def.infer(mx::State{std::vector<int32_t>{4}, int32_t(4)}, {{{3}, mx::uint32}}); }),
              HasSubstr("Expected keys of shape (..., 2)"));
  EXPECT_THAT(message_of([&] { def.infer(mx::State{std::vector<int32_t>{5}, int32_t(4)}, {{{2, 2}, mx::uint32}}); }),
              HasSubstr("cannot be split between 2 keys"));
}

TEST(RandomBits, OpErrorsMatchMLX) {
  EXPECT_EQ(message_of([] { mx::random::bits({3}, 4, mx::array({1, 2})); }),
            "[bits] Expected key type uint32 but received int32.");
  EXPECT_EQ(message_of([] { mx::random::bits({3}, 4, mx::array({1u, 2u, 3u})); }),
            "[bits] Expected key shape (2) but received (3).");
  EXPECT_EQ(message_of([] { mx::random::bits({3}, 3, key2(1, 2)); }), "[bits] Bit width must be in {1, 2, 4} but got 3.");
  EXPECT_THROW(mx::random::bits({3}, 3, key2(1, 2)), std::invalid_argument);
}

// ---- keys ----

TEST(Random, KeyAndSplit) {
  auto k = mx::random::key(42);
  EXPECT_EQ(vals<uint32_t>(k), (std::vector<uint32_t>{0, 42}));
  EXPECT_EQ(vals<uint32_t>(mx::random::key(0x123456789abcdefull)), (std::vector<uint32_t>{0x1234567u, 0x89abcdefu}));
  auto [a, b] = mx::random::split(k);
  EXPECT_EQ(a.shape(), mx::Shape({2}));
  EXPECT_EQ(vals<uint32_t>(a), (std::vector<uint32_t>{2465931498u, 3679230171u}));
  EXPECT_EQ(vals<uint32_t>(b), (std::vector<uint32_t>{255383827u, 267815257u}));
  auto s3 = mx::random::split(k, 3);
  EXPECT_EQ(s3.shape(), mx::Shape({3, 2}));
  EXPECT_EQ(vals<uint32_t>(s3),
            (std::vector<uint32_t>{3134548294u, 3733159049u, 3746501087u, 894150801u, 801545058u, 2363201431u}));
}

TEST(Random, SeedGivesMLXSequence) {
  mx::random::seed(7);
  EXPECT_EQ(vals<float>(mx::random::uniform({3})),
            (std::vector<float>{0.07774583250284195f, 0.17445430159568787f, 0.8326463103294373f}));
  EXPECT_EQ(vals<float>(mx::random::uniform({3})),
            (std::vector<float>{0.5847170352935791f, 0.43681371212005615f, 0.7064781785011292f}));
  auto n = vals<float>(mx::random::normal({2}));
  EXPECT_NEAR(n[0], -0.7018067240715027f, 1e-6);
  EXPECT_NEAR(n[1], 0.1796095222234726f, 1e-6);
  // Reseeding restarts the sequence.
  mx::random::seed(7);
  EXPECT_FLOAT_EQ(vals<float>(mx::random::uniform({3}))[0], 0.07774583250284195f);
}

// ---- distributions (values from MLX 0.30.1 Python for key(42)) ----

namespace {
void expect_near(const std::vector<float>& got, const std::vector<float>& want, float rtol = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rtol * (1.0f + std::abs(want[i]))) << "at " << i;
  }
}
}  // namespace

TEST(Random, Uniform) {
  auto k = mx::random::key(42);
  auto u = mx::random::uniform({2, 3}, k);
  EXPECT_EQ(u.dtype(), mx::float32);
  EXPECT_EQ(u.shape(), mx::Shape({2, 3}));
  EXPECT_EQ(vals<float>(u), (std::vector<float>{0.7298188805580139f, 0.8691938519477844f, 0.8723002672195435f,
                                                0.20818570256233215f, 0.18662425875663757f, 0.5502257347106934f}));
  expect_near(vals<float>(mx::random::uniform(-2.0, 5.0, {5}, mx::float32, k)),
              {3.108732223510742f, 4.084356784820557f, -0.6249337196350098f, -0.5427000522613525f,
               -0.6936302185058594f});
  auto h = mx::random::uniform({5}, mx::float16, k);
  EXPECT_EQ(h.dtype(), mx::float16);
  EXPECT_EQ(vals<float>(h), (std::vector<float>{0.72998046875f, 0.869140625f, 0.1964111328125f, 0.2081298828125f,
                                                0.1866455078125f}));
  EXPECT_EQ(vals<float>(mx::random::uniform({5}, mx::bfloat16, k)),
            (std::vector<float>{0.73046875f, 0.87109375f, 0.1962890625f, 0.2080078125f, 0.1865234375f}));
  // Broadcast bounds: each row gets its own range.
  auto ub = mx::random::uniform(mx::array({0.0f, 10.0f}, {2, 1}), mx::array({1.0f, 20.0f}, {2, 1}), {2, 3},
                                mx::float32, k);
  auto v = vals<float>(ub);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(v[i] >= 0.0f && v[i] < 1.0f);
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(v[i] >= 10.0f && v[i] < 20.0f);
  EXPECT_EQ(message_of([&] { mx::random::uniform({3}, mx::int32, k); }),
            "[uniform] Can only generate uniform numbers with real floating point type.");
  EXPECT_EQ(message_of([&] { mx::random::uniform(mx::array({0.f, 1.f}, {2, 1}), mx::array(2.f), {3}, mx::float32, k); }),
            "[uniform] Cannot generate random values of shape (3) from broadcasted shape (2,3).");
}

TEST(Random, Normal) {
  auto k = mx::random::key(42);
  expect_near(vals<float>(mx::random::normal({6}, k)),
              {0.612265408039093f, 1.1225886344909668f, 1.1373323202133179f, -0.8127323985099792f,
               -0.8904047012329102f, 0.12623175978660583f});
  expect_near(vals<float>(mx::random::normal({4}, 1.5f, 2.0f, k)),
              {1.8738713264465332f, 3.6306676864624023f, -1.6186254024505615f, -1.5705907344818115f});
  auto h = mx::random::normal({4}, mx::float16, k);
  EXPECT_EQ(h.dtype(), mx::float16);
  expect_near(vals<float>(h), {0.1868896484375f, 1.0654296875f, -1.55859375f, -1.53515625f}, 1e-3f);
  auto c = mx::random::normal({3}, mx::complex64, k);
  EXPECT_EQ(c.dtype(), mx::complex64);
  EXPECT_EQ(c.shape(), mx::Shape({3}));
  auto cv = vals<mx::complex64_t>(c);
  std::vector<float> flat;
  for (auto z : cv) {
    flat.push_back(z.real());
    flat.push_back(z.imag());
  }
  expect_near(flat, {0.43293702602386475f, 0.7937900424003601f, 0.8042153716087341f, -0.5746886134147644f,
                     -0.6296111941337585f, 0.08925933390855789f});
  EXPECT_EQ(message_of([&] { mx::random::normal({3}, mx::int32, k); }),
            "[normal] Can only generate uniform numbers with floating point type.");
}

TEST(Random, RandintBernoulliTruncatedGumbelLaplace) {
  auto k = mx::random::key(42);
  EXPECT_EQ(vals<int32_t>(mx::random::randint(-5, 17, {10}, mx::int32, k)),
            (std::vector<int32_t>{9, 2, 0, 14, 13, 0, 2, 0, 8, 9}));
  auto r8 = mx::random::randint(0, 200, {6}, mx::uint8, k);
  EXPECT_EQ(r8.dtype(), mx::uint8);
  EXPECT_EQ(vals<int32_t>(r8), (std::vector<int32_t>{145, 173, 174, 41, 37, 110}));
  EXPECT_EQ(message_of([&] { mx::random::randint(0, 2, {2}, mx::float32, k); }),
            "[randint] randint only accepts integer dtypes and bool.");

  auto b = mx::random::bernoulli(0.3f, {12}, k);
  EXPECT_EQ(b.dtype(), mx::bool_);
  EXPECT_EQ(vals<int32_t>(b), (std::vector<int32_t>{0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(vals<int32_t>(mx::random::bernoulli(mx::array({0.0f, 0.25f, 0.5f, 0.75f, 1.0f}), k)),
            (std::vector<int32_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(message_of([&] { mx::random::bernoulli(mx::array(1), k); }),
            "[bernoulli] bernoulli probability `p` must be a float type.");
  EXPECT_THAT(message_of([&] { mx::random::bernoulli(mx::array({0.1f, 0.2f}), {3}, k); }),
              HasSubstr("cannot be broadcast"));

  auto t = vals<float>(mx::random::truncated_normal(mx::array(-1.0f), mx::array(0.5f), {6}, mx::float32, k));
  expect_near(t, {0.11936768889427185f, 0.3101273477077484f, 0.31448352336883545f, -0.6140895485877991f,
                  -0.6492449641227722f, -0.12106574326753616f}, 1e-5f);
  for (float x : t) EXPECT_TRUE(x >= -1.0f && x <= 0.5f);

  expect_near(vals<float>(mx::random::gumbel({5}, mx::float32, k)),
              {1.15531325340271f, 1.9647629261016846f, -0.4869886636734009f, -0.4506455063819885f,
               -0.5179946422576904f}, 1e-5f);
  expect_near(vals<float>(mx::random::laplace({5}, k)),
              {-0.6155156493186951f, -1.3408918380737305f, 0.9342608451843262f, 0.8761774897575378f,
               0.9855106472969055f}, 1e-5f);
  expect_near(vals<float>(mx::random::laplace({5}, 1.0f, 3.0f, k)),
              {-0.8465468883514404f, -3.0226755142211914f, 3.8027825355529785f, 3.6285324096679688f,
               3.9565320014953613f}, 1e-5f);
}

TEST(Random, PermutationAndCategorical) {
  auto k = mx::random::key(42);
  auto p = mx::random::permutation(10, k);
  EXPECT_EQ(p.dtype(), mx::uint32);
  EXPECT_EQ(vals<int32_t>(p), (std::vector<int32_t>{5, 2, 7, 1, 6, 8, 0, 9, 4, 3}));
  auto pa = mx::random::permutation(mx::reshape(mx::arange(12), {4, 3}), 0, k);
  EXPECT_EQ(vals<int32_t>(pa), (std::vector<int32_t>{6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5}));

  mx::array logits({0.1f, 2.0f, -1.0f, 0.5f, 1.0f, 1.0f, 1.0f, 1.0f, -3.0f, 0.0f, 3.0f, 0.2f}, {3, 4});
  auto c = mx::random::categorical(logits, -1, k);
  EXPECT_EQ(c.dtype(), mx::uint32);
  EXPECT_EQ(vals<int32_t>(c), (std::vector<int32_t>{3, 2, 2}));
  EXPECT_EQ(vals<int32_t>(mx::random::categorical(logits, 0, k)), (std::vector<int32_t>{0, 0, 2, 0}));
  auto ns = mx::random::categorical(logits, -1, 4, k);
  EXPECT_EQ(ns.shape(), mx::Shape({3, 4}));
  EXPECT_EQ(vals<int32_t>(ns), (std::vector<int32_t>{1, 1, 1, 1, 3, 0, 1, 0, 2, 2, 2, 2}));
  auto cs = mx::random::categorical(logits, -1, mx::Shape{2, 3}, k);
  EXPECT_EQ(vals<int32_t>(cs), (std::vector<int32_t>{1, 3, 2, 3, 1, 2}));
  EXPECT_EQ(message_of([&] { mx::random::categorical(logits, 2, k); }),
            "[categorical] Invalid axis 2 for logits with 2 dimensions.");
}

TEST(Random, MultivariateNormal) {
  auto k = mx::random::key(42);
  mx::array mean({1.0f, -2.0f});
  mx::array cov({2.0f, 0.5f, 0.5f, 1.0f}, {2, 2});
  auto x = mx::random::multivariate_normal(mean, cov, {3}, mx::float32, k);
  EXPECT_EQ(x.shape(), mx::Shape({3, 2}));
  expect_near(vals<float>(x), {2.0924620628356934f, -0.7737081050872803f, 2.419501304626465f, -2.5552046298980713f,
                               -0.21864140033721924f, -2.0639631748199463f},
              1e-4f);
  EXPECT_EQ(message_of([&] { mx::random::multivariate_normal(mean, cov, {3}, mx::float16, k); }),
            "[multivariate_normal] dtype must be float32.");
  EXPECT_EQ(message_of([&] { mx::random::multivariate_normal(mx::array({1.f, 2.f, 3.f}), cov, {3}, mx::float32, k); }),
            "[multivariate_normal] mean and cov must have compatible shapes.");
}
