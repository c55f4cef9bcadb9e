// Element-wise unary primitives.
#include <cmath>

#include "backend/cpu/loops.h"
#include "kiln/ops/elementwise.h"
#include "primitives/common.h"

namespace kiln {

namespace {

std::vector<ArraySpec> same_infer(const State&, const std::vector<ArraySpec>& in) { return {in[0]}; }

std::vector<ArraySpec> astype_infer(const State& st, const std::vector<ArraySpec>& in) {
  return {{in[0].shape, st.get<Dtype>(0)}};
}

void astype_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  cpu::dispatch_all(in[0].dtype(), [&](auto s) {
    using S = decltype(s);
    cpu::dispatch_all(out[0].dtype(), [&](auto t) {
      using T = decltype(t);
      cpu::unary_loop<S, T>(in[0], out[0], [](S v) { return cpu::cast_to<T>(v); });
    });
  });
}

void abs_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  cpu::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (cpu::is_complex_v<T>) {
      // complex abs keeps the complex dtype in MLX; the magnitude goes in the real part.
      cpu::unary_loop<T, T>(in[0], out[0], [](T v) { return T(std::abs(v), 0.0f); });
    } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
      cpu::unary_loop<T, T>(in[0], out[0], [](T v) { return v; });
    } else {
      cpu::unary_loop<T, T>(in[0], out[0], [](T v) {
        using A = cpu::acc_t<T>;
        A x = static_cast<A>(v);
        return T(x < A(0) ? A(-x) : x);
      });
    }
  });
}

}  // namespace

namespace primitives {
void register_unary() {
  registry::define({.name = "AsType",
                    .fields = {{"dtype", FieldType::DtypeF}},
                    .min_inputs = 1,
                    .max_inputs = 1,
                    .flags = kUnary | kElementwise,
                    .infer = astype_infer,
                    .cpu = astype_cpu});
  registry::define({.name = "Abs",
                    .min_inputs = 1,
                    .max_inputs = 1,
                    .flags = kUnary | kElementwise,
                    .infer = same_infer,
                    .cpu = abs_cpu});
}
}  // namespace primitives

array astype(array a, Dtype dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) return a;
  static const PrimitiveDef& d = detail::def("AsType");
  return make_array(d, State{dtype}, {a}, {{a.shape(), dtype}}, to_stream(s));
}

array abs(const array& a, StreamOrDevice s) {
  static const PrimitiveDef& d = detail::def("Abs");
  return make_array(d, {}, {a}, {{a.shape(), a.dtype()}}, to_stream(s));
}

}  // namespace kiln
