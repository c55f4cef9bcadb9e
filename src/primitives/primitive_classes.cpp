// MLX's primitive classes over the registry rows (kiln/primitives.h): the table from a row's name to
// its class, the schema check of a state, and the array methods that go between nodes and objects.
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "kiln/primitives.h"

namespace kiln {

namespace {

// Whether `v` holds the alternative that field type `t` is stored as (format/codec.cpp's encodings).
bool fits(FieldType t, const Value& v) {
  switch (t) {
    case FieldType::Placeholder: return true;
    case FieldType::Bool: return std::holds_alternative<bool>(v);
    case FieldType::Int: return std::holds_alternative<int32_t>(v);
    case FieldType::Size: return std::holds_alternative<uint64_t>(v);
    case FieldType::Float: return std::holds_alternative<float>(v);
    case FieldType::Double: return std::holds_alternative<double>(v);
    case FieldType::DtypeF: return std::holds_alternative<Dtype>(v);
    case FieldType::String: return std::holds_alternative<std::string>(v);
    case FieldType::IntVec:
    case FieldType::ShapeF: return std::holds_alternative<std::vector<int32_t>>(v);
    case FieldType::StridesF: return std::holds_alternative<std::vector<int64_t>>(v);
    case FieldType::SizeVec: return std::holds_alternative<std::vector<uint64_t>>(v);
    case FieldType::OptFloat: return std::holds_alternative<std::optional<float>>(v);
    case FieldType::BoolTripleVec: return std::holds_alternative<std::vector<std::array<bool, 3>>>(v);
    case FieldType::ScalarVec: return std::holds_alternative<std::vector<ScalarArg>>(v);
  }
  return false;
}

void check_state(const PrimitiveDef& def, const State& s) {
  if (s.values.size() != def.fields.size()) {
    std::ostringstream os;
    os << "[" << def.name << "] Expected a state of " << def.fields.size() << " field(s) (";
    for (size_t i = 0; i < def.fields.size(); ++i) os << (i ? ", " : "") << def.fields[i].name;
    os << ") but found " << s.values.size() << " value(s).";
    throw std::invalid_argument(os.str());
  }
  for (size_t i = 0; i < def.fields.size(); ++i) {
    if (!fits(def.fields[i].type, s.values[i])) {
      throw std::invalid_argument("[" + def.name + "] State field " + std::to_string(i) + " ('" +
                                  def.fields[i].name + "') holds a value of the wrong type (variant alternative " +
                                  std::to_string(s.values[i].index()) + ").");
    }
  }
}

using Factory = std::shared_ptr<Primitive> (*)(State, Stream);

const std::unordered_map<std::string, Factory>& factories() {
  static const std::unordered_map<std::string, Factory> table = [] {
    std::unordered_map<std::string, Factory> t;
#define KILN_FACTORY_ROW(NAME, BASE) \
  t.emplace(#NAME, [](State s, Stream st) -> std::shared_ptr<Primitive> { return std::make_shared<NAME>(st, std::move(s)); });
    KILN_PRIMITIVE_CLASSES(KILN_FACTORY_ROW)
    {
      using namespace fast;
      KILN_FAST_PRIMITIVE_CLASSES(KILN_FACTORY_ROW)
    }
    KILN_FACTORY_ROW(ArgReduce, UnaryPrimitive)
    KILN_FACTORY_ROW(Reduce, UnaryPrimitive)
    KILN_FACTORY_ROW(Compiled, Primitive)
#undef KILN_FACTORY_ROW
    return t;
  }();
  return table;
}

std::mutex& primitive_mutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

namespace detail {

const PrimitiveDef& primitive_row(const char* name) {
  const PrimitiveDef* def = registry::find(name);
  if (!def) throw std::logic_error(std::string("[Primitive] No registry row for the class ") + name + ".");
  return *def;
}

State empty_state(const char* name) {
  const PrimitiveDef& def = primitive_row(name);
  if (!def.fields.empty()) {
    throw std::invalid_argument(std::string("[") + name + "] The primitive has a state of " +
                                std::to_string(def.fields.size()) +
                                " field(s): construct it with (Stream, State).");
  }
  return State{};
}

}  // namespace detail

Primitive::Primitive(const PrimitiveDef& def, State state, Stream stream)
    : def_(&def), state_(std::move(state)), stream_(stream) {
  check_state(def, state_);
  name_ = def.display_name(state_);
}

bool Primitive::is_equivalent(const Primitive& other) const {
  return def_ == other.def_ && !(def_->flags & kNoCSE) && state_ == other.state_;
}

std::vector<Shape> Primitive::output_shapes(const std::vector<array>& inputs) const {
  if (!def_->infer || !def_->shapeless) {
    throw std::invalid_argument("[Primitive::output_shapes] " + def_->name + " cannot infer output shapes.");
  }
  std::vector<Shape> out;
  for (auto& sp : def_->infer(state_, specs_of(inputs))) out.push_back(sp.shape);
  return out;
}

std::shared_ptr<Primitive> Primitive::make(const PrimitiveDef& def, State state, Stream stream) {
  auto& t = factories();
  auto it = t.find(def.name);
  if (it == t.end()) throw std::logic_error("[Primitive] The row " + def.name + " has no class.");
  return it->second(std::move(state), stream);
}

std::vector<array> array::make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                      const std::shared_ptr<Primitive>& primitive, std::vector<array> inputs) {
  if (!primitive) throw std::invalid_argument("[array] Expected a primitive, found a null pointer.");
  const PrimitiveDef& def = primitive->def();
  if (shapes.size() != dtypes.size()) {
    throw std::invalid_argument("[array] Expected one dtype per output shape, found " + std::to_string(shapes.size()) +
                                " shapes and " + std::to_string(dtypes.size()) + " dtypes.");
  }
  const int n = static_cast<int>(inputs.size());
  if (n < def.min_inputs || (def.max_inputs >= 0 && n > def.max_inputs)) {
    std::string want = std::to_string(def.min_inputs);
    if (def.max_inputs != def.min_inputs) {
      want += def.max_inputs < 0 ? " or more" : " to " + std::to_string(def.max_inputs);
    }
    throw std::invalid_argument("[" + def.name + "] Expected " + want + " input(s), found " + std::to_string(n) + ".");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      throw std::invalid_argument("[" + def.name + "] Input " + std::to_string(i) +
                                  " is an empty (default-constructed) array.");
    }
  }
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < shapes.size(); ++i) specs.push_back({std::move(shapes[i]), dtypes[i]});
  if (def.num_outputs >= 0 && specs.size() != static_cast<size_t>(def.num_outputs)) {
    throw std::invalid_argument("[" + def.name + "] Expected " + std::to_string(def.num_outputs) +
                                " output(s), found " + std::to_string(specs.size()) + ".");
  }
  // The kernels write what the specs say: each output must have the element count and dtype the row
  // computes from these inputs (the shape may differ, as MLX allows: ArgReduce's squeezed axis).
  auto in_specs = specs_of(inputs);
  if (def.infer && !def.check) {
    auto want = def.infer(primitive->state(), in_specs);
    bool same = want.size() == specs.size();
    for (size_t i = 0; same && i < want.size(); ++i) {
      same = want[i].dtype == specs[i].dtype && shape_size(want[i].shape) == shape_size(specs[i].shape);
    }
    if (!same) {
      std::ostringstream os;
      os << "[" << def.name << "] These inputs give outputs of ";
      for (size_t i = 0; i < want.size(); ++i) os << (i ? ", " : "") << want[i].shape << " " << want[i].dtype;
      os << "; found ";
      for (size_t i = 0; i < specs.size(); ++i) os << (i ? ", " : "") << specs[i].shape << " " << specs[i].dtype;
      os << ".";
      throw std::invalid_argument(os.str());
    }
  } else if (def.check) {
    def.check(primitive->state(), in_specs, specs);
  }
  auto outs = kiln::make_arrays(def, primitive->state(), std::move(inputs), std::move(specs), primitive->stream());
  outs[0].node()->primitive = primitive;
  return outs;
}

array::array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive, std::vector<array> inputs)
    : array([&] {
        if (primitive && primitive->def().num_outputs != 1) {
          throw std::invalid_argument("[array] " + primitive->def().name +
                                      " has several outputs: build them with array::make_arrays.");
        }
        return make_arrays({std::move(shape)}, {dtype}, primitive, std::move(inputs))[0];
      }()) {}

std::shared_ptr<Primitive> array::primitive_ptr() const {
  if (!has_primitive()) {
    throw std::invalid_argument("[array::primitive] The array has no primitive (it is evaluated or a leaf).");
  }
  Node& n = *node();
  std::lock_guard<std::mutex> lk(primitive_mutex());
  if (!n.primitive) n.primitive = Primitive::make(*n.def, n.state, n.stream);
  return n.primitive;
}

Primitive& array::primitive() const { return *primitive_ptr(); }

}  // namespace kiln
