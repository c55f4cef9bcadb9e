// The export helpers (export_util.h) and the file tools: kiln.export_to_dot (MLX's), kiln.convert,
// kiln.supported_versions and the dict behind kiln.inspect / ImportedFunction.info (kiln's).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fstream>
#include <sstream>

#include "bindings.h"
#include "export_util.h"
#include "trees.h"

namespace kiln::py {

PyRef::~PyRef() {
  if (!obj.is_valid()) return;
  if (!Py_IsInitialized()) {  // interpreter gone: nothing to release into
    (void)obj.release();
    return;
  }
  nb::gil_scoped_acquire gil;
  obj.reset();
}

std::optional<std::string> path_arg(nb::handle obj) {
  if (nb::isinstance<nb::str>(obj)) return nb::cast<std::string>(obj);
  if (nb::isinstance<nb::bytes>(obj)) {
    auto b = nb::borrow<nb::bytes>(obj);
    return std::string(b.c_str(), b.size());
  }
  if (nb::hasattr(obj, "__fspath__")) {
    nb::object p = nb::steal(PyOS_FSPath(obj.ptr()));
    if (!p.is_valid()) throw nb::python_error();
    if (nb::isinstance<nb::str>(p)) return nb::cast<std::string>(p);
    if (nb::isinstance<nb::bytes>(p)) {
      auto b = nb::borrow<nb::bytes>(p);
      return std::string(b.c_str(), b.size());
    }
  }
  return std::nullopt;
}

namespace {

bool is_seq(nb::handle h) { return PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()); }
bool is_dict(nb::handle h) { return PyDict_Check(h.ptr()); }

// One input: an array, or a NumPy array or Python scalar converted as kiln.array does. Lists, tuples
// and dicts are refused as inputs (as MLX refuses them), so that `f([x, y])` can only mean the
// list-of-inputs form.
array input_array(nb::handle h, const std::string& prefix, const char* api, bool scalars) {
  if (nb::isinstance<array>(h)) return nb::cast<array>(h);
  if (!scalars && is_python_scalar(h)) {
    // As MLX: an imported function is called with arrays (a scalar has no shape to match a trace by).
    throw std::invalid_argument(prefix + " Expected arrays (kiln or NumPy) as inputs, found a Python " +
                                py_type_name(h) + "; wrap it with kiln.array(...).");
  }
  if (is_seq(h) || is_dict(h)) {
    throw std::invalid_argument(prefix +
                                " Inputs can either be a variable number of positional and keyword arrays or a "
                                "single tuple and/or dictionary of arrays; found a " + py_type_name(h) +
                                " where an input array was expected.");
  }
  return to_array(h, std::nullopt, api);
}

Kwargs kwargs_from(nb::handle dict, const std::string& prefix, const char* api, bool scalars) {
  Kwargs out;
  for (auto [k, v] : nb::borrow<nb::dict>(dict)) {
    if (!nb::isinstance<nb::str>(k)) {
      throw std::invalid_argument(prefix + " Keyword input names must be strings, found " + py_type_name(k) + ".");
    }
    out.emplace(nb::cast<std::string>(k), input_array(v, prefix, api, scalars));
  }
  return out;
}

Args args_from(nb::handle seq, const std::string& prefix, const char* api, bool scalars) {
  Args out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) out.push_back(input_array(h, prefix, api, scalars));
  return out;
}

}  // namespace

std::pair<Args, Kwargs> extract_inputs(nb::handle args, nb::handle kwargs, const std::string& prefix) {
  // The api name for conversion errors: the prefix without its brackets.
  std::string api = prefix.size() > 2 ? prefix.substr(1, prefix.size() - 2) : prefix;
  auto bad = [&]() {
    return std::invalid_argument(prefix +
                                 " Inputs can either be a variable number of positional and keyword arrays or a "
                                 "single tuple and/or dictionary of arrays.");
  };
  auto a = nb::borrow<nb::tuple>(args);
  auto kw = nb::borrow<nb::dict>(kwargs);
  // Example inputs of an export may be Python scalars (converted as kiln.array does); calls of an
  // imported function take arrays only, as in MLX.
  const bool scalars = prefix != "[import_function::call]";
  size_t n = a.size();
  if (n == 0) return {Args{}, kwargs_from(kw, prefix, api.c_str(), scalars)};
  if (!is_seq(a[0]) && !is_dict(a[0])) {
    // Positional inputs (arrays, NumPy arrays, scalars, nested lists after the first) and keyword ones.
    return {args_from(a, prefix, api.c_str(), scalars), kwargs_from(kw, prefix, api.c_str(), scalars)};
  }
  if (kw.size() != 0) throw bad();
  if (n == 1) {
    if (is_seq(a[0])) return {args_from(a[0], prefix, api.c_str(), scalars), Kwargs{}};
    return {Args{}, kwargs_from(a[0], prefix, api.c_str(), scalars)};
  }
  if (n == 2 && is_seq(a[0]) && is_dict(a[1])) {
    return {args_from(a[0], prefix, api.c_str(), scalars), kwargs_from(a[1], prefix, api.c_str(), scalars)};
  }
  throw bad();
}

