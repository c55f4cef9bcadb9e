// Element-wise rows (src/primitives/elementwise/): unary math, arithmetic, comparisons, bitwise ops,
// casts and Select. Math on float16/bfloat16 is computed in float32 and rounded once, as MLX does.
#include <cmath>

#include "onnx/lower/common.h"

namespace kiln::onnx_export {

std::vector<std::string> cast_all(Context& c, const std::vector<Tensor>& in, Dtype t) {
  std::vector<std::string> out;
  for (auto& x : in) out.push_back(x.dtype == t ? x.name : c.cast(x.name, t));
  return out;
}

void store(Context& c, size_t k, const std::string& value, Dtype from) {
  if (c.out.at(k).dtype == from) {
    c.set_output(k, value);
  } else {
    c.op_to(k, "Cast", {value}, {{"to", onnx_type(c.out.at(k).dtype)}});
  }
}

void no_complex(Context& c) {
  for (auto& t : c.in) {
    if (t.dtype == complex64) c.refuse("ONNX Runtime has no element-wise kernels for complex64 operands");
  }
}

namespace {

using Fn = std::function<std::string(Context&, const std::vector<std::string>&, Dtype)>;

// An op computed in compute_type of the first input's dtype, cast back to the output's dtype.
Lowering computed(Fn f) {
  return [f](Context& c) {
    no_complex(c);
    const Dtype t = compute_type(c.in.at(0).dtype);
    store(c, 0, f(c, cast_all(c, c.in, t), t), t);
  };
}

// One ONNX op of the same name class.
Lowering simple(const char* op) {
  return computed([op](Context& c, const std::vector<std::string>& x, Dtype) { return c.op(op, x); });
}

// The Python-style remainder (the sign of the divisor), as MLX computes it.
std::string remainder(Context& c, const std::string& a, const std::string& b, Dtype t) {
  if (!is_float(t)) return c.op("Mod", {a, b}, {{"fmod", 0}});
  std::string r = c.op("Mod", {a, b}, {{"fmod", 1}});
  const std::string zero = c.scalar(0, t);
  std::string nonzero = c.op("Not", {c.op("Equal", {r, zero})});
  std::string differ = c.op("Xor", {c.op("Less", {r, zero}), c.op("Less", {b, zero})});
  return c.op("Where", {c.op("And", {nonzero, differ}), c.op("Add", {r, b}), r});
}

std::string floor_divide(Context& c, const std::string& a, const std::string& b, Dtype t) {
  if (is_float(t)) return c.op("Floor", {c.op("Div", {a, b})});
  // a - (a mod b) is a multiple of b, so the truncating Div is exact and equals the floor.
  return c.op("Div", {c.op("Sub", {a, c.op("Mod", {a, b}, {{"fmod", 0}})}), b});
}

std::string arctan2(Context& c, const std::string& y, const std::string& x, Dtype t) {
  const std::string zero = c.scalar(0, t), pi = c.scalar(M_PI, t);
  std::string r = c.op("Atan", {c.op("Div", {y, x})});  // x = 0: y / 0 = +-inf, Atan gives +-pi/2
  std::string shift = c.op("Where", {c.op("Less", {y, zero}), c.op("Neg", {pi}), pi});
  r = c.op("Where", {c.op("Less", {x, zero}), c.op("Add", {r, shift}), r});
  std::string both_zero = c.op("And", {c.op("Equal", {x, zero}), c.op("Equal", {y, zero})});
  std::string at_zero = c.op("Where", {c.op("Less", {x, zero}), pi, zero});
  return c.op("Where", {both_zero, at_zero, r});
}

// log(1 + x) without the cancellation of a plain Log(1 + x): u = 1 + x, log(u) * x / (u - 1).
std::string log1p(Context& c, const std::string& x, Dtype t) {
  const std::string one = c.scalar(1, t);
  std::string u = c.op("Add", {x, one});
  std::string d = c.op("Sub", {u, one});
  std::string r = c.op("Div", {c.op("Mul", {c.op("Log", {u}), x}), d});
  std::string r_inf = c.op("Where", {c.op("IsInf", {u}), u, r});
  return c.op("Where", {c.op("Equal", {d, c.scalar(0, t)}), x, r_inf});
}

// exp(x) - 1 accurately near 0 (Kahan): u = exp(x), (u - 1) * x / log(u).
std::string expm1(Context& c, const std::string& x, Dtype t) {
  const std::string one = c.scalar(1, t);
  std::string u = c.op("Exp", {x});
  std::string d = c.op("Sub", {u, one});
  std::string r = c.op("Div", {c.op("Mul", {d, x}), c.op("Log", {u})});
  std::string tiny = c.op("Equal", {u, one});
  std::string edge = c.op("Or", {c.op("IsInf", {u}), c.op("Equal", {d, c.op("Neg", {one})})});
  return c.op("Where", {tiny, x, c.op("Where", {edge, d, r})});
}

std::string logaddexp(Context& c, const std::string& a, const std::string& b, Dtype t) {
  std::string m = c.op("Max", {a, b});
  std::string d = c.op("Neg", {c.op("Abs", {c.op("Sub", {a, b})})});
  std::string r = c.op("Add", {m, log1p(c, c.op("Exp", {d}), t)});
  return c.op("Where", {c.op("IsInf", {m}), m, r});
}

// erfinv by Giles' single-precision approximation (the polynomial MLX's CPU backend evaluates), with
// 1 - a^2 as (1 - a)(1 + a) for accuracy near +-1 where MLX uses an fma.
std::string erfinv(Context& c, const std::string& a, Dtype t) {
  const std::string one = c.scalar(1, t);
  std::string w = c.op("Log", {c.op("Mul", {c.op("Sub", {one, a}), c.op("Add", {one, a})})});
  auto horner = [&](const std::vector<double>& k) {
    std::string p = c.scalar(k[0], t);
    for (size_t i = 1; i < k.size(); ++i) p = c.op("Add", {c.op("Mul", {p, w}), c.scalar(k[i], t)});
    return p;
  };
  std::string tail = horner({3.03697567e-10, 2.93243101e-8, 1.22150334e-6, 2.84108955e-5, 3.93552968e-4,
                             3.02698812e-3, 4.83185798e-3, -2.64646143e-1, 8.40016484e-1});
  std::string body = horner({5.43877832e-9, 1.43285448e-7, 1.22774793e-6, 1.12963626e-7, -5.61530760e-5,
                             -1.47697632e-4, 2.31468678e-3, 1.15392581e-2, -2.32015476e-1, 8.86226892e-1});
  std::string far = c.op("Greater", {c.op("Abs", {w}), c.scalar(6.125, t)});
  return c.op("Mul", {a, c.op("Where", {far, tail, body})});
}

std::string pow2(Context& c, const std::string& b64) { return c.op("Pow", {c.scalar(2, int64), b64}); }

void bitwise(Context& c) {
  const int op = c.int_arg(0);
  const Dtype t = c.in.at(0).dtype;
  if (op <= 2) {
    static const char* names[] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor"};
    static const char* logical[] = {"And", "Or", "Xor"};
    if (t == bool_) {
      c.op_to(0, logical[op], {c.in[0].name, c.in[1].name});
      return;
    }
    c.need_opset(18, names[op]);
    c.op_to(0, names[op], {c.in[0].name, c.in[1].name});
    return;
  }
  if (op > 4) c.refuse("unknown bitwise op code " + std::to_string(op));
  const char* dir = op == 3 ? "LEFT" : "RIGHT";
  if (is_unsigned_int(t)) {
    c.op_to(0, "BitShift", {c.in[0].name, c.in[1].name}, {{"direction", dir}});
    return;
  }
  if (!is_signed_int(t)) c.refuse(std::string(op == 3 ? "LeftShift" : "RightShift") + " of " + dtype_name(t));
  // Signed shifts in int64: a left shift is a product by 2^b (wrapped by the cast back), an arithmetic
  // right shift the floor of the quotient by 2^b.
  std::string a = c.cast(c.in[0].name, int64), b = c.cast(c.in[1].name, int64);
  std::string p = pow2(c, b);
  std::string r = op == 3 ? c.op("Mul", {a, p}) : floor_divide(c, a, p, int64);
  store(c, 0, r, int64);
}

void equal(Context& c) {
  no_complex(c);
  const Dtype t = compute_type(c.in.at(0).dtype);
  auto x = cast_all(c, c.in, t);
  std::string r = c.op("Equal", x);
  if (c.bool_arg(0) && is_float(t)) {
    std::string nans = c.op("And", {c.op("IsNaN", {x[0]}), c.op("IsNaN", {x[1]})});
    r = c.op("Or", {r, nans});
  }
  c.set_output(0, r);
}

}  // namespace

void register_elementwise_onnx(LoweringTable& table) {
  auto math = [](const char* op) { return simple(op); };
  table.add({
      {"Copy", [](Context& c) { c.set_output(0, c.in.at(0).name); }},
      {"StopGradient", [](Context& c) { c.set_output(0, c.in.at(0).name); }},
      {"Abs", math("Abs")},
      {"Negative", math("Neg")},
      {"Sign", math("Sign")},
      {"Square", computed([](Context& c, const std::vector<std::string>& x, Dtype) { return c.op("Mul", {x[0], x[0]}); })},
      {"Floor", math("Floor")},
      {"Ceil", math("Ceil")},
      {"Round", math("Round")},
      {"LogicalNot", [](Context& c) { c.op_to(0, "Not", {c.in.at(0).name}); }},
      {"BitwiseInvert",
       [](Context& c) {
         if (c.in.at(0).dtype == bool_) {
           c.op_to(0, "Not", {c.in[0].name});
           return;
         }
         c.need_opset(18, "BitwiseNot");
         c.op_to(0, "BitwiseNot", {c.in[0].name});
       }},
      {"Exp", math("Exp")},
      {"Expm1", computed([](Context& c, const std::vector<std::string>& x, Dtype t) { return expm1(c, x[0], t); })},
      {"Log1p", computed([](Context& c, const std::vector<std::string>& x, Dtype t) { return log1p(c, x[0], t); })},
      {"Sin", math("Sin")},
      {"Cos", math("Cos")},
      {"Tan", math("Tan")},
      {"Sinh", math("Sinh")},
      {"Cosh", math("Cosh")},
      {"Tanh", math("Tanh")},
      {"ArcSin", math("Asin")},
      {"ArcCos", math("Acos")},
      {"ArcTan", math("Atan")},
      {"ArcSinh", math("Asinh")},
      {"ArcCosh", math("Acosh")},
      {"ArcTanh", math("Atanh")},
      {"Sigmoid", math("Sigmoid")},
      {"Erf", math("Erf")},
      {"ErfInv", [](Context& c) {
         // Evaluated in float32 whatever the input (MLX evaluates it in float).
         no_complex(c);
         auto x = cast_all(c, c.in, float32);
         store(c, 0, erfinv(c, x[0], float32), float32);
       }},
      {"Log", [](Context& c) {
         const int base = c.int_arg(0);
         computed([base](Context& c, const std::vector<std::string>& x, Dtype t) {
           std::string l = c.op("Log", {x[0]});
           if (base == 2) return l;
           return c.op("Div", {l, c.scalar(base == 0 ? M_LN2 : M_LN10, t)});
         })(c);
       }},
      {"Sqrt", [](Context& c) {
         const bool recip = c.bool_arg(0);
         computed([recip](Context& c, const std::vector<std::string>& x, Dtype) {
           std::string s = c.op("Sqrt", {x[0]});
           return recip ? c.op("Reciprocal", {s}) : s;
         })(c);
       }},
      {"AsType", [](Context& c) {
         if (c.in.at(0).dtype == complex64 || c.out.at(0).dtype == complex64) {
           c.refuse("ONNX Runtime has no Cast kernels for complex64");
         }
         c.op_to(0, "Cast", {c.in[0].name}, {{"to", onnx_type(c.out.at(0).dtype)}});
       }},
      {"Add", math("Add")},
      {"Subtract", math("Sub")},
      {"Multiply", math("Mul")},
      {"Divide", math("Div")},
      {"Power", [](Context& c) {
         // ONNX's Pow has no unsigned or small integer types: in int64, whose products wrap the same
         // way modulo the narrower width.
         const Dtype t = c.in.at(0).dtype;
         if (is_float(t) || t == int32 || t == int64) return simple("Pow")(c);
         if (t == bool_ || t == uint64) c.refuse("Power of " + dtype_name(t));
         store(c, 0, c.op("Pow", cast_all(c, c.in, int64)), int64);
       }},
      {"Maximum", math("Max")},
      {"Minimum", math("Min")},
      {"Remainder",
       computed([](Context& c, const std::vector<std::string>& x, Dtype t) { return remainder(c, x[0], x[1], t); })},
      {"FloorDivide",
       computed([](Context& c, const std::vector<std::string>& x, Dtype t) { return floor_divide(c, x[0], x[1], t); })},
      {"ArcTan2",
       computed([](Context& c, const std::vector<std::string>& x, Dtype t) { return arctan2(c, x[0], x[1], t); })},
      {"LogAddExp",
       computed([](Context& c, const std::vector<std::string>& x, Dtype t) { return logaddexp(c, x[0], x[1], t); })},
      {"DivMod", [](Context& c) {
         no_complex(c);
         const Dtype t = compute_type(c.in.at(0).dtype);
         auto x = cast_all(c, c.in, t);
         if (c.bool_arg(0)) {
           store(c, 0, floor_divide(c, x[0], x[1], t), t);
           store(c, 1, remainder(c, x[0], x[1], t), t);
           return;
         }
         // Files of MLX releases that computed C's quotient and remainder (trunc(x / y), fmod).
         std::string q = c.op("Div", {x[0], x[1]});
         if (is_float(t)) q = c.op("Mul", {c.op("Sign", {q}), c.op("Floor", {c.op("Abs", {q})})});
         store(c, 0, q, t);
         store(c, 1, c.op("Mod", {x[0], x[1]}, {{"fmod", 1}}), t);
       }},
      {"Equal", equal},
      {"NotEqual", [](Context& c) {
         no_complex(c);
         auto x = cast_all(c, c.in, compute_type(c.in.at(0).dtype));
         c.op_to(0, "Not", {c.op("Equal", x)});
       }},
      {"Greater", [](Context& c) { c.op_to(0, "Greater", cast_all(c, c.in, compute_type(c.in.at(0).dtype))); }},
      {"GreaterEqual",
       [](Context& c) { c.op_to(0, "GreaterOrEqual", cast_all(c, c.in, compute_type(c.in.at(0).dtype))); }},
      {"Less", [](Context& c) { c.op_to(0, "Less", cast_all(c, c.in, compute_type(c.in.at(0).dtype))); }},
      {"LessEqual", [](Context& c) { c.op_to(0, "LessOrEqual", cast_all(c, c.in, compute_type(c.in.at(0).dtype))); }},
      {"LogicalAnd", [](Context& c) { c.op_to(0, "And", {c.in.at(0).name, c.in.at(1).name}); }},
      {"LogicalOr", [](Context& c) { c.op_to(0, "Or", {c.in.at(0).name, c.in.at(1).name}); }},
      {"BitwiseBinary", bitwise},
      {"Select", [](Context& c) { c.op_to(0, "Where", {c.in.at(0).name, c.in.at(1).name, c.in.at(2).name}); }},
  });
  table.polymorphic({"Copy", "StopGradient", "Abs", "Negative", "Sign", "Square", "Floor", "Ceil", "Round",
                     "LogicalNot", "BitwiseInvert", "Exp", "Expm1", "Log1p", "Sin", "Cos", "Tan", "Sinh", "Cosh", "Tanh",
                     "ArcSin", "ArcCos", "ArcTan", "ArcSinh", "ArcCosh", "ArcTanh", "Sigmoid", "Erf", "ErfInv", "Log", "Sqrt",
                     "AsType", "Add", "Subtract", "Multiply", "Divide", "Power", "Maximum", "Minimum", "Remainder",
                     "FloorDivide", "ArcTan2", "LogAddExp", "DivMod", "Equal", "NotEqual", "Greater", "GreaterEqual",
                     "Less", "LessEqual", "LogicalAnd", "LogicalOr", "BitwiseBinary", "Select"});
  table.refuse("View", "ONNX has no operator that reinterprets an array's bytes as another dtype");
  // Complex operands are lowered by lower_complex (lower/fft.cpp) before the table is consulted.
  auto complex_only = [](Context& c) { c.refuse("a complex-only row without complex64 operands"); };
  table.add({{"Conjugate", complex_only}, {"Real", complex_only}, {"Imag", complex_only}});
  for (const char* row : {"Conjugate", "Real", "Imag"}) {
    table.refuse_shapeless(row, "complex64 values take their (..., 2) float32 form with the recorded shapes (and "
                                "MLX's FFT, their usual source, has no shapeless shape rule)");
  }
}

}  // namespace kiln::onnx_export
