#include "onnx/model.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "io/atomic_file.h"
#include "kiln/ops.h"
#include "kiln/primitive.h"

namespace kiln::onnx_export {

namespace {
// `value` evaluated, in row-major order, so its bytes are an initializer's raw data.
array row_major_now(const array& value) {
  array a = value;
  a.eval();
  if (!a.row_contiguous()) {
    a = contiguous(a);
    a.eval();
  }
  return a;
}
}  // namespace

int onnx_type(Dtype t) {
  switch (t.val) {
    case Dtype::Val::bool_: return onnx::TensorProto::BOOL;
    case Dtype::Val::uint8: return onnx::TensorProto::UINT8;
    case Dtype::Val::uint16: return onnx::TensorProto::UINT16;
    case Dtype::Val::uint32: return onnx::TensorProto::UINT32;
    case Dtype::Val::uint64: return onnx::TensorProto::UINT64;
    case Dtype::Val::int8: return onnx::TensorProto::INT8;
    case Dtype::Val::int16: return onnx::TensorProto::INT16;
    case Dtype::Val::int32: return onnx::TensorProto::INT32;
    case Dtype::Val::int64: return onnx::TensorProto::INT64;
    case Dtype::Val::float16: return onnx::TensorProto::FLOAT16;
    case Dtype::Val::float32: return onnx::TensorProto::FLOAT;
    case Dtype::Val::float64: return onnx::TensorProto::DOUBLE;
    case Dtype::Val::bfloat16: return onnx::TensorProto::BFLOAT16;
    case Dtype::Val::complex64: return onnx::TensorProto::COMPLEX64;
  }
  throw std::invalid_argument("[to_onnx] Unknown dtype code " + std::to_string(t.code()) + ".");
}

// ---- Context ----

Context::Context(GraphBuilder& g, std::string primitive, std::vector<Tensor> in, std::vector<Tensor> out,
                 std::vector<StateT> args)
    : g_(g), primitive_(std::move(primitive)), in_(std::move(in)), out_(std::move(out)), args_(std::move(args)),
      in(in_), out(out_) {}

onnx::NodeProto& Context::node(const std::string& op, const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs, const Attrs& attrs, const std::string& domain) {
  onnx::NodeProto* n = g_.graph().add_node();
  n->set_op_type(op);
  n->set_name(g_.fresh(primitive_ + "_" + op));
  if (!domain.empty()) n->set_domain(domain);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  for (auto& a : attrs) {
    onnx::AttributeProto* p = n->add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case Attr::Kind::Int:
        p->set_type(onnx::AttributeProto::INT);
        p->set_i(a.i);
        break;
      case Attr::Kind::Float:
        p->set_type(onnx::AttributeProto::FLOAT);
        p->set_f(a.f);
        break;
      case Attr::Kind::String:
        p->set_type(onnx::AttributeProto::STRING);
        p->set_s(a.s);
        break;
      case Attr::Kind::Ints:
        p->set_type(onnx::AttributeProto::INTS);
        for (auto v : a.ints) p->add_ints(v);
        break;
      case Attr::Kind::Floats:
        p->set_type(onnx::AttributeProto::FLOATS);
        for (auto v : a.floats) p->add_floats(v);
        break;
    }
  }
  return *n;
}

std::string Context::fresh() { return g_.fresh(); }

std::string Context::op(const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs) {
  std::string o = fresh();
  node(op, inputs, {o}, attrs);
  return o;
}

void Context::op_to(size_t k, const std::string& op, const std::vector<std::string>& inputs, const Attrs& attrs) {
  node(op, inputs, {out_.at(k).name}, attrs);
}

void Context::set_output(size_t k, const std::string& value) { node("Identity", {value}, {out_.at(k).name}); }

std::string Context::ints(const std::vector<int64_t>& v, bool scalar) {
  onnx::TensorProto* t = g_.graph().add_initializer();
  const std::string name = g_.fresh("c");
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
  if (scalar && v.size() != 1) throw std::logic_error("[to_onnx] a scalar initializer needs one value");
  for (auto x : v) t->add_int64_data(x);
  return name;
}

std::string Context::scalar(double v, Dtype t) {
  array a = astype(array(v, float64), t);
  onnx::TensorProto* p = g_.graph().add_initializer();
  const std::string name = g_.fresh("c");
  fill_tensor(*p, name, a);
  return name;
}

std::string Context::constant(const array& a) {
  onnx::TensorProto* p = g_.graph().add_initializer();
  const std::string name = g_.fresh("c");
  fill_tensor(*p, name, a);
  return name;
}

