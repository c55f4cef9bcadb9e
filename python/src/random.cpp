// kiln.random: the random number functions of mlx.core.random. The global key lives in the Python list
// kiln.random.state (one uint32 key of shape (2,)), as in MLX, so code that saves / restores or
// compiles over `random.state` works; each draw without `key=` splits it and uses one half.
#include <chrono>

#include "ops_common.h"

namespace kiln::py {

namespace {

// kiln.random.state; never freed (it must outlive the interpreter's module teardown).
nb::list& state_list() {
  static nb::list* state = [] {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    auto* l = new nb::list();
    l->append(nb::cast(kiln::random::key(static_cast<uint64_t>(ms))));
    return l;
  }();
  return *state;
}

// The next key of the global sequence (the state keeps the other half).
array next_key() {
  nb::list& st = state_list();
  auto [keep, use] = kiln::random::split(nb::cast<array>(st[0]));
  st[0] = nb::cast(keep);
  return use;
}

array key_or_next(nb::handle key) { return key.is_none() ? next_key() : arr(key, "random"); }

// A bound (low, high, loc, ...) given as a Python scalar or array-like.
array bound(nb::handle h, const char* api, std::optional<Dtype> dtype = std::nullopt) {
  return to_array(h, is_python_scalar(h) ? dtype : std::nullopt, api);
}

Dtype dt_or(nb::handle dtype, Dtype def, const char* api) { return dtype_arg(dtype, api).value_or(def); }

}  // namespace

void init_random(nb::module_& m) {
  m.attr("state") = state_list();
  // Drop the key before the interpreter tears the array type down.
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([]() { state_list().clear(); }));
  m.def(
      "seed",
      [](uint64_t seed) {
        state_list()[0] = nb::cast(kiln::random::key(seed));
        kiln::random::seed(seed);
      },
      "seed"_a, "Reseeds the global random key.");
  m.def("key", [](uint64_t seed) { return kiln::random::key(seed); }, "seed"_a,
        "A PRNG key (uint32, shape (2,)) from a seed.");
  m.def(
      "split",
      [](nb::handle key, int num, nb::handle stream) { return kiln::random::split(arr(key, "split"), num, S(stream)); },
      "key"_a, "num"_a = 2, KILN_STREAM, "num new keys (shape (num, 2)) from a key.");
  m.def(
      "bits",
      [](nb::handle shape, int width, nb::handle key, nb::handle stream) {
        return kiln::random::bits(shape_arg(shape, "bits"), width, key_or_next(key), S(stream));
      },
      "shape"_a = nb::make_tuple(), "width"_a = 4, "key"_a.none() = nb::none(), KILN_STREAM,
      "Random bits: uint8, uint16 or uint32 for width 1, 2 or 4 bytes.");
  m.def(
      "uniform",
      [](nb::handle low, nb::handle high, nb::handle shape, nb::handle dtype, nb::handle key, nb::handle stream) {
        const char* api = "uniform";
        return kiln::random::uniform(bound(low, api), bound(high, api), shape_arg(shape, api),
                                     dt_or(dtype, float32, api), key_or_next(key), S(stream));
      },
      "low"_a = 0, "high"_a = 1, "shape"_a = nb::make_tuple(), "dtype"_a.none() = float32, "key"_a.none() = nb::none(),
      KILN_STREAM, "Uniform samples in [low, high), low and high broadcast to shape.");
  m.def(
      "normal",
      [](nb::handle shape, nb::handle dtype, nb::handle loc, nb::handle scale, nb::handle key, nb::handle stream) {
        const char* api = "normal";
        Dtype dt = dt_or(dtype, float32, api);
        std::optional<array> l, s;
        if (!loc.is_none()) l = to_array(loc, dt, api);
        if (!scale.is_none()) s = to_array(scale, dt, api);
        return kiln::random::normal(shape_arg(shape, api), dt, l, s, key_or_next(key), S(stream));
      },
      "shape"_a = nb::make_tuple(), "dtype"_a.none() = float32, "loc"_a.none() = nb::none(),
      "scale"_a.none() = nb::none(), "key"_a.none() = nb::none(), KILN_STREAM,
      "Normal samples with mean loc (default 0) and standard deviation scale (default 1).");
  m.def(
      "multivariate_normal",
      [](nb::handle mean, nb::handle cov, nb::handle shape, nb::handle dtype, nb::handle key, nb::handle stream) {
        const char* api = "multivariate_normal";
        return kiln::random::multivariate_normal(arr(mean, api), arr(cov, api), shape_arg(shape, api),
                                                 dt_or(dtype, float32, api), key_or_next(key), S(stream));
      },
      "mean"_a, "cov"_a, "shape"_a = nb::make_tuple(), "dtype"_a.none() = float32, "key"_a.none() = nb::none(),
      KILN_STREAM, "Samples of the multivariate normal with the given mean (..., n) and covariance (..., n, n).");
  m.def(
      "randint",
      [](nb::handle low, nb::handle high, nb::handle shape, nb::handle dtype, nb::handle key, nb::handle stream) {
        const char* api = "randint";
        return kiln::random::randint(bound(low, api), bound(high, api), shape_arg(shape, api),
                                     dt_or(dtype, int32, api), key_or_next(key), S(stream));
      },
      "low"_a, "high"_a, "shape"_a = nb::make_tuple(), "dtype"_a.none() = int32, "key"_a.none() = nb::none(),
      KILN_STREAM, "Random integers in [low, high).");
  m.def(
      "bernoulli",
      [](nb::handle p, nb::handle shape, nb::handle key, nb::handle stream) {
        array pa = bound(p, "bernoulli");
        if (shape.is_none()) return kiln::random::bernoulli(pa, key_or_next(key), S(stream));
        return kiln::random::bernoulli(pa, shape_arg(shape, "bernoulli"), key_or_next(key), S(stream));
      },
      "p"_a = 0.5, "shape"_a.none() = nb::none(), "key"_a.none() = nb::none(), KILN_STREAM,
      "Booleans that are true with probability p (shape: p's shape by default).");
  m.def(
      "truncated_normal",
      [](nb::handle lower, nb::handle upper, nb::handle shape, nb::handle dtype, nb::handle key, nb::handle stream) {
        const char* api = "truncated_normal";
        array lo = bound(lower, api), hi = bound(upper, api);
        Dtype dt = dt_or(dtype, float32, api);
        if (shape.is_none()) return kiln::random::truncated_normal(lo, hi, dt, key_or_next(key), S(stream));
        return kiln::random::truncated_normal(lo, hi, shape_arg(shape, api), dt, key_or_next(key), S(stream));
      },
      "lower"_a, "upper"_a, "shape"_a.none() = nb::none(), "dtype"_a.none() = float32, "key"_a.none() = nb::none(),
      KILN_STREAM, "Standard normal samples truncated to [lower, upper].");
  m.def(
      "gumbel",
      [](nb::handle shape, nb::handle dtype, nb::handle key, nb::handle stream) {
        return kiln::random::gumbel(shape_arg(shape, "gumbel"), dt_or(dtype, float32, "gumbel"), key_or_next(key),
                                    S(stream));
      },
      "shape"_a = nb::make_tuple(), "dtype"_a.none() = float32, "key"_a.none() = nb::none(), KILN_STREAM,
      "Samples of the standard Gumbel distribution.");
  m.def(
      "categorical",
      [](nb::handle logits, int axis, nb::handle shape, std::optional<int> num_samples, nb::handle key,
         nb::handle stream) {
        const char* api = "categorical";
        array l = arr(logits, api);
        if (!shape.is_none() && num_samples) {
          throw std::invalid_argument("[categorical] At most one of shape and num_samples may be given, found both.");
        }
        if (!shape.is_none()) return kiln::random::categorical(l, axis, shape_arg(shape, api), key_or_next(key), S(stream));
        if (num_samples) return kiln::random::categorical(l, axis, *num_samples, key_or_next(key), S(stream));
        return kiln::random::categorical(l, axis, key_or_next(key), S(stream));
      },
      "logits"_a, "axis"_a = -1, "shape"_a.none() = nb::none(), "num_samples"_a.none() = nb::none(),
      "key"_a.none() = nb::none(), KILN_STREAM, "Samples of the categorical distribution of unnormalised log-probabilities.");
  m.def(
      "laplace",
      [](nb::handle shape, nb::handle dtype, float loc, float scale, nb::handle key, nb::handle stream) {
        return kiln::random::laplace(shape_arg(shape, "laplace"), dt_or(dtype, float32, "laplace"), loc, scale,
                                     key_or_next(key), S(stream));
      },
      "shape"_a = nb::make_tuple(), "dtype"_a.none() = float32, "loc"_a = 0.0f, "scale"_a = 1.0f,
      "key"_a.none() = nb::none(), KILN_STREAM, "Samples of the Laplace distribution.");
  m.def(
      "permutation",
      [](nb::handle x, int axis, nb::handle key, nb::handle stream) {
        if (is_int(x)) return kiln::random::permutation(nb::cast<int>(x), key_or_next(key), S(stream));
        return kiln::random::permutation(arr(x, "permutation"), axis, key_or_next(key), S(stream));
      },
      "x"_a, "axis"_a = 0, "key"_a.none() = nb::none(), KILN_STREAM,
      "A random permutation of arange(x), or x shuffled along an axis.");
}

}  // namespace kiln::py
