// The ImportedCall row (imported_call.h).
#include "primitives/misc/imported_call.h"

#include <stdexcept>

#include "primitives/common.h"

namespace kiln::detail {

const PrimitiveDef& imported_call_def() {
  static const PrimitiveDef& d = def("ImportedCall");
  return d;
}

const ImportedCallBody& imported_call_body(const Node& node) {
  if (node.def != &imported_call_def() || !node.extra) {
    throw std::invalid_argument("[ImportedCall] The node carries no call (only import_function's calls build one).");
  }
  return *static_cast<const ImportedCallBody*>(node.extra.get());
}

}  // namespace kiln::detail

namespace kiln::primitives {
// An imported function's call (imported_call.h). Its output specs are the record's (given when the node
// is built); there is no rule to re-infer them from the state. State: the function's description.
void register_imported_call() {
  registry::define(detail::row("ImportedCall", {0, -1}, {{"function", FieldType::String}}, nullptr,
                               {.num_outputs = -1, .flags = kNoCSE | kNotSerializable, .shapeless = false}));
}
}  // namespace kiln::primitives