std::string Context::raw_initializer(int data_type, const std::vector<int64_t>& dims, const array& value) {
  const array a = row_major_now(value);
  onnx::TensorProto* p = g_.graph().add_initializer();
  const std::string name = g_.fresh("c");
  p->set_name(name);
  p->set_data_type(data_type);
  for (auto d : dims) p->add_dims(d);
  p->set_raw_data(std::string(static_cast<const char*>(a.raw_data()), a.nbytes()));
  return name;
}

const array* Context::constant_value(const std::string& name) const { return g_.constant(name); }

std::string Context::cast(const std::string& x, Dtype to) { return op("Cast", {x}, {{"to", onnx_type(to)}}); }

int Context::opset() const { return g_.opset(); }

bool Context::matmul_nbits() const { return g_.matmul_nbits; }

bool Context::shapeless() const { return g_.shapeless(); }

void Context::need_opset(int v, const std::string& why) const {
  if (g_.opset() < v) {
    throw OnnxRefusal("[to_onnx] " + primitive_ + " needs ONNX opset " + std::to_string(v) + " or newer (" + why +
                      "); the requested opset is " + std::to_string(g_.opset()) + ".");
  }
}

void Context::refuse(const std::string& why) const {
  throw OnnxRefusal("[to_onnx] " + primitive_ + " cannot be lowered to ONNX: " + why);
}

void Context::bad_arg(size_t k) const {
  throw std::invalid_argument("[to_onnx] " + primitive_ + ": state argument " + std::to_string(k) +
                              " is missing or of an unexpected type (the event has " + std::to_string(args_.size()) +
                              " argument(s)).");
}

// ---- LoweringTable ----

void LoweringTable::insert(const std::string& name, LoweringEntry e) {
  if (!registry::find(name)) throw std::logic_error("[to_onnx] ONNX lowering for unknown primitive " + name + ".");
  if (!entries_.emplace(name, std::move(e)).second) {
    throw std::logic_error("[to_onnx] Second ONNX lowering for primitive " + name + ".");
  }
}

void LoweringTable::add(const std::string& name, Lowering lower) { insert(name, {std::move(lower), "", false, ""}); }

void LoweringTable::add(std::initializer_list<std::pair<const char*, Lowering>> entries) {
  for (auto& [name, lower] : entries) add(name, lower);
}

void LoweringTable::refuse(const std::string& name, const std::string& reason) {
  if (reason.empty()) throw std::logic_error("[to_onnx] A refusal of " + name + " needs a reason.");
  insert(name, {nullptr, reason, false, ""});
}

void LoweringTable::polymorphic(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = entries_.find(n);
    if (it == entries_.end() || !it->second.lower) {
      throw std::logic_error(std::string("[to_onnx] ") + n + " is marked polymorphic without a lowering.");
    }
    it->second.polymorphic = true;
  }
}

void LoweringTable::refuse_shapeless(const std::string& name, const std::string& reason) {
  auto it = entries_.find(name);
  if (it == entries_.end() || !it->second.lower || it->second.polymorphic || reason.empty()) {
    throw std::logic_error("[to_onnx] A shapeless refusal of " + name +
                           " needs a lowering that is not polymorphic, and a reason.");
  }
  it->second.shapeless_refusal = reason;
}

const LoweringEntry* LoweringTable::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

const LoweringTable& lowerings() {
  static const LoweringTable table = [] {
    LoweringTable t;
    register_elementwise_onnx(t);
    register_shape_onnx(t);
    register_linalg_onnx(t);
    register_reduce_onnx(t);
    register_index_onnx(t);
    register_fast_onnx(t);
    register_misc_onnx(t);
    register_conv_onnx(t);
    register_sort_onnx(t);
    register_quantized_onnx(t);
    register_random_onnx(t);
    register_fft_onnx(t);
    return t;
  }();
  return table;
}

// ---- the model ----

void fill_tensor(onnx::TensorProto& t, const std::string& name, const array& value) {
  const array a = row_major_now(value);
  t.set_name(name);
  // complex64 as float32 pairs (the same bytes), the form the graph computes complex values in.
  t.set_data_type(onnx_type(a.dtype() == complex64 ? float32 : a.dtype()));
  for (auto d : a.shape()) t.add_dims(d);
  if (a.dtype() == complex64) t.add_dims(2);
  t.set_raw_data(std::string(static_cast<const char*>(a.raw_data()), a.nbytes()));
}

