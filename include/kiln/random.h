// kiln::random: counter-based random numbers with MLX's names, signatures and values. A key is a
// uint32 array of shape (2); RandomBits hashes counters with threefry-2x32 (20 rounds), bit for bit as
// MLX does, and the distributions are built from it with the same element-wise ops as MLX, so a given
// key yields MLX's numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "kiln/array.h"

namespace kiln::random {

// The global key state: next() splits the current key and returns one half.
class KeySequence {
 public:
  explicit KeySequence(uint64_t seed);
  void seed(uint64_t seed);
  array next();
  // Seeded from the clock at first use, as MLX.
  static KeySequence& default_();

 private:
  array key_;
};

// A key from a seed: (seed >> 32, seed & 0xffffffff).
array key(uint64_t seed);
// Reseed the default key sequence.
void seed(uint64_t seed);

// Random bits of `width` bytes per element (1, 2 or 4): uint8, uint16 or uint32.
array bits(const Shape& shape, int width, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array bits(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bits(shape, 4, key, s);
}

std::pair<array, array> split(const array& key, StreamOrDevice s = {});
// `num` keys, shape (num, 2).
array split(const array& key, int num, StreamOrDevice s = {});

// Uniform in [low, high).
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
array uniform(T low, U high, const Shape& shape, Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {}) {
  return uniform(array(low), array(high), shape, dtype, key, s);
}
array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array uniform(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return uniform(shape, float32, key, s);
}

// Standard normal (via erfinv of a uniform), scaled and shifted.
array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc, const std::optional<array>& scale,
             const std::optional<array>& key, StreamOrDevice s = {});
inline array normal(const Shape& shape, Dtype dtype, float loc, float scale,
                    const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  auto l = loc == 0 ? std::nullopt : std::make_optional(array(loc, dtype));
  auto sc = scale == 1 ? std::nullopt : std::make_optional(array(scale, dtype));
  return normal(shape, dtype, l, sc, key, s);
}
inline array normal(const Shape& shape, float loc, float scale, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, float32, loc, scale, key, s);
}
inline array normal(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, dtype, std::nullopt, std::nullopt, key, s);
}
inline array normal(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return normal(shape, float32, std::nullopt, std::nullopt, key, s);
}

array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

// Integers in [low, high).
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <typename T, typename U>
array randint(T low, U high, const Shape& shape, Dtype dtype = int32, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {}) {
  return randint(array(low), array(high), shape, dtype, key, s);
}

// True with probability p.
array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {});
array bernoulli(const array& p, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <typename T>
array bernoulli(T p, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bernoulli(array(p), key, s);
}
template <typename T>
array bernoulli(T p, const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bernoulli(array(p), shape, key, s);
}
array bernoulli(const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array truncated_normal(const array& lower, const array& upper, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

array gumbel(const Shape& shape, Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
             StreamOrDevice s = {});

// Samples of the categorical distribution given unnormalized log-probabilities along `axis`.
array categorical(const array& logits, int axis, const Shape& shape, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
array categorical(const array& logits, int axis, int num_samples, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
array categorical(const array& logits, int axis = -1, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});

array laplace(const Shape& shape, Dtype dtype, float loc, float scale, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {});
inline array laplace(const Shape& shape, float loc, float scale, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return laplace(shape, float32, loc, scale, key, s);
}
inline array laplace(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return laplace(shape, dtype, 0.0f, 1.0f, key, s);
}
inline array laplace(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return laplace(shape, float32, 0.0f, 1.0f, key, s);
}

// Randomly permute x along `axis`; or a random permutation of arange(x).
array permutation(const array& x, int axis = 0, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array permutation(int x, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

}  // namespace kiln::random
