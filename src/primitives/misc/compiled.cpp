// The Compiled row (compiled.h) and its tape: building the group's lazy graph, and its name.
#include "primitives/misc/compiled.h"

#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "primitives/common.h"

namespace kiln::detail {

namespace {

// Every output has the inputs' broadcast shape (MLX's Compiled::output_shapes, what
// Primitive::output_shapes gives); the dtypes are the first input's. Nodes are built with their
// tape's own specs (CompiledTape::output_specs), which replay also uses.
std::vector<ArraySpec> compiled_infer(const State& st, const std::vector<ArraySpec>& in) {
  Shape shape;
  for (auto& s : in) shape = broadcast_shapes(shape, s.shape);
  const int n = st.i(1);
  return std::vector<ArraySpec>(static_cast<size_t>(n), ArraySpec{shape, in.empty() ? float32 : in[0].dtype});
}

void put_value(std::ostringstream& os, const Value& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          os << '-';
        } else if constexpr (std::is_same_v<T, Dtype>) {
          os << dtype_name(x);
        } else if constexpr (std::is_same_v<T, std::optional<float>>) {
          if (x) os << *x; else os << "none";
        } else if constexpr (std::is_same_v<T, std::vector<std::array<bool, 3>>>) {
          for (auto& t : x) os << t[0] << t[1] << t[2] << ',';
        } else if constexpr (std::is_same_v<T, std::vector<ScalarArg>>) {
          for (auto& s : x) std::visit([&](auto y) { os << y << ','; }, s);
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>> || std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<uint64_t>>) {
          for (auto y : x) os << y << ',';
        } else {
          os << x;
        }
      },
      v);
}

}  // namespace

const PrimitiveDef& compiled_def() {
  static const PrimitiveDef& d = def("Compiled");
  return d;
}

const CompiledTape& compiled_tape(const Node& node) {
  if (node.def != &compiled_def() || !node.extra) {
    throw std::invalid_argument("[Compiled] The node has no fused group (it was not built by compile).");
  }
  return *static_cast<const CompiledTape*>(node.extra.get());
}

std::vector<ArraySpec> CompiledTape::step_specs(const std::vector<ArraySpec>& inputs) const {
  std::vector<ArraySpec> specs;
  specs.reserve(steps.size());
  std::vector<ArraySpec> ins;
  for (const Step& s : steps) {
    ArraySpec spec = s.spec;
    if (shapeless) {
      ins.clear();
      for (int a : s.args) {
        const size_t k = a >= 0 ? static_cast<size_t>(a) : static_cast<size_t>(~a);
        if ((a >= 0 && k >= specs.size()) || (a < 0 && k >= inputs.size())) {
          throw std::invalid_argument("[Compiled] A fused step reads an input the node does not have.");
        }
        ins.push_back(a >= 0 ? specs[k] : inputs[k]);
      }
      spec.shape = s.def->infer(s.state, ins).at(0).shape;
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::vector<ArraySpec> CompiledTape::output_specs(const std::vector<ArraySpec>& inputs) const {
  std::vector<ArraySpec> specs = step_specs(inputs);
  std::vector<ArraySpec> out;
  out.reserve(outputs.size());
  for (int o : outputs) out.push_back(specs.at(static_cast<size_t>(o)));
  return out;
}

std::vector<array> CompiledTape::run(const std::vector<array>& inputs, const Stream& stream) const {
  const std::vector<ArraySpec> specs = step_specs(specs_of(inputs));
  std::vector<array> values;
  values.reserve(steps.size());
  std::vector<array> ins;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    ins.clear();
    for (int a : s.args) {
      const size_t k = a >= 0 ? static_cast<size_t>(a) : static_cast<size_t>(~a);
      if ((a >= 0 && k >= values.size()) || (a < 0 && k >= inputs.size())) {
        throw std::invalid_argument("[Compiled] A fused step reads an input the node does not have.");
      }
      ins.push_back(a >= 0 ? values[k] : inputs[k]);
    }
    values.push_back(make_array(*s.def, s.state, ins, {specs[i]}, stream));
  }
  std::vector<array> out;
  out.reserve(outputs.size());
  for (int o : outputs) out.push_back(values.at(static_cast<size_t>(o)));
  return out;
}

std::string CompiledTape::name(bool shapes) const {
  std::ostringstream os;
  os << "Compiled";
  for (const Step& s : steps) os << '_' << s.def->display_name(s.state);
  os << '|';
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    os << 's' << k << '=' << s.def->name << '{';
    for (auto& v : s.state.values) {
      if (!shapes && s.def->name == "Broadcast") break;
      put_value(os, v);
      os << ';';
    }
    os << "}(";
    for (int a : s.args) os << (a >= 0 ? "s" : "i") << (a >= 0 ? a : ~a) << ',';
    os << "):" << dtype_name(s.spec.dtype) << ' ';
  }
  os << "->";
  for (int o : outputs) os << 's' << o << ',';
  return os.str();
}

State CompiledTape::state() const { return State{name(false), static_cast<int32_t>(outputs.size()), name(true)}; }

}  // namespace kiln::detail

namespace kiln::primitives {
// compile's fused group (compiled.h). State: MLX's lib_name, the output count, and the group's full
// description (broadcast shapes included: equal states are equivalent nodes). Not in MLX's serializer table: the tracer writes the members.
void register_compiled() {
  registry::define(detail::row("Compiled", {1, -1}, {{"lib_name", FieldType::String}, {"num_outputs", FieldType::Int}, {"key", FieldType::String}},
                               detail::compiled_infer, {.num_outputs = -1, .flags = kNotSerializable}));
}
}  // namespace kiln::primitives