std::vector<array> flatten_outputs(nb::handle result, const char* api) {
  if (nb::isinstance<array>(result)) return {nb::cast<array>(result)};
  std::string msg = std::string("[") + api +
                    "] Outputs can be either a single array, a tuple or list of arrays (or, in kiln, a dict of "
                    "arrays), found ";
  if (!is_seq(result) && !is_dict(result)) throw std::invalid_argument(msg + py_type_name(result) + ".");
  std::vector<array> out;
  auto take = [&](nb::handle leaf) {
    if (!nb::isinstance<array>(leaf)) {
      throw std::invalid_argument(msg + "a " + py_type_name(result) + " holding a " + py_type_name(leaf) + ".");
    }
    out.push_back(nb::cast<array>(leaf));
  };
  if (is_dict(result)) {
    for (auto [k, v] : nb::borrow<nb::dict>(result)) take(v);  // insertion order
  } else {
    for (nb::handle h : nb::borrow<nb::sequence>(result)) take(h);
  }
  return out;
}

nb::tuple shape_to_tuple(const Shape& s) {
  nb::list l;
  for (auto d : s) l.append(d);
  return nb::tuple(l);
}

nb::str decode_text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw nb::python_error();
  return nb::steal<nb::str>(o);
}

namespace {

nb::dict spec_dict(const ArraySpec& s) {
  nb::dict d;
  nb::list shape;
  for (auto v : s.shape) shape.append(v);
  d["shape"] = shape;
  d["dtype"] = dtype_name(s.dtype);
  return d;
}

// As the CLI names devices: "cpu:0", "gpu:0".
std::string device_text(const StreamInfo& s) {
  std::string d = s.device_type == 0   ? "cpu"
                  : s.device_type == 1 ? "gpu"
                                       : "device" + std::to_string(s.device_type);
  return d + ":" + std::to_string(s.device_index);
}

nb::list id_list(const std::vector<uint64_t>& ids) {
  nb::list l;
  for (auto i : ids) l.append(i);
  return l;
}

}  // namespace

nb::dict info_dict(const FileInfo& info, bool tape) {
  nb::dict j;
  j["version"] = decode_text(info.version);
  j["format"] = info.format;
  j["metadata"] = decode_text(info.metadata);
  j["shapeless"] = info.shapeless;
  j["file_bytes"] = info.file_bytes;
  j["constants"] = info.constants;
  j["constant_bytes"] = info.constant_bytes;
  nb::list functions;
  for (auto& f : info.functions) {
    nb::dict fj;
    size_t np = f.num_positional();
    nb::list pos;
    nb::dict kw;
    for (size_t i = 0; i < f.inputs.size(); ++i) {
      if (i < np) {
        pos.append(spec_dict(f.inputs[i]));
      } else {
        kw[nb::str(f.kwarg_keys[i - np].c_str(), f.kwarg_keys[i - np].size())] = spec_dict(f.inputs[i]);
      }
    }
    fj["positional_inputs"] = pos;
    fj["keyword_inputs"] = kw;
    nb::list outs;
    for (auto& o : f.outputs) outs.append(spec_dict(o));
    fj["outputs"] = outs;
    fj["tape_length"] = f.tape.size();
    fj["primitives"] = f.num_primitives;
    nb::dict hist;
    for (auto& [name, n] : f.primitive_histogram) hist[nb::str(name.c_str(), name.size())] = n;
    fj["primitive_histogram"] = hist;
    nb::list streams;
    for (auto& [s, n] : f.streams) {
      nb::dict sd;
      sd["index"] = s.index;
      sd["device"] = device_text(s);
      sd["nodes"] = n;
      streams.append(sd);
    }
    fj["streams"] = streams;
    fj["new_constants"] = f.new_constants;
    fj["new_constant_bytes"] = f.new_constant_bytes;
    if (tape) {
      nb::list tl;
      for (auto& t : f.tape) {
        nb::dict tj;
        tj["id"] = t.id;
        if (t.kind == TapeEntryInfo::Kind::Input) tj["kind"] = "input";
        if (t.kind == TapeEntryInfo::Kind::Constant) tj["kind"] = "constant";
        if (t.kind == TapeEntryInfo::Kind::Primitive) {
          tj["kind"] = "primitive";
          tj["name"] = t.name;
          tj["display_name"] = t.display_name;
          tj["inputs"] = id_list(t.input_ids);
          tj["state"] = decode_text(t.state_text);
          nb::dict sd;
          sd["index"] = t.stream.index;
          sd["device"] = device_text(t.stream);
          tj["stream"] = sd;
        }
        nb::list to;
        for (auto& o : t.outputs) to.append(spec_dict(o));
        tj["outputs"] = to;
        tl.append(tj);
      }
      fj["tape"] = tl;
    }
    functions.append(fj);
  }
  j["functions"] = functions;
  return j;
}

