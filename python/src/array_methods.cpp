// kiln.array methods that mirror ops (a.sum(), a.reshape(2, 3), a.transpose(1, 0), a.real, ...), with
// MLX's parameter names; they share the op forms of ops_common.h with the module functions.
#include "ops_common.h"

namespace kiln::py {

namespace {

const NamedReduce* find_reduce(const char* name) {
  for (const auto& d : reductions()) {
    if (std::string(d.name) == name) return &d;
  }
  return nullptr;
}
const NamedScan* find_scan(const char* name) {
  for (const auto& d : scans()) {
    if (std::string(d.name) == name) return &d;
  }
  return nullptr;
}

}  // namespace

void init_array_methods(nb::class_<array>& cls) {
  // ---- unary ----
  const NamedUnary unary[] = {
      {"abs", [](const array& a, StreamOrDevice s) { return abs(a, s); }, "See kiln.abs."},
      {"conj", [](const array& a, StreamOrDevice s) { return conjugate(a, s); }, "See kiln.conj."},
      {"cos", [](const array& a, StreamOrDevice s) { return cos(a, s); }, "See kiln.cos."},
      {"exp", [](const array& a, StreamOrDevice s) { return exp(a, s); }, "See kiln.exp."},
      {"log", [](const array& a, StreamOrDevice s) { return log(a, s); }, "See kiln.log."},
      {"log10", [](const array& a, StreamOrDevice s) { return log10(a, s); }, "See kiln.log10."},
      {"log1p", [](const array& a, StreamOrDevice s) { return log1p(a, s); }, "See kiln.log1p."},
      {"log2", [](const array& a, StreamOrDevice s) { return log2(a, s); }, "See kiln.log2."},
      {"reciprocal", [](const array& a, StreamOrDevice s) { return reciprocal(a, s); }, "See kiln.reciprocal."},
      {"rsqrt", [](const array& a, StreamOrDevice s) { return rsqrt(a, s); }, "See kiln.rsqrt."},
      {"sin", [](const array& a, StreamOrDevice s) { return sin(a, s); }, "See kiln.sin."},
      {"sqrt", [](const array& a, StreamOrDevice s) { return sqrt(a, s); }, "See kiln.sqrt."},
      {"square", [](const array& a, StreamOrDevice s) { return square(a, s); }, "See kiln.square."},
  };
  for (const auto& d : unary) {
    UnaryFn fn = d.fn;
    cls.def(d.name, [fn](const array& a, nb::handle stream) { return fn(a, S(stream)); }, nb::kw_only(), KILN_STREAM,
            d.doc);
  }
  cls.def_prop_ro("real", [](const array& a) { return real(a); }, "The real part (a itself for real arrays).");
  cls.def_prop_ro("imag", [](const array& a) { return imag(a); }, "The imaginary part (zeros for real arrays).");

  // ---- reductions ----
  for (const char* name : {"all", "any", "sum", "prod", "min", "max", "mean", "logsumexp"}) {
    const NamedReduce* d = find_reduce(name);
    ReduceFn fn = d->fn;
    cls.def(
        name,
        [fn, name](const array& a, nb::handle axis, bool keepdims, nb::handle stream) {
          return fn(a, axes_arg(axis, name), keepdims, S(stream));
        },
        "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), KILN_STREAM, "See the function of this name.");
  }
  cls.def(
      "var",
      [](const array& a, nb::handle axis, bool keepdims, int ddof, nb::handle stream) {
        return var_op(a, axes_arg(axis, "var"), keepdims, ddof, S(stream));
      },
      "axis"_a.none() = nb::none(), "keepdims"_a = false, "ddof"_a = 0, nb::kw_only(), KILN_STREAM, "See kiln.var.");
  cls.def(
      "std",
      [](const array& a, nb::handle axis, bool keepdims, int ddof, nb::handle stream) {
        return std_op(a, axes_arg(axis, "std"), keepdims, ddof, S(stream));
      },
      "axis"_a.none() = nb::none(), "keepdims"_a = false, "ddof"_a = 0, nb::kw_only(), KILN_STREAM, "See kiln.std.");
  cls.def(
      "argmin",
      [](const array& a, std::optional<int> axis, bool keepdims, nb::handle stream) {
        return argmin_op(a, axis, keepdims, S(stream));
      },
      "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), KILN_STREAM, "See kiln.argmin.");
  cls.def(
      "argmax",
      [](const array& a, std::optional<int> axis, bool keepdims, nb::handle stream) {
        return argmax_op(a, axis, keepdims, S(stream));
      },
      "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), KILN_STREAM, "See kiln.argmax.");
  for (const char* name : {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}) {
    ScanFn fn = find_scan(name)->fn;
    cls.def(
        name,
        [fn](const array& a, std::optional<int> axis, bool reverse, bool inclusive, nb::handle stream) {
          return fn(a, axis, reverse, inclusive, S(stream));
        },
        "axis"_a.none() = nb::none(), nb::kw_only(), "reverse"_a = false, "inclusive"_a = true, KILN_STREAM,
        "See the function of this name.");
  }

  // ---- shapes ----
  cls.def(
      "reshape",
      [](const array& a, const nb::args& shape, nb::handle stream) {
        auto v = varargs_ints(shape, "reshape", "the shape");
        return reshape(a, Shape(v.begin(), v.end()), S(stream));
      },
      "shape"_a, nb::kw_only(), KILN_STREAM, "See kiln.reshape; the shape is a tuple or separate ints.");
  cls.def(
      "transpose",
      [](const array& a, const nb::args& axes, nb::handle stream) {
        if (axes.size() == 0) return transpose(a, S(stream));
        return transpose(a, varargs_ints(axes, "transpose", "the axes"), S(stream));
      },
      "axes"_a, nb::kw_only(), KILN_STREAM, "See kiln.transpose; the axes are a tuple or separate ints.");
  cls.def(
      "flatten",
      [](const array& a, int start_axis, int end_axis, nb::handle stream) {
        return flatten(a, start_axis, end_axis, S(stream));
      },
      "start_axis"_a = 0, "end_axis"_a = -1, nb::kw_only(), KILN_STREAM, "See kiln.flatten.");
  cls.def(
      "squeeze", [](const array& a, nb::handle axis, nb::handle stream) { return squeeze_op(a, axis, S(stream)); },
      "axis"_a.none() = nb::none(), nb::kw_only(), KILN_STREAM, "See kiln.squeeze.");
  cls.def(
      "swapaxes",
      [](const array& a, int axis1, int axis2, nb::handle stream) { return swapaxes(a, axis1, axis2, S(stream)); },
      "axis1"_a, "axis2"_a, nb::kw_only(), KILN_STREAM, "See kiln.swapaxes.");
  cls.def(
      "moveaxis",
      [](const array& a, int source, int destination, nb::handle stream) {
        return moveaxis(a, source, destination, S(stream));
      },
      "source"_a, "destination"_a, nb::kw_only(), KILN_STREAM, "See kiln.moveaxis.");
  cls.def(
      "split",
      [](const array& a, nb::handle ios, int axis, nb::handle stream) { return split_op(a, ios, axis, S(stream)); },
      "indices_or_sections"_a, "axis"_a = 0, nb::kw_only(), KILN_STREAM, "See kiln.split.");
  cls.def(
      "diagonal",
      [](const array& a, int offset, int axis1, int axis2, nb::handle stream) {
        return diagonal(a, offset, axis1, axis2, S(stream));
      },
      "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, KILN_STREAM, "See kiln.diagonal.");
  cls.def(
      "diag", [](const array& a, int k, nb::handle stream) { return diag(a, k, S(stream)); }, "k"_a = 0, nb::kw_only(),
      KILN_STREAM, "See kiln.diag.");
  cls.def(
      "round", [](const array& a, int decimals, nb::handle stream) { return round_op(a, decimals, S(stream)); },
      "decimals"_a = 0, nb::kw_only(), KILN_STREAM, "See kiln.round.");
  cls.def(
      "view", [](const array& a, const Dtype& dtype, nb::handle stream) { return view(a, dtype, S(stream)); },
      "dtype"_a, nb::kw_only(), KILN_STREAM, "See kiln.view.");
}

}  // namespace kiln::py
