// Replaying an imported tape on new inputs (spec 4.5). Ids are resolved through one map per call;
// constants share the file's lazily loaded buffers (see constant_for_call).
#include <unordered_map>

#include "format/codec.h"
#include "format/validate.h"
#include "primitives/misc/compiled.h"
#include "primitives/misc/load.h"
#include "format/compat/quirks.h"
#include "trace/tape.h"

namespace kiln::detail {

std::vector<array> replay(const format::Record& rec, const std::vector<array>& inputs, bool shapeless,
                          const ImportOptions* limits, const int* quirks_of) {
  using format::Entry;
  std::unordered_map<uint64_t, array> values;
  values.reserve(rec.tape.size() + inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) values.emplace(rec.input_ids[i], inputs[i]);
  const Stream cpu = default_stream(Device{Device::cpu, 0});

  std::vector<array> ins;
  // Shapeless calls: the shapes this call re-inferred, per tape entry, checked against the limits.
  std::vector<std::vector<ArraySpec>> call_specs;
  if (shapeless && limits) call_specs.reserve(rec.tape.size());
  for (auto& e : rec.tape) {
    if (shapeless && limits) call_specs.push_back(e.specs);
    switch (e.kind) {
      case Entry::Kind::Input:
        break;
      case Entry::Kind::Constant:
        values.emplace(e.id, constant_for_call(e.value));
        break;
      case Entry::Kind::Primitive: {
        ins.clear();
        for (auto id : e.inputs) ins.push_back(values.at(id));
        std::vector<ArraySpec> specs = e.specs;
        if (shapeless) {
          if (!e.def->infer || !e.def->shapeless) {
            throw std::invalid_argument("[Primitive::output_shapes] " + e.def->display_name(e.state) +
                                        " cannot infer output shapes.");
          }
          // A Compiled entry (compile's fused group): its members' rules, not the row's broadcast rule.
          auto inferred = e.extra ? static_cast<const CompiledTape*>(e.extra.get())->output_specs(specs_of(ins))
                                  : e.def->infer(e.state, specs_of(ins));
          if (inferred.size() != specs.size()) {
            throw std::invalid_argument("[import_function::call] " + e.def->name + " inferred " +
                                        std::to_string(inferred.size()) + " outputs but the file records " +
                                        std::to_string(specs.size()) + ".");
          }
          for (size_t k = 0; k < specs.size(); ++k) specs[k].shape = std::move(inferred[k].shape);
          if (limits) call_specs.back() = specs;
        }
        auto outs = make_arrays(*e.def, e.state, ins, std::move(specs), cpu);
        if (e.extra) outs[0].node()->extra = e.extra;
        if (quirks_of) quirks::mark(outs, quirks_of[0], quirks_of[1], quirks_of[2], e.stream.device_type);
        for (size_t k = 0; k < outs.size(); ++k) values.emplace(e.out_ids[k], std::move(outs[k]));
        break;
      }
    }
  }
  // Nothing has run yet: the graph is lazy, so refusing here allocates nothing.
  if (shapeless && limits) format::check_call_limits(rec, call_specs, *limits);
  std::vector<array> out;
  out.reserve(rec.output_ids.size());
  for (auto id : rec.output_ids) out.push_back(values.at(id));
  return out;
}

}  // namespace kiln::detail
