// Internal declarations shared by the reduction family's rows and op builders (src/primitives/reduce/)
// and its CPU kernels (src/backend/cpu/kernels/reduce/): state codes and output dtypes.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::reduce {

// State codes (format spec 3.2).
enum ReduceType : int32_t { And = 0, Or = 1, Sum = 2, Prod = 3, Min = 4, Max = 5 };
enum ArgReduceType : int32_t { ArgMin = 0, ArgMax = 1 };
enum ScanType : int32_t { ScanMax = 0, ScanMin = 1, ScanSum = 2, ScanProd = 3, ScanLogAddExp = 4 };

// Output type of Sum and Prod for elements of type T: small integers widen to (u)int32, bool to int32,
// other types keep theirs. The rule's one home: the kernels instantiate it, sum_dtype applies it to a Dtype.
template <typename T>
using SumOut = std::conditional_t<
    std::is_same_v<T, bool>, int32_t,
    std::conditional_t<std::is_integral_v<T>,
                       std::conditional_t<(sizeof(T) <= 4),
                                          std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>,
                                          T>,
                       T>>;
Dtype sum_dtype(Dtype t);

// Output type of Scan: a cumulative sum of bool counts in int32, everything else keeps its type.
inline Dtype scan_dtype(int type, Dtype in) { return (type == ScanSum && in == bool_) ? int32 : in; }

}  // namespace kiln::reduce
