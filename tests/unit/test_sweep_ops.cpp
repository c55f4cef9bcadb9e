// The reference sweep's op table (see sweep_ops.h): one kiln call per op name of the manifest.
#include <cmath>

#include "unit/sweep_ops.h"

namespace sweep {

namespace {

Arrays one(mx::array a) { return {std::move(a)}; }

// Reductions with an optional axes list.
template <typename F, typename G>
Arrays reduce(F with_axes, G all_axes, const Arrays& x, const json& p) {
  bool kd = gb(p, "keepdims");
  if (has(p, "axes")) return one(with_axes(x[0], gv(p, "axes"), kd));
  return one(all_axes(x[0], kd));
}

}  // namespace

const std::map<std::string, OpFn>& ops() {
  static const std::map<std::string, OpFn> table = [] {
    std::map<std::string, OpFn> t;
    using A = const Arrays&;
    using P = const json&;
    // ---- element-wise
#define UN(name, fn) t[name] = [](A x, P) { return one(fn(x[0])); };
    UN("abs", mx::abs) UN("negative", mx::negative) UN("sign", mx::sign) UN("square", mx::square)
    UN("floor", mx::floor) UN("ceil", mx::ceil) UN("logical_not", mx::logical_not)
    UN("bitwise_invert", mx::bitwise_invert) UN("conjugate", mx::conjugate) UN("real", mx::real)
    UN("imag", mx::imag) UN("exp", mx::exp) UN("expm1", mx::expm1) UN("log1p", mx::log1p) UN("sin", mx::sin)
    UN("cos", mx::cos) UN("tan", mx::tan) UN("sinh", mx::sinh) UN("cosh", mx::cosh) UN("tanh", mx::tanh)
    UN("arcsin", mx::arcsin) UN("arccos", mx::arccos) UN("arctan", mx::arctan) UN("arcsinh", mx::arcsinh)
    UN("arccosh", mx::arccosh) UN("arctanh", mx::arctanh) UN("sigmoid", mx::sigmoid) UN("erf", mx::erf)
    UN("erfinv", mx::erfinv) UN("log", mx::log) UN("log2", mx::log2) UN("log10", mx::log10) UN("sqrt", mx::sqrt)
    UN("rsqrt", mx::rsqrt) UN("reciprocal", mx::reciprocal) UN("degrees", mx::degrees) UN("radians", mx::radians)
    UN("isnan", mx::isnan) UN("isinf", mx::isinf) UN("isfinite", mx::isfinite) UN("isposinf", mx::isposinf)
    UN("isneginf", mx::isneginf) UN("stop_gradient", mx::stop_gradient)
#undef UN
    t["round"] = [](A x, P p) { return one(mx::round(x[0], gi(p, "decimals"))); };
    t["kiln.copy"] = [](A x, P) { return one(mx::copy(x[0])); };
    t["astype"] = [](A x, P p) { return one(mx::astype(x[0], gd(p))); };
    t["view"] = [](A x, P p) { return one(mx::view(x[0], gd(p))); };
    t["nan_to_num"] = [](A x, P p) {
      auto o = [&](const char* k) { return has(p, k) ? std::optional<float>(gf(p, k)) : std::nullopt; };
      return one(mx::nan_to_num(x[0], gf(p, "nan", 0.f), o("posinf"), o("neginf")));
    };
#define BIN(name, fn) t[name] = [](A x, P) { return one(fn(x[0], x[1])); };
    BIN("add", mx::add) BIN("subtract", mx::subtract) BIN("multiply", mx::multiply) BIN("divide", mx::divide)
    BIN("floor_divide", mx::floor_divide) BIN("remainder", mx::remainder) BIN("power", mx::power)
    BIN("maximum", mx::maximum) BIN("minimum", mx::minimum) BIN("arctan2", mx::arctan2)
    BIN("logaddexp", mx::logaddexp) BIN("equal", mx::equal) BIN("not_equal", mx::not_equal)
    BIN("greater", mx::greater) BIN("greater_equal", mx::greater_equal) BIN("less", mx::less)
    BIN("less_equal", mx::less_equal) BIN("logical_and", mx::logical_and) BIN("logical_or", mx::logical_or)
    BIN("bitwise_and", mx::bitwise_and) BIN("bitwise_or", mx::bitwise_or) BIN("bitwise_xor", mx::bitwise_xor)
    BIN("left_shift", mx::left_shift) BIN("right_shift", mx::right_shift)
#undef BIN
    t["divmod"] = [](A x, P) { return mx::divmod(x[0], x[1]); };
    // The MLX 0.32.x nodes (sweep_newer): FloorDivide and the flooring DivMod, built from their registry
    // rows after the same promotion and broadcasting as the ops.
    auto node = [](const char* prim, A x, mx::State st, int outs) {
      auto t = mx::promote_types(x[0].dtype(), x[1].dtype());
      auto b = mx::broadcast_arrays({mx::astype(x[0], t), mx::astype(x[1], t)});
      if (std::string(prim) == "DivMod" && t == mx::complex64) {
        throw std::invalid_argument("[divmod] Complex type not supported.");
      }
      std::vector<mx::ArraySpec> specs(outs, mx::ArraySpec{b[0].shape(), t});
      return mx::make_arrays(mx::registry::get(prim), std::move(st), {b[0], b[1]}, specs);
    };
    t["kiln.floor_divide_node"] = [node](A x, P) { return node("FloorDivide", x, {}, 1); };
    t["kiln.divmod_floor"] = [node](A x, P) { return node("DivMod", x, mx::State{true}, 2); };
    t["searchsorted"] = [](A x, P p) { return one(mx::searchsorted(x[0], x[1], gs(p, "side", "left"))); };
    t["array_equal"] = [](A x, P p) { return one(mx::array_equal(x[0], x[1], gb(p, "equal_nan"))); };
    t["isclose"] = [](A x, P p) {
      return one(mx::isclose(x[0], x[1], p["rtol"].get<double>(), p["atol"].get<double>(), gb(p, "equal_nan")));
    };
    t["allclose"] = [](A x, P p) {
      return one(mx::allclose(x[0], x[1], p["rtol"].get<double>(), p["atol"].get<double>(), gb(p, "equal_nan")));
    };
    t["where"] = [](A x, P) { return one(mx::where(x[0], x[1], x[2])); };
    t["clip"] = [](A x, P) { return one(mx::clip(x[0], x[1], x[2])); };
    // ---- reductions
#define RED(name, fn)                                                                                    \
  t[name] = [](A x, P p) {                                                                               \
    return reduce([](const mx::array& a, const std::vector<int>& ax, bool kd) { return fn(a, ax, kd); }, \
                  [](const mx::array& a, bool kd) { return fn(a, kd); }, x, p);                          \
  };
    RED("all", mx::all) RED("any", mx::any) RED("sum", mx::sum) RED("prod", mx::prod) RED("max", mx::max)
    RED("min", mx::min) RED("mean", mx::mean) RED("logsumexp", mx::logsumexp)
#undef RED
    t["var"] = [](A x, P p) {
      int dd = gi(p, "ddof");
      bool kd = gb(p, "keepdims");
      return one(has(p, "axes") ? mx::var(x[0], gv(p, "axes"), kd, dd) : mx::var(x[0], kd, dd));
    };
    t["std"] = [](A x, P p) {
      int dd = gi(p, "ddof");
      bool kd = gb(p, "keepdims");
      return one(has(p, "axes") ? mx::std(x[0], gv(p, "axes"), kd, dd) : mx::std(x[0], kd, dd));
    };
    t["argmin"] = [](A x, P p) {
      bool kd = gb(p, "keepdims");
      return one(has(p, "axis") ? mx::argmin(x[0], gi(p, "axis"), kd) : mx::argmin(x[0], kd));
    };
    t["argmax"] = [](A x, P p) {
      bool kd = gb(p, "keepdims");
      return one(has(p, "axis") ? mx::argmax(x[0], gi(p, "axis"), kd) : mx::argmax(x[0], kd));
    };
    t["softmax"] = [](A x, P p) {
      bool pr = gb(p, "precise");
      return one(has(p, "axes") ? mx::softmax(x[0], gv(p, "axes"), pr) : mx::softmax(x[0], pr));
    };
#define SCAN(name, fn)                                                                    \
  t[name] = [](A x, P p) {                                                                \
    bool rev = gb(p, "reverse"), inc = gb(p, "inclusive", true);                          \
    return one(has(p, "axis") ? fn(x[0], gi(p, "axis"), rev, inc) : fn(x[0], rev, inc)); \
  };
    SCAN("cumsum", mx::cumsum) SCAN("cumprod", mx::cumprod) SCAN("cummax", mx::cummax) SCAN("cummin", mx::cummin)
    SCAN("logcumsumexp", mx::logcumsumexp)
#undef SCAN
    // ---- shapes and views
    t["reshape"] = [](A x, P p) { return one(mx::reshape(x[0], gshape(p, "shape"))); };
    t["flatten"] = [](A x, P p) { return one(mx::flatten(x[0], gi(p, "start_axis", 0), gi(p, "end_axis", -1))); };
    t["unflatten"] = [](A x, P p) { return one(mx::unflatten(x[0], gi(p, "axis"), gshape(p, "shape"))); };
    t["squeeze"] = [](A x, P p) { return one(has(p, "axes") ? mx::squeeze(x[0], gv(p, "axes")) : mx::squeeze(x[0])); };
    t["expand_dims"] = [](A x, P p) { return one(mx::expand_dims(x[0], gv(p, "axes"))); };
    t["transpose"] = [](A x, P p) {
      return one(has(p, "axes") ? mx::transpose(x[0], gv(p, "axes")) : mx::transpose(x[0]));
    };
    t["swapaxes"] = [](A x, P p) { return one(mx::swapaxes(x[0], gi(p, "axis1"), gi(p, "axis2"))); };
    t["moveaxis"] = [](A x, P p) { return one(mx::moveaxis(x[0], gi(p, "source"), gi(p, "destination"))); };
    t["broadcast_to"] = [](A x, P p) { return one(mx::broadcast_to(x[0], gshape(p, "shape"))); };
    t["broadcast_arrays"] = [](A x, P) { return mx::broadcast_arrays(x); };
    t["as_strided"] = [](A x, P p) {
      return one(mx::as_strided(x[0], gshape(p, "shape"), p["strides"].get<mx::Strides>(),
                                p["offset"].get<size_t>()));
    };
    t["contiguous"] = [](A x, P p) { return one(mx::contiguous(x[0], gb(p, "allow_col_major"))); };
    t["atleast_1d"] = [](A x, P) { return one(mx::atleast_1d(x[0])); };
    t["atleast_2d"] = [](A x, P) { return one(mx::atleast_2d(x[0])); };
    t["atleast_3d"] = [](A x, P) { return one(mx::atleast_3d(x[0])); };
    t["slice"] = [](A x, P p) {
      return one(mx::slice(x[0], gshape(p, "start"), gshape(p, "stop"), gshape(p, "strides")));
    };
    t["slice_dynamic"] = [](A x, P p) { return one(mx::slice(x[0], x[1], gv(p, "axes"), gshape(p, "slice_size"))); };
    t["slice_update"] = [](A x, P p) {
      return one(mx::slice_update(x[0], x[1], gshape(p, "start"), gshape(p, "stop"), gshape(p, "strides")));
    };
    t["slice_update_dynamic"] = [](A x, P p) { return one(mx::slice_update(x[0], x[1], x[2], gv(p, "axes"))); };
    t["split"] = [](A x, P p) {
      int ax = gi(p, "axis", 0);
      if (p["indices"].is_number()) return mx::split(x[0], p["indices"].get<int>(), ax);
      return mx::split(x[0], gshape(p, "indices"), ax);
    };
    t["concatenate"] = [](A x, P p) { return one(mx::concatenate(x, gi(p, "axis", 0))); };
    t["stack"] = [](A x, P p) { return one(mx::stack(x, gi(p, "axis", 0))); };
    t["tile"] = [](A x, P p) { return one(mx::tile(x[0], gv(p, "reps"))); };
    t["repeat"] = [](A x, P p) {
      return one(has(p, "axis") ? mx::repeat(x[0], gi(p, "repeats"), gi(p, "axis")) : mx::repeat(x[0], gi(p, "repeats")));
    };
    t["roll"] = [](A x, P p) {
      if (p["shift"].is_number()) {
        return one(has(p, "axis") ? mx::roll(x[0], gi(p, "shift"), gi(p, "axis")) : mx::roll(x[0], gi(p, "shift")));
      }
      return one(mx::roll(x[0], gshape(p, "shift"), gv(p, "axis")));
    };
    t["pad"] = [](A x, P p) {
      std::vector<std::pair<int, int>> w;
      for (auto& e : p["pad_width"]) w.push_back({e[0].get<int>(), e[1].get<int>()});
      return one(mx::pad(x[0], w, x.size() > 1 ? x[1] : mx::array(0), gs(p, "mode", "constant")));
    };
    t["meshgrid"] = [](A x, P p) { return mx::meshgrid(x, gb(p, "sparse"), gs(p, "indexing", "xy")); };
    t["tril"] = [](A x, P p) { return one(mx::tril(x[0], gi(p, "k"))); };
    t["triu"] = [](A x, P p) { return one(mx::triu(x[0], gi(p, "k"))); };
    t["arange"] = [](A, P p) {
      return one(mx::arange(p["start"].get<double>(), p["stop"].get<double>(), p["step"].get<double>(), gd(p)));
    };
    t["linspace"] = [](A, P p) {
      return one(mx::linspace(p["start"].get<double>(), p["stop"].get<double>(), gi(p, "num"), gd(p)));
    };
    t["full"] = [](A x, P p) { return one(mx::full(gshape(p, "shape"), x[0], gd(p))); };
    t["zeros"] = [](A, P p) { return one(mx::zeros(gshape(p, "shape"), gd(p))); };
    t["ones"] = [](A, P p) { return one(mx::ones(gshape(p, "shape"), gd(p))); };
    t["zeros_like"] = [](A x, P) { return one(mx::zeros_like(x[0])); };
    t["ones_like"] = [](A x, P) { return one(mx::ones_like(x[0])); };
    t["eye"] = [](A, P p) { return one(mx::eye(gi(p, "n"), gi(p, "m", gi(p, "n")), gi(p, "k"), gd(p))); };
    t["identity"] = [](A, P p) { return one(mx::identity(gi(p, "n"), gd(p))); };
    t["tri"] = [](A, P p) { return one(mx::tri(gi(p, "n"), gi(p, "m", gi(p, "n")), gi(p, "k"), gd(p))); };
    // ---- indexing
    t["take"] = [](A x, P p) { return one(has(p, "axis") ? mx::take(x[0], x[1], gi(p, "axis")) : mx::take(x[0], x[1])); };
    t["take_along_axis"] = [](A x, P p) {  // no axis: of the flattened array (indices as given)
      if (!has(p, "axis")) return one(mx::take_along_axis(mx::reshape(x[0], {-1}), x[1], 0));
      return one(mx::take_along_axis(x[0], x[1], gi(p, "axis")));
    };
    t["put_along_axis"] = [](A x, P p) { return one(mx::put_along_axis(x[0], x[1], x[2], gi(p, "axis"))); };
    t["kiln.scatter_add_axis"] = [](A x, P p) { return one(mx::scatter_add_axis(x[0], x[1], x[2], gi(p, "axis"))); };
    t["gather"] = [](A x, P p) {
      return one(mx::gather(x[0], Arrays(x.begin() + 1, x.end()), gv(p, "axes"), gshape(p, "slice_sizes")));
    };
#define SCAT(name, fn) \
  t[name] = [](A x, P p) { return one(fn(x[0], Arrays(x.begin() + 1, x.end() - 1), x.back(), gv(p, "axes"))); };
    SCAT("scatter", mx::scatter) SCAT("scatter_add", mx::scatter_add) SCAT("scatter_prod", mx::scatter_prod)
    SCAT("scatter_max", mx::scatter_max) SCAT("scatter_min", mx::scatter_min)
#undef SCAT
    t["masked_scatter"] = [](A x, P) { return one(mx::masked_scatter(x[0], x[1], x[2])); };
    // ---- sorting
    t["sort"] = [](A x, P p) { return one(has(p, "axis") ? mx::sort(x[0], gi(p, "axis")) : mx::sort(x[0])); };
    t["argsort"] = [](A x, P p) { return one(has(p, "axis") ? mx::argsort(x[0], gi(p, "axis")) : mx::argsort(x[0])); };
    t["partition"] = [](A x, P p) { return one(mx::partition(x[0], gi(p, "kth"), gi(p, "axis", -1))); };
    t["argpartition"] = [](A x, P p) { return one(mx::argpartition(x[0], gi(p, "kth"), gi(p, "axis", -1))); };
    t["topk"] = [](A x, P p) { return one(mx::topk(x[0], gi(p, "k"), gi(p, "axis", -1))); };
    // ---- products
    t["matmul"] = [](A x, P) { return one(mx::matmul(x[0], x[1])); };
    t["addmm"] = [](A x, P p) { return one(mx::addmm(x[0], x[1], x[2], gf(p, "alpha", 1), gf(p, "beta", 1))); };
    t["block_masked_mm"] = [](A x, P p) {
      std::string m = gs(p, "masks");
      size_t k = 2;
      auto next = [&](char c) { return m.find(c) != std::string::npos ? std::optional<mx::array>(x[k++]) : std::nullopt; };
      auto mo = next('o');
      auto ml = next('l');
      auto mr = next('r');
      return one(mx::block_masked_mm(x[0], x[1], gi(p, "block_size"), mo, ml, mr));
    };
    t["gather_mm"] = [](A x, P p) {
      return one(mx::gather_mm(x[0], x[1], x.size() > 2 ? std::optional<mx::array>(x[2]) : std::nullopt,
                               x.size() > 3 ? std::optional<mx::array>(x[3]) : std::nullopt, gb(p, "sorted")));
    };
    t["hadamard_transform"] = [](A x, P p) {
      return one(mx::hadamard_transform(x[0], has(p, "scale") ? std::optional<float>(gf(p, "scale")) : std::nullopt));
    };
    t["tensordot"] = [](A x, P p) {
      if (p["axes"].is_number()) return one(mx::tensordot(x[0], x[1], gi(p, "axes")));
      return one(mx::tensordot(x[0], x[1], p["axes"][0].get<std::vector<int>>(), p["axes"][1].get<std::vector<int>>()));
    };
    t["inner"] = [](A x, P) { return one(mx::inner(x[0], x[1])); };
    t["outer"] = [](A x, P) { return one(mx::outer(x[0], x[1])); };
    t["kron"] = [](A x, P) { return one(mx::kron(x[0], x[1])); };
    // ---- convolutions
    t["conv1d"] = [](A x, P p) {
      return one(mx::conv1d(x[0], x[1], gi(p, "stride", 1), gi(p, "padding", 0), gi(p, "dilation", 1), gi(p, "groups", 1)));
    };
    t["conv2d"] = [](A x, P p) {
      return one(mx::conv2d(x[0], x[1], g2(p, "stride", 1), g2(p, "padding", 0), g2(p, "dilation", 1), gi(p, "groups", 1)));
    };
    t["conv3d"] = [](A x, P p) {
      return one(mx::conv3d(x[0], x[1], g3(p, "stride", 1), g3(p, "padding", 0), g3(p, "dilation", 1), gi(p, "groups", 1)));
    };
    t["conv_transpose1d"] = [](A x, P p) {
      return one(mx::conv_transpose1d(x[0], x[1], gi(p, "stride", 1), gi(p, "padding", 0), gi(p, "dilation", 1),
                                      gi(p, "output_padding", 0), gi(p, "groups", 1)));
    };
    t["conv_transpose2d"] = [](A x, P p) {
      return one(mx::conv_transpose2d(x[0], x[1], g2(p, "stride", 1), g2(p, "padding", 0), g2(p, "dilation", 1),
                                      g2(p, "output_padding", 0), gi(p, "groups", 1)));
    };
    t["conv_transpose3d"] = [](A x, P p) {
      return one(mx::conv_transpose3d(x[0], x[1], g3(p, "stride", 1), g3(p, "padding", 0), g3(p, "dilation", 1),
                                      g3(p, "output_padding", 0), gi(p, "groups", 1)));
    };
    t["conv_general"] = [](A x, P p) {
      int nd = static_cast<int>(x[0].ndim()) - 2;
      return one(mx::conv_general(x[0], x[1], gints(p, "stride", 1, nd), gints(p, "padding_lo", 0, nd),
                                  gints(p, "padding_hi", 0, nd), gints(p, "kernel_dilation", 1, nd),
                                  gints(p, "input_dilation", 1, nd), gi(p, "groups", 1), gb(p, "flip")));
    };
    // ---- fft
    t["fft.fft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::fft(x[0], gi(p, "n"), gi(p, "axis", -1)) : mx::fft::fft(x[0], gi(p, "axis", -1)));
    };
    t["fft.ifft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::ifft(x[0], gi(p, "n"), gi(p, "axis", -1)) : mx::fft::ifft(x[0], gi(p, "axis", -1)));
    };
    t["fft.rfft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::rfft(x[0], gi(p, "n"), gi(p, "axis", -1)) : mx::fft::rfft(x[0], gi(p, "axis", -1)));
    };
    t["fft.irfft"] = [](A x, P p) {
      return one(has(p, "n") ? mx::fft::irfft(x[0], gi(p, "n"), gi(p, "axis", -1))
                             : mx::fft::irfft(x[0], gi(p, "axis", -1)));
    };
    using NdFn = mx::array (*)(const mx::array&, const mx::Shape&, const std::vector<int>&, mx::StreamOrDevice);
    using NdAx = mx::array (*)(const mx::array&, const std::vector<int>&, mx::StreamOrDevice);
    using NdAll = mx::array (*)(const mx::array&, mx::StreamOrDevice);
    auto nd = [](NdFn with_s, NdAx with_axes, NdAll all, bool two) -> OpFn {
      return [=](A x, P p) {
        std::vector<int> axes = has(p, "axes") ? gv(p, "axes") : std::vector<int>{};
        if (!has(p, "axes") && two) axes = {-2, -1};
        if (has(p, "s")) return one(with_s(x[0], gshape(p, "s"), axes, {}));
        if (has(p, "axes") || two) return one(with_axes(x[0], axes, {}));
        return one(all(x[0], {}));
      };
    };
    t["fft.fftn"] = nd(mx::fft::fftn, mx::fft::fftn, mx::fft::fftn, false);
    t["fft.ifftn"] = nd(mx::fft::ifftn, mx::fft::ifftn, mx::fft::ifftn, false);
    t["fft.rfftn"] = nd(mx::fft::rfftn, mx::fft::rfftn, mx::fft::rfftn, false);
    t["fft.irfftn"] = nd(mx::fft::irfftn, mx::fft::irfftn, mx::fft::irfftn, false);
    t["fft.fft2"] = nd(mx::fft::fftn, mx::fft::fftn, mx::fft::fftn, true);
    t["fft.ifft2"] = nd(mx::fft::ifftn, mx::fft::ifftn, mx::fft::ifftn, true);
    t["fft.rfft2"] = nd(mx::fft::rfftn, mx::fft::rfftn, mx::fft::rfftn, true);
    t["fft.irfft2"] = nd(mx::fft::irfftn, mx::fft::irfftn, mx::fft::irfftn, true);
    t["fft.fftshift"] = [](A x, P p) {
      return one(has(p, "axes") ? mx::fft::fftshift(x[0], gv(p, "axes")) : mx::fft::fftshift(x[0]));
    };
    t["fft.ifftshift"] = [](A x, P p) {
      return one(has(p, "axes") ? mx::fft::ifftshift(x[0], gv(p, "axes")) : mx::fft::ifftshift(x[0]));
    };
    // ---- linalg
    t["linalg.norm"] = [](A x, P p) {
      std::optional<std::vector<int>> ax = has(p, "axis") ? std::optional(gv(p, "axis")) : std::nullopt;
      bool kd = gb(p, "keepdims");
      if (!has(p, "ord")) return one(mx::linalg::norm(x[0], ax, kd));
      if (p["ord"].is_string()) {
        auto o = p["ord"].get<std::string>();  // JSON has no infinity
        if (o == "inf" || o == "-inf") return one(mx::linalg::norm(x[0], o == "inf" ? INFINITY : -INFINITY, ax, kd));
        return one(mx::linalg::norm(x[0], o, ax, kd));
      }
      return one(mx::linalg::norm(x[0], p["ord"].get<double>(), ax, kd));
    };
    t["linalg.qr"] = [](A x, P) {
      auto [q, r] = mx::linalg::qr(x[0]);
      return Arrays{q, r};
    };
    t["linalg.svd"] = [](A x, P p) { return mx::linalg::svd(x[0], gb(p, "compute_uv", true)); };
    t["linalg.inv"] = [](A x, P) { return one(mx::linalg::inv(x[0])); };
    t["linalg.tri_inv"] = [](A x, P p) { return one(mx::linalg::tri_inv(x[0], gb(p, "upper"))); };
    t["linalg.cholesky"] = [](A x, P p) { return one(mx::linalg::cholesky(x[0], gb(p, "upper"))); };
    t["linalg.cholesky_inv"] = [](A x, P p) { return one(mx::linalg::cholesky_inv(x[0], gb(p, "upper"))); };
    t["linalg.pinv"] = [](A x, P) { return one(mx::linalg::pinv(x[0])); };
    t["linalg.lu"] = [](A x, P) { return mx::linalg::lu(x[0]); };
    t["linalg.lu_factor"] = [](A x, P) {
      auto [lu, piv] = mx::linalg::lu_factor(x[0]);
      return Arrays{lu, piv};
    };
    t["linalg.solve"] = [](A x, P) { return one(mx::linalg::solve(x[0], x[1])); };
    t["linalg.solve_triangular"] = [](A x, P p) {
      return one(mx::linalg::solve_triangular(x[0], x[1], gb(p, "upper")));
    };
    t["linalg.cross"] = [](A x, P p) { return one(mx::linalg::cross(x[0], x[1], gi(p, "axis", -1))); };
    t["linalg.eig"] = [](A x, P) {
      auto [w, v] = mx::linalg::eig(x[0]);
      return Arrays{w, v};
    };
    t["linalg.eigvals"] = [](A x, P) { return one(mx::linalg::eigvals(x[0])); };
    t["linalg.eigh"] = [](A x, P p) {
      auto [w, v] = mx::linalg::eigh(x[0], gs(p, "UPLO", "L"));
      return Arrays{w, v};
    };
    t["linalg.eigvalsh"] = [](A x, P p) { return one(mx::linalg::eigvalsh(x[0], gs(p, "UPLO", "L"))); };
    // ---- quantization
    t["quantize"] = [](A x, P p) {
      return mx::quantize(x[0], gopt(p, "group_size"), gopt(p, "bits"), gs(p, "mode", "affine"));
    };
    t["dequantize"] = [](A x, P p) {
      return one(mx::dequantize(x[0], x[1], x.size() > 2 ? std::optional<mx::array>(x[2]) : std::nullopt,
                                gopt(p, "group_size"), gopt(p, "bits"), gs(p, "mode", "affine"),
                                has(p, "dtype") ? std::optional<mx::Dtype>(gd(p)) : std::nullopt));
    };
    auto qmm = [](A x, P p) {
      bool aff = gs(p, "mode", "affine") == "affine";
      return one(mx::quantized_matmul(x[0], x[1], x[2], aff ? std::optional<mx::array>(x[3]) : std::nullopt,
                                      gb(p, "transpose", true), gopt(p, "group_size"), gopt(p, "bits"),
                                      gs(p, "mode", "affine")));
    };
    t["quantized_matmul"] = qmm;
    t["kiln.qmm_numpy"] = qmm;
    auto gqmm = [](A x, P p) {
      bool aff = gs(p, "mode", "affine") == "affine";
      size_t k = aff ? 4 : 3;
      return one(mx::gather_qmm(x[0], x[1], x[2], aff ? std::optional<mx::array>(x[3]) : std::nullopt, x[k], x[k + 1],
                                gb(p, "transpose", true), gopt(p, "group_size"), gopt(p, "bits"),
                                gs(p, "mode", "affine"), gb(p, "sorted")));
    };
    t["gather_qmm"] = gqmm;
    t["kiln.gather_qmm_numpy"] = gqmm;
    // ---- random (input 0 is the key)
    t["random.bits"] = [](A x, P p) { return one(mx::random::bits(gshape(p, "shape"), gi(p, "width", 4), x[0])); };
    t["kiln.random_bits_keys"] = [](A x, P p) {
      return Arrays{mx::make_array(mx::registry::get("RandomBits"), mx::State{p["shape"].get<std::vector<int32_t>>(),
                                                                             int32_t(gi(p, "width"))},
                                   {x[0]})};
    };
    t["random.split"] = [](A x, P p) { return one(mx::random::split(x[0], gi(p, "num", 2))); };
    t["random.uniform"] = [](A x, P p) { return one(mx::random::uniform(x[1], x[2], gshape(p, "shape"), gd(p), x[0])); };
    t["random.normal"] = [](A x, P p) {
      return one(mx::random::normal(gshape(p, "shape"), gd(p), gf(p, "loc", 0.f), gf(p, "scale", 1.f), x[0]));
    };
    t["random.randint"] = [](A x, P p) {
      return one(mx::random::randint(x[1], x[2], gshape(p, "shape"), gd(p, "dtype", mx::int32), x[0]));
    };
    t["random.bernoulli"] = [](A x, P p) {
      return one(has(p, "shape") ? mx::random::bernoulli(x[1], gshape(p, "shape"), x[0]) : mx::random::bernoulli(x[1], x[0]));
    };
    t["random.truncated_normal"] = [](A x, P p) {
      return one(mx::random::truncated_normal(x[1], x[2], gshape(p, "shape"), gd(p), x[0]));
    };
    t["random.gumbel"] = [](A x, P p) { return one(mx::random::gumbel(gshape(p, "shape"), gd(p), x[0])); };
    t["random.categorical"] = [](A x, P p) {
      if (has(p, "num_samples")) return one(mx::random::categorical(x[1], gi(p, "axis", -1), gi(p, "num_samples"), x[0]));
      return one(mx::random::categorical(x[1], gi(p, "axis", -1), x[0]));
    };
    t["random.laplace"] = [](A x, P p) {
      return one(mx::random::laplace(gshape(p, "shape"), gd(p), gf(p, "loc", 0.f), gf(p, "scale", 1.f), x[0]));
    };
    t["random.permutation"] = [](A x, P p) {
      if (x.size() > 1) return one(mx::random::permutation(x[1], gi(p, "axis", 0), x[0]));
      return one(mx::random::permutation(gi(p, "n"), x[0]));
    };
    t["random.multivariate_normal"] = [](A x, P p) {
      return one(mx::random::multivariate_normal(x[1], x[2], gshape(p, "shape"), gd(p), x[0]));
    };
    // ---- fused
    t["fast.rms_norm"] = [](A x, P p) {
      return one(mx::fast::rms_norm(x[0], x.size() > 1 ? std::optional<mx::array>(x[1]) : std::nullopt, gf(p, "eps")));
    };
    t["fast.layer_norm"] = [](A x, P p) {
      std::optional<mx::array> w, b;
      if (gb(p, "w")) w = x[1];
      if (gb(p, "b")) b = x.back();
      return one(mx::fast::layer_norm(x[0], w, b, gf(p, "eps")));
    };
    t["fast.rope"] = [](A x, P p) {
      std::optional<mx::array> freqs = gb(p, "freqs") ? std::optional<mx::array>(x.back()) : std::nullopt;
      std::optional<float> base = freqs ? std::nullopt : std::optional<float>(gf(p, "base"));
      if (gb(p, "offset_array")) {
        return one(mx::fast::rope(x[0], gi(p, "dims"), gb(p, "traditional"), base, gf(p, "scale"), x[1], freqs));
      }
      return one(mx::fast::rope(x[0], gi(p, "dims"), gb(p, "traditional"), base, gf(p, "scale"), gi(p, "offset"), freqs));
    };
    t["kiln.rope_inverse"] = [](A x, P p) {
      return one(mx::fast::detail::rope(x.back(), gi(p, "dims"), gb(p, "traditional"), gf(p, "base"), gf(p, "scale"),
                                        mx::array(gi(p, "offset")), std::nullopt, /*forward=*/false));
    };
    auto sdpa_args = [](A x, P p) {
      std::string mode = gs(p, "mask");
      size_t k = 3;
      std::optional<mx::array> mask, sinks;
      if (mode == "array") mask = x[k++];
      if (gb(p, "sinks")) sinks = x[k++];
      return std::make_tuple(mode == "causal" ? std::string("causal") : std::string(mode == "array" ? "array" : ""),
                             mask, sinks);
    };
    t["fast.scaled_dot_product_attention"] = [sdpa_args](A x, P p) {
      auto [mode, mask, sinks] = sdpa_args(x, p);
      return one(mx::fast::scaled_dot_product_attention(x[0], x[1], x[2], gf(p, "scale"), mode, mask, sinks));
    };
    t["kiln.sdpa_with_lse"] = [sdpa_args](A x, P p) {
      auto [mode, mask, sinks] = sdpa_args(x, p);
      return mx::fast::detail::scaled_dot_product_attention_with_lse(x[0], x[1], x[2], gf(p, "scale"), mode, mask,
                                                                     sinks);
    };
    t["kiln.rms_norm_vjp"] = [](A x, P p) { return mx::fast::detail::rms_norm_vjp(x[0], x[1], x[2], gf(p, "eps")); };
    t["kiln.layer_norm_vjp"] = [](A x, P p) {
      return mx::fast::detail::layer_norm_vjp(x[0], x[1], x[2], x[3], gf(p, "eps"));
    };
    // ---- graph utilities; nodes MLX emits only in shapeless traces, built directly
    t["depends"] = [](A x, P p) {
      int n = gi(p, "n");
      return mx::depends(Arrays(x.begin(), x.begin() + n), Arrays(x.begin() + n, x.end()));
    };
    t["kiln.broadcast_axes"] = [](A x, P p) {
      return Arrays{mx::make_array(mx::registry::get("BroadcastAxes"), mx::State{p["ignore_axes"].get<std::vector<int32_t>>()},
                                   x)};
    };
    t["kiln.number_of_elements"] = [](A x, P p) {
      return Arrays{mx::make_array(mx::registry::get("NumberOfElements"),
                                   mx::State{p["axes"].get<std::vector<int32_t>>(), gb(p, "inverted"), gd(p)}, {x[0]})};
    };
    return t;
  }();
  return table;
}

}  // namespace sweep
