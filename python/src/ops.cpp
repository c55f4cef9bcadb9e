// kiln's ops module functions (kiln.add, kiln.sum, ...): the families are bound in ops_*.cpp.
#include "ops_common.h"

namespace kiln::py {

void init_ops(nb::module_& m) {
  init_ops_elementwise(m);
  init_ops_reduce(m);
  init_ops_shape(m);
  init_ops_index(m);
  init_ops_linalg(m);
  init_ops_conv(m);
  init_ops_quantized(m);
}

}  // namespace kiln::py