void init_export_tools(nb::module_& m) {
  m.def(
      "export_to_dot",
      [](nb::handle file, nb::args args, nb::kwargs kwargs) {
        std::vector<array> outputs = tree_flatten(nb::make_tuple(args, kwargs), true, "export_to_dot");
        std::vector<std::pair<array, std::string>> names;
        for (auto [k, v] : kwargs) {
          if (nb::isinstance<array>(v)) names.emplace_back(nb::cast<array>(v), nb::cast<std::string>(k));
        }
        auto path = path_arg(file);
        if (!path && !nb::hasattr(file, "write")) {
          throw std::invalid_argument(
              "[export_to_dot] Accepts file-like objects or strings to be used as filenames, found " +
              py_type_name(file) + ".");
        }
        std::ostringstream os;
        {
          nb::gil_scoped_release release;
          kiln::export_to_dot(os, outputs, names);
        }
        if (path) {
          std::string text = os.str();
          nb::gil_scoped_release release;
          std::ofstream out(*path, std::ios::binary);
          if (!out) throw std::runtime_error("[export_to_dot] Failed to open " + *path + " for writing.");
          out << text;
          if (!out) throw std::runtime_error("[export_to_dot] Failed to write " + *path + ".");
        } else {
          file.attr("write")(os.str());
        }
      },
      "file"_a.none(), "args"_a, "kwargs"_a,
      nb::sig("def export_to_dot(file: str | os.PathLike | typing.IO, *args, **kwargs) -> None"),
      R"doc(Write the graph behind some lazy arrays in Graphviz DOT format, as MLX.

The graph holds every unevaluated array the outputs depend on; evaluated arrays are its inputs.

Args:
    file: a path (str or os.PathLike) or an object with a ``write`` method.
    *args: the output arrays (or trees of them).
    **kwargs: arrays to show under the given names (they are outputs too).
)doc");

  m.def(
      "convert",
      [](nb::handle in, nb::handle out, const std::string& version, nb::handle metadata) {
        auto src = path_arg(in), dst = path_arg(out);
        if (!src || !dst) {
          throw nb::type_error(("[convert] Expected file paths (str or os.PathLike), found " +
                                py_type_name(!src ? in : out) + ".").c_str());
        }
        ConvertOptions opt;
        opt.version = version;
        if (!metadata.is_none()) {
          if (!nb::isinstance<nb::str>(metadata)) {
            throw nb::type_error(("[convert] metadata must be a str or None, found " + py_type_name(metadata) + ".").c_str());
          }
          opt.metadata = nb::cast<std::string>(metadata);
        }
        nb::gil_scoped_release release;
        kiln::convert_file(*src, *dst, opt);
      },
      "in_file"_a.none(), "out_file"_a.none(), "version"_a = "0.30.1", "metadata"_a = nb::none(),
      nb::sig("def convert(in_file: str | os.PathLike, out_file: str | os.PathLike, "
              "version: str = '0.30.1', metadata: str | None = None) -> None"),
      R"doc(Rewrite an ``.mlxfn`` file (from any MLX version kiln reads) in another MLX release's layout.

``metadata``: None keeps the input's (refused when the target layout has no metadata field and the input's
is not empty); a string replaces it. The output appears complete or not at all. Raises ValueError naming the
primitive when the target layout cannot express a node.)doc");

  m.def(
      "to_onnx",
      [](nb::handle in, nb::handle out, int opset, size_t function, bool external_data, bool matmul_nbits) {
        auto src = path_arg(in), dst = path_arg(out);
        if (!src || !dst) {
          throw nb::type_error(("[to_onnx] Expected file paths (str or os.PathLike), found " +
                                py_type_name(!src ? in : out) + ".").c_str());
        }
        kiln::OnnxOptions opt;
        opt.opset = opset;
        opt.function = function;
        opt.external_data = external_data;
        opt.matmul_nbits = matmul_nbits;
        nb::gil_scoped_release release;
        kiln::to_onnx(*src, *dst, opt);
      },
      "in_path"_a.none(), "out_path"_a.none(), "opset"_a = 21, "function"_a = 0, "external_data"_a = false,
      "matmul_nbits"_a = false,
      nb::sig("def to_onnx(in_path: str | os.PathLike, out_path: str | os.PathLike, opset: int = 21, "
              "function: int = 0, external_data: bool = False, matmul_nbits: bool = False) -> None"),
      R"doc(Convert function ``function`` (0-based) of an ``.mlxfn`` file to an ONNX model (kiln extension).

Graph inputs are ``arg0``, ``arg1``, ... and the keyword names; outputs ``out0``, ``out1``, ...; constants
become initializers (with ``external_data``, those of 1 KiB and more go to ``OUT.data`` beside the model).
With ``matmul_nbits``, affine 4-bit quantized matmuls with constant weights become ONNX Runtime's
``com.microsoft.MatMulNBits``.
The model appears complete or not at all. Raises RuntimeError naming the primitive when ONNX cannot express
the function (or ``opset`` is too old for it), IndexError for a function the file does not have.)doc");

  m.def("supported_versions", &format::supported_versions,
        "The MLX releases whose .mlxfn layouts kiln reads and writes, oldest first.");
}

}  // namespace kiln::py