namespace {

using Described = std::vector<std::tuple<std::string, Shape, Dtype>>;

// A graph input's or output's type: fixed dims, or (shapeless) symbolic ones named after the value.
void set_type(onnx::ValueInfoProto& v, const std::string& name, const Shape& shape, Dtype dtype, bool shapeless,
              bool output) {
  if (dtype == complex64) {
    throw OnnxRefusal("[to_onnx] A complex64 graph " + std::string(output ? "output" : "input") + " (" + name +
                      "): ONNX Runtime has no complex64 kernels, so kiln computes complex values inside the graph as "
                      "float32 pairs only.");
  }
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_type(dtype));
  auto* sh = tt->mutable_shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shapeless) {
      sh->add_dim()->set_dim_param(name + "_d" + std::to_string(d));
    } else {
      sh->add_dim()->set_dim_value(shape[d]);
    }
  }
}

template <typename T>
const T& field(const ExportCallbackInput& ev, const char* key) {
  auto it = ev.find(key);
  if (it == ev.end() || !std::holds_alternative<T>(it->second)) {
    throw std::logic_error(std::string("[to_onnx] export event without a '") + key + "' entry of the expected type");
  }
  return std::get<T>(it->second);
}

}  // namespace

onnx::ModelProto build_model(const ImportedFunction& fn, const OnnxOptions& options) {
  if (options.opset < kMinOpset || options.opset > kMaxOpset) {
    throw OnnxRefusal("[to_onnx] Opset " + std::to_string(options.opset) + " is not supported: kiln's lowerings are "
                      "written for opsets " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                      " (from 18 on, Reduce*, Split and Pad take their axes as inputs).");
  }
  std::vector<ExportCallbackInput> events;
  export_events(fn, options.function, [&](const ExportCallbackInput& ev) { events.push_back(ev); });

  onnx::ModelProto model;
  model.set_ir_version(options.opset >= 23 ? 11 : options.opset >= 21 ? 10 : options.opset >= 19 ? 9 : 8);
  model.set_producer_name("kiln");
  model.set_producer_version("0.1.0");
  auto* imp = model.add_opset_import();
  imp->set_domain("");
  imp->set_version(options.opset);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("kiln_function_" + std::to_string(options.function));
  const bool shapeless = fn.info().shapeless;
  GraphBuilder g(graph, options.opset, shapeless);
  g.matmul_nbits = options.matmul_nbits;

  // Event names (A, B, ...) -> ONNX value names.
  std::unordered_map<std::string, std::string> onnx_name;
  auto value = [&](const std::string& n) {
    auto it = onnx_name.find(n);
    if (it != onnx_name.end()) return it->second;
    return onnx_name.emplace(n, "v" + n).first->second;
  };
  const LoweringTable& table = lowerings();
  Described inputs, outputs;
  for (auto& ev : events) {
    const std::string& type = field<std::string>(ev, "type");
    if (type == "inputs") {
      inputs = field<Described>(ev, "inputs");
    } else if (type == "keyword_inputs") {
      const auto& kws = field<std::vector<std::pair<std::string, std::string>>>(ev, "keywords");
      std::set<std::string> kw_names;
      for (auto& [kw, n] : kws) {
        onnx_name[n] = kw;
        kw_names.insert(n);
      }
      size_t k = 0;
      for (auto& [n, shape, dtype] : inputs) {
        if (!kw_names.count(n)) onnx_name[n] = "arg" + std::to_string(k++);
        set_type(*graph.add_input(), onnx_name.at(n), shape, dtype, shapeless, false);
      }
    } else if (type == "outputs") {
      outputs = field<Described>(ev, "outputs");
    } else if (type == "constants") {
      for (auto& [n, a] : field<std::vector<std::pair<std::string, array>>>(ev, "constants")) {
        onnx_name[n] = "const_" + n;
        fill_tensor(*graph.add_initializer(), onnx_name.at(n), a);
        g.add_constant(onnx_name.at(n), a);
      }
    } else if (type == "primitive") {
      const std::string& name = field<std::string>(ev, "name");
      const LoweringEntry* e = table.find(name);
      if (!e) throw OnnxRefusal("[to_onnx] Primitive " + name + " has no ONNX lowering yet.");
      if (!e->lower) throw OnnxRefusal("[to_onnx] " + name + " cannot be lowered to ONNX: " + e->refusal);
      if (shapeless && !e->polymorphic) {
        const PrimitiveDef* def = registry::find(name);
        if (def && !def->shapeless) {
          throw OnnxRefusal("[to_onnx] " + name + " cannot be lowered in a shapeless function: MLX has no shape "
                            "rule for it in shapeless replay (its import of this file throws at " + name +
                            "), so the file does not define its output's shape for other input sizes.");
        }
        throw OnnxRefusal("[to_onnx] " + name + " cannot be lowered in a shapeless function: " +
                          (e->shapeless_refusal.empty() ? std::string("its lowering depends on the recorded shapes")
                                                        : e->shapeless_refusal) + ".");
      }
      std::vector<Tensor> ins, outs;
      for (auto& [n, shape, dtype] : field<Described>(ev, "inputs")) ins.push_back({value(n), shape, dtype});
      for (auto& [n, shape, dtype] : field<Described>(ev, "outputs")) outs.push_back({value(n), shape, dtype});
      Context c(g, name, std::move(ins), std::move(outs), field<std::vector<StateT>>(ev, "arguments"));
      if (!lower_complex(c)) e->lower(c);
    }
  }
  // Outputs are their own values (out0, out1, ...), so that an input or a constant can be an output,
  // or one value two outputs.
  for (size_t k = 0; k < outputs.size(); ++k) {
    auto& [n, shape, dtype] = outputs[k];
    const std::string out = "out" + std::to_string(k);
    auto* node = graph.add_node();
    node->set_op_type("Identity");
    node->set_name("output_" + std::to_string(k));
    node->add_input(value(n));
    node->add_output(out);
    set_type(*graph.add_output(), out, shape, dtype, shapeless, true);
  }
  // The contrib domain, when a lowering used it.
  for (auto& n : graph.node()) {
    if (n.domain() == "com.microsoft") {
      auto* ms = model.add_opset_import();
      ms->set_domain("com.microsoft");
      ms->set_version(1);
      break;
    }
  }
  // Initializers no node reads (a constant a lowering re-encoded, e.g. packed 4-bit weights given to
  // DequantizeLinear as UINT4) are dropped, so the model does not carry them twice.
  std::set<std::string> used;
  for (auto& n : graph.node()) {
    for (auto& i : n.input()) used.insert(i);
  }
  auto* inits = graph.mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    if (!used.count(inits->Get(i).name())) inits->DeleteSubrange(i, 1);
  }
  return model;
}

