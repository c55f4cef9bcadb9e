#include "format/compat/quirks.h"

#include "format/compat/fields.h"
#include "primitives/quantized/quirks.h"
#include "kiln/ops/quantized.h"

namespace kiln::quirks {

namespace {
// The quantization mode of the two rows, by name (resolved on first use, format/compat/fields.h).
const format::compat::FieldRef kQmmMode{"QuantizedMatmul", "mode", "the CPU quirk of MLX before 0.31.0"};
const format::compat::FieldRef kGatherQmmMode{"GatherQMM", "mode", "the CPU quirk of MLX before 0.31.0"};
}  // namespace

bool mark(const std::vector<array>& outputs, int major, int minor, int patch, int device_type) {
  (void)patch;
  if (outputs.empty() || !outputs[0].has_primitive() || device_type != 0) return false;
  Node& node = *outputs[0].node();
  const std::string& name = node.def->name;
  if (name != "QuantizedMatmul" && name != "GatherQMM") return false;
  const int mode = node.state.i(name == "QuantizedMatmul" ? kQmmMode() : kGatherQmmMode());
  const bool fp_not_mxfp4 =
      mode == static_cast<int>(QuantizationMode::Mxfp8) || mode == static_cast<int>(QuantizationMode::Nvfp4);
  const bool before_0_31 = major == 0 && minor < 31;
  if (!fp_not_mxfp4 || !before_0_31) return false;
  mark_fp_qmm_read_as_mxfp4(node);
  return true;
}

}  // namespace kiln::quirks
