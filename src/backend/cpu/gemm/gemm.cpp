// gemm_f32 (gemm.h): the choice between the skinny and the packed kernels.
#include "backend/cpu/gemm/gemm.h"

namespace kiln::cpu {

template <typename TA, typename TB>
void gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const TA* A, int64_t lda, const TB* B,
              int64_t ldb, float beta, float* C, int64_t ldc, Isa isa) {
  if (M <= kSkinnyMaxM) {
    gemm_skinny<TA, TB>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, isa);
  } else {
    gemm_packed<TA, TB>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, isa);
  }
}

#define KILN_GEMM_F32(TA, TB)                                                                                   \
  template void gemm_f32<TA, TB>(bool, bool, int64_t, int64_t, int64_t, float, const TA*, int64_t, const TB*, \
                                 int64_t, float, float*, int64_t, Isa);
KILN_GEMM_F32(float, float)
KILN_GEMM_F32(bfloat16_t, bfloat16_t)
KILN_GEMM_F32(float16_t, float16_t)
#undef KILN_GEMM_F32

}  // namespace kiln::cpu
