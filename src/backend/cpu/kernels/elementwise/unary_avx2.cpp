// ew::avx2_unary_f32, kept for callers of the earlier AVX2-only entry point: it forwards to the vector
// math (backend/cpu/vmath.h), which runs MLX's exp/sin/cos/sigmoid/erf polynomials at the CPU's widest
// level (AVX2+FMA or AVX-512, same bits as the scalar functions of elementwise_math.h).
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

#include "backend/cpu/cpu_features.h"

namespace kiln::ew {

bool avx2_unary_f32(Avx2Op op, const float* src, float* dst, size_t n) {
  if (cpu::isa_level() < cpu::Isa::avx2) return false;
  cpu::VUnary f = cpu::VUnary::Exp;
  switch (op) {
    case Avx2Op::Exp: f = cpu::VUnary::Exp; break;
    case Avx2Op::Sin: f = cpu::VUnary::Sin; break;
    case Avx2Op::Cos: f = cpu::VUnary::Cos; break;
    case Avx2Op::Sigmoid: f = cpu::VUnary::Sigmoid; break;
    case Avx2Op::Erf: f = cpu::VUnary::Erf; break;
  }
  cpu::vunary(f, src, dst, n);
  return true;
}

}  // namespace kiln::ew
