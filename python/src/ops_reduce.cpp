// kiln ops, reduction family: sum, prod, min, max, all, any, mean, median, logsumexp, var, std,
// argmin / argmax, softmax, the cumulative scans and sorting.
#include "ops_common.h"

namespace kiln::py {

#define KILN_REDUCE(NAME)                                                                                  \
  [](const array& a, const std::optional<std::vector<int>>& axes, bool keepdims, StreamOrDevice s) {       \
    return axes ? NAME(a, *axes, keepdims, s) : NAME(a, keepdims, s);                                      \
  }
#define KILN_SCAN(NAME)                                                                                    \
  [](const array& a, std::optional<int> axis, bool reverse, bool inclusive, StreamOrDevice s) {            \
    return axis ? NAME(a, *axis, reverse, inclusive, s) : NAME(a, reverse, inclusive, s);                  \
  }

const std::vector<NamedReduce>& reductions() {
  static const std::vector<NamedReduce> v = {
      {"all", KILN_REDUCE(all), "Whether all elements along the axes are true (all axes by default)."},
      {"any", KILN_REDUCE(any), "Whether any element along the axes is true (all axes by default)."},
      {"sum", KILN_REDUCE(sum), "Sum over the axes (all axes by default)."},
      {"prod", KILN_REDUCE(prod), "Product over the axes (all axes by default)."},
      {"min", KILN_REDUCE(min), "Minimum over the axes (all axes by default)."},
      {"max", KILN_REDUCE(max), "Maximum over the axes (all axes by default)."},
      {"mean", KILN_REDUCE(mean), "Mean over the axes (all axes by default)."},
      {"median", KILN_REDUCE(median), "Median over the axes (all axes by default)."},
      {"logsumexp", KILN_REDUCE(logsumexp), "log(sum(exp(a))) over the axes, computed stably."},
  };
  return v;
}

const std::vector<NamedScan>& scans() {
  static const std::vector<NamedScan> v = {
      {"cumsum", KILN_SCAN(cumsum), "Cumulative sum along an axis (of the flattened array when axis is None)."},
      {"cumprod", KILN_SCAN(cumprod), "Cumulative product along an axis (of the flattened array when axis is None)."},
      {"cummax", KILN_SCAN(cummax), "Cumulative maximum along an axis (of the flattened array when axis is None)."},
      {"cummin", KILN_SCAN(cummin), "Cumulative minimum along an axis (of the flattened array when axis is None)."},
      {"logcumsumexp", KILN_SCAN(logcumsumexp),
       "Cumulative log-sum-exp along an axis (of the flattened array when axis is None)."},
  };
  return v;
}

array var_op(const array& a, const std::optional<std::vector<int>>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return axes ? var(a, *axes, keepdims, ddof, s) : var(a, keepdims, ddof, s);
}
array std_op(const array& a, const std::optional<std::vector<int>>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return axes ? kiln::std(a, *axes, keepdims, ddof, s) : kiln::std(a, keepdims, ddof, s);
}
array argmin_op(const array& a, std::optional<int> axis, bool keepdims, StreamOrDevice s) {
  return axis ? argmin(a, *axis, keepdims, s) : argmin(a, keepdims, s);
}
array argmax_op(const array& a, std::optional<int> axis, bool keepdims, StreamOrDevice s) {
  return axis ? argmax(a, *axis, keepdims, s) : argmax(a, keepdims, s);
}

namespace {

using SortFn = array (*)(const array&, std::optional<int>, StreamOrDevice);
using KthFn = array (*)(const array&, int, std::optional<int>, StreamOrDevice);

}  // namespace

void init_ops_reduce(nb::module_& m) {
  for (const auto& d : reductions()) {
    ReduceFn fn = d.fn;
    const char* name = d.name;
    m.def(
        d.name,
        [fn, name](nb::handle a, nb::handle axis, bool keepdims, nb::handle stream) {
          return fn(arr(a, name), axes_arg(axis, name), keepdims, S(stream));
        },
        "a"_a, "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), KILN_STREAM, d.doc);
  }
  struct DdofDef {
    const char* name;
    ReduceDdofFn fn;
    const char* doc;
  };
  for (const auto& d : {DdofDef{"var", var_op, "Variance over the axes, divided by N - ddof."},
                        DdofDef{"std", std_op, "Standard deviation over the axes, with N - ddof degrees of freedom."}}) {
    ReduceDdofFn fn = d.fn;
    const char* name = d.name;
    m.def(
        d.name,
        [fn, name](nb::handle a, nb::handle axis, bool keepdims, int ddof, nb::handle stream) {
          return fn(arr(a, name), axes_arg(axis, name), keepdims, ddof, S(stream));
        },
        "a"_a, "axis"_a.none() = nb::none(), "keepdims"_a = false, "ddof"_a = 0, nb::kw_only(), KILN_STREAM, d.doc);
  }
  struct ArgDef {
    const char* name;
    ArgReduceFn fn;
    const char* doc;
  };
  for (const auto& d : {ArgDef{"argmin", argmin_op, "Index (uint32) of the minimum along an axis, or of the flattened array."},
                        ArgDef{"argmax", argmax_op, "Index (uint32) of the maximum along an axis, or of the flattened array."}}) {
    ArgReduceFn fn = d.fn;
    const char* name = d.name;
    m.def(
        d.name,
        [fn, name](nb::handle a, std::optional<int> axis, bool keepdims, nb::handle stream) {
          return fn(arr(a, name), axis, keepdims, S(stream));
        },
        "a"_a, "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), KILN_STREAM, d.doc);
  }
  for (const auto& d : scans()) {
    ScanFn fn = d.fn;
    const char* name = d.name;
    m.def(
        d.name,
        [fn, name](nb::handle a, std::optional<int> axis, bool reverse, bool inclusive, nb::handle stream) {
          return fn(arr(a, name), axis, reverse, inclusive, S(stream));
        },
        "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), "reverse"_a = false, "inclusive"_a = true, KILN_STREAM,
        d.doc);
  }
  m.def(
      "softmax",
      [](nb::handle a, nb::handle axis, bool precise, nb::handle stream) {
        auto axes = axes_arg(axis, "softmax");
        array x = arr(a, "softmax");
        return axes ? softmax(x, *axes, precise, S(stream)) : softmax(x, precise, S(stream));
      },
      "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), "precise"_a = false, KILN_STREAM,
      "exp(a) normalised to sum to one along the axes (all axes by default); precise computes in float32.");

  struct SortDef {
    const char* name;
    SortFn fn;
    const char* doc;
  };
  const SortDef sorts[] = {
      {"sort",
       [](const array& a, std::optional<int> axis, StreamOrDevice s) {
         return axis ? sort(a, *axis, s) : sort(a, s);
       },
       "The values sorted along an axis (of the flattened array when axis is None)."},
      {"argsort",
       [](const array& a, std::optional<int> axis, StreamOrDevice s) {
         return axis ? argsort(a, *axis, s) : argsort(a, s);
       },
       "Indices (uint32) that sort the values along an axis (of the flattened array when axis is None)."},
  };
  for (const auto& d : sorts) {
    SortFn fn = d.fn;
    const char* name = d.name;
    m.def(
        d.name,
        [fn, name](nb::handle a, std::optional<int> axis, nb::handle stream) { return fn(arr(a, name), axis, S(stream)); },
        "a"_a, "axis"_a.none() = -1, nb::kw_only(), KILN_STREAM, d.doc);
  }
  struct KthDef {
    const char* name;
    const char* param;
    KthFn fn;
    const char* doc;
  };
  const KthDef kths[] = {
      {"partition", "kth",
       [](const array& a, int k, std::optional<int> axis, StreamOrDevice s) {
         return axis ? partition(a, k, *axis, s) : partition(a, k, s);
       },
       "The values rearranged so that the kth is in its sorted place, smaller before and larger after."},
      {"argpartition", "kth",
       [](const array& a, int k, std::optional<int> axis, StreamOrDevice s) {
         return axis ? argpartition(a, k, *axis, s) : argpartition(a, k, s);
       },
       "Indices (uint32) that partition the values around the kth (as partition)."},
      {"topk", "k",
       [](const array& a, int k, std::optional<int> axis, StreamOrDevice s) {
         return axis ? topk(a, k, *axis, s) : topk(a, k, s);
       },
       "The k largest values along an axis (in no particular order)."},
  };
  for (const auto& d : kths) {
    KthFn fn = d.fn;
    const char* name = d.name;
    m.def(
        d.name,
        [fn, name](nb::handle a, int k, std::optional<int> axis, nb::handle stream) {
          return fn(arr(a, name), k, axis, S(stream));
        },
        "a"_a, nb::arg(d.param), "axis"_a.none() = -1, nb::kw_only(), KILN_STREAM, d.doc);
  }
}

}  // namespace kiln::py