namespace {

// Moves initializers of at least `threshold` bytes into `data` (ONNX external data, offsets aligned
// to 4096 bytes as ONNX's own writer does).
void externalize(onnx::ModelProto& model, const std::string& location, uint64_t threshold, std::string& data) {
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() < threshold) continue;
    while (data.size() % 4096) data.push_back('\0');
    const uint64_t offset = data.size();
    data += t.raw_data();
    const uint64_t length = t.raw_data().size();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(length));
  }
}

}  // namespace

void check_protobuf_size(uint64_t bytes, const OnnxOptions& options, uint64_t limit) {
  if (bytes <= limit) return;
  const std::string size = std::to_string(bytes) + " bytes, over protobuf's limit of " + std::to_string(limit) +
                           " bytes for one message";
  if (!options.external_data) {
    throw OnnxRefusal("[to_onnx] The model would be " + size + " (2 GB): convert with external data (--external-data, "
                      "external_data=True in Python), which stores initializers of " +
                      std::to_string(options.external_threshold) + " bytes and more in OUT.data beside the model. "
                      "Nothing was written.");
  }
  throw OnnxRefusal("[to_onnx] Even with external data the model would be " + size + " (2 GB): its nodes and the "
                    "initializers under " + std::to_string(options.external_threshold) +
                    " bytes stay in the model file. Nothing was written.");
}

void write_model(onnx::ModelProto& model, const std::string& out_path, const OnnxOptions& options, uint64_t limit) {
  std::string data;
  std::string location;
  if (options.external_data) {
    location = std::filesystem::path(out_path).filename().string() + ".data";
    externalize(model, location, options.external_threshold, data);
  }
  // Before anything is serialized or written: a model protobuf cannot hold is refused whole.
  check_protobuf_size(model.ByteSizeLong(), options, limit);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("[to_onnx] Serializing the ONNX model failed.");
  // The side file first, so that a model never names data that is not there.
  if (!data.empty()) {
    const std::string side = (std::filesystem::path(out_path).parent_path() / location).string();
    io_detail::write_file_atomically(side, "[to_onnx]", [&](std::ostream& os) { os.write(data.data(), data.size()); });
  }
  io_detail::write_file_atomically(out_path, "[to_onnx]",
                                   [&](std::ostream& os) { os.write(bytes.data(), bytes.size()); });
}

}  // namespace kiln::onnx_export

namespace kiln {

void to_onnx(const std::string& in_path, const std::string& out_path, const OnnxOptions& options) {
  if (out_path.empty()) throw std::invalid_argument("[to_onnx] The output path is empty.");
  ImportedFunction fn = import_function(in_path);
  onnx::ModelProto model = onnx_export::build_model(fn, options);
  onnx_export::write_model(model, out_path, options);
}

}  // namespace kiln
