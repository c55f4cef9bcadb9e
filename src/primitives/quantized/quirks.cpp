#include "primitives/quantized/quirks.h"

namespace kiln::quirks {

namespace {
// The address identifies the quirk; the value is never read.
const char kFpAsMxfp4 = 0;
}  // namespace

bool fp_qmm_read_as_mxfp4(const Node& node) { return node.extra.get() == &kFpAsMxfp4; }

void mark_fp_qmm_read_as_mxfp4(Node& node) {
  node.extra = std::shared_ptr<const void>(&kFpAsMxfp4, [](const void*) {});
}

}  // namespace kiln::quirks
