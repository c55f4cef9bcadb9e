// kiln.export_function, kiln.exporter (FunctionExporter), kiln.import_function (ImportedFunction): MLX's
// Python export API over kiln's C++ one, with kiln's additions (version=, metadata=, import limits,
// .metadata and .info). The file tools (export_to_dot, convert, supported_versions, the inspect dict)
// are in export_tools.cpp.
//
// The GIL: tracing calls the user's function, so the C++ exporter runs with the GIL released and the
// function (and an export callback) is called with it re-acquired; writing, importing and evaluating
// an imported function run without it, so other Python threads progress meanwhile and one imported
// function can be called from several threads at once.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mutex>
#include <optional>
#include <string_view>

#include "bindings.h"
#include "convert.h"
#include "export_util.h"
#include "trees.h"

namespace kiln::detail {
bool in_tracing();    // libkiln (src/core/mode.h): true on a thread that is tracing a function for export
bool in_transform();  // libkiln (src/core/mode.h): true while vjp / jvp / vmap call the function they transform
}  // namespace kiln::detail

namespace kiln::py {

namespace {

// ---- the user's function ----

// `fun` as kiln's exporter calls it: with the GIL, Python arrays in, a flat list of arrays out.
ArgsKwargsFn wrap_function(std::shared_ptr<PyRef> ref) {
  return [ref](const Args& args, const Kwargs& kwargs) -> std::vector<array> {
    nb::gil_scoped_acquire gil;
    std::vector<array> outs;
    {
      if (!ref->obj.is_valid()) throw std::runtime_error("[export_function] The exported function was released.");
      nb::list pos;
      for (auto& a : args) pos.append(nb::cast(a));
      nb::dict kw;
      for (auto& [k, v] : kwargs) kw[nb::str(k.c_str(), k.size())] = nb::cast(v);
      nb::object result = ref->obj(*nb::tuple(pos), **kw);
      outs = flatten_outputs(result, "export_function");
    }
    return outs;
  };
}

// ---- callbacks: ExportCallbackInput as the dictionaries MLX's Python API passes ----

nb::object value_to_python(const Value& v);

nb::object scalar_arg_to_python(const ScalarArg& s) {
  return std::visit([](auto x) -> nb::object { return nb::cast(x); }, s);
}

nb::object value_to_python(const Value& v) {
  return std::visit(
      [](const auto& x) -> nb::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nb::none();
        } else if constexpr (std::is_same_v<T, bool>) {
          return nb::bool_(x);
        } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint64_t>) {
          return nb::int_(x);
        } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          return nb::float_(static_cast<double>(x));
        } else if constexpr (std::is_same_v<T, Dtype>) {
          return nb::cast(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return nb::str(x.c_str(), x.size());
        } else if constexpr (std::is_same_v<T, std::optional<float>>) {
          return x ? nb::object(nb::float_(static_cast<double>(*x))) : nb::object(nb::none());
        } else if constexpr (std::is_same_v<T, std::vector<std::array<bool, 3>>>) {
          nb::list l;
          for (auto& t : x) l.append(nb::make_tuple(t[0], t[1], t[2]));
          return l;
        } else if constexpr (std::is_same_v<T, std::vector<ScalarArg>>) {
          nb::list l;
          for (auto& s : x) l.append(scalar_arg_to_python(s));
          return l;
        } else {  // vectors of integers
          nb::list l;
          for (auto e : x) l.append(nb::int_(e));
          return l;
        }
      },
      v);
}

nb::dict event_to_python(const ExportCallbackInput& input) {
  nb::dict d;
  for (auto& [key, value] : input) {
    nb::object v = std::visit(
        [](const auto& x) -> nb::object {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            return nb::str(x.c_str(), x.size());
          } else if constexpr (std::is_same_v<T, std::vector<std::tuple<std::string, Shape, Dtype>>>) {
            nb::list l;
            for (auto& [n, s, t] : x) l.append(nb::make_tuple(nb::str(n.c_str(), n.size()), shape_to_tuple(s), t));
            return l;
          } else if constexpr (std::is_same_v<T, std::vector<std::pair<std::string, array>>>) {
            nb::list l;
            for (auto& [n, a] : x) l.append(nb::make_tuple(nb::str(n.c_str(), n.size()), a));
            return l;
          } else if constexpr (std::is_same_v<T, std::vector<std::pair<std::string, std::string>>>) {
            nb::list l;
            for (auto& [k, n] : x) l.append(nb::make_tuple(nb::str(k.c_str(), k.size()), nb::str(n.c_str(), n.size())));
            return l;
          } else {  // std::vector<StateT>
            nb::list l;
            for (auto& s : x) l.append(value_to_python(s));
            return l;
          }
        },
        value);
    d[nb::str(key.c_str(), key.size())] = v;
  }
  return d;
}

ExportCallback wrap_callback(std::shared_ptr<PyRef> ref) {
  return [ref](const ExportCallbackInput& input) {
    nb::gil_scoped_acquire gil;
    if (!ref->obj.is_valid()) throw std::runtime_error("[export_function] The export callback was released.");
    nb::dict d = event_to_python(input);
    ref->obj(d);
  };
}

// ---- export_function / exporter ----

struct Target {
  std::optional<std::string> path;  // a file, or
  nb::handle callback;              // a callable
};

Target target_arg(nb::handle obj, const char* api) {
  Target t;
  if (auto p = path_arg(obj)) {
    t.path = *p;
  } else if (PyCallable_Check(obj.ptr())) {
    t.callback = obj;
  } else {
    throw nb::type_error((std::string("[") + api + "] The first argument must be a file path (str or os.PathLike) "
                          "or a callback, found " + py_type_name(obj) + ".").c_str());
  }
  return t;
}

void check_callable(nb::handle fun, const char* api) {
  if (!PyCallable_Check(fun.ptr())) {
    throw nb::type_error(
        (std::string("[") + api + "] fun must be a callable, found " + py_type_name(fun) + ".").c_str());
  }
}

// The layout options: version None keeps 0.30.1, or 0.32.1 when metadata is given (as MLX 0.32.1's
// export_function(..., metadata) writes its own layout).
ExportOptions export_options(bool shapeless, nb::handle version, nb::handle metadata, const Target& t,
                             const char* api) {
  ExportOptions o;
  o.shapeless = shapeless;
  bool has_version = !version.is_none(), has_metadata = !metadata.is_none();
  if (!t.path && (has_version || has_metadata)) {
    throw std::invalid_argument(std::string("[") + api +
                                "] version and metadata apply to files, not to an export callback.");
  }
  if (has_metadata) {
    if (!nb::isinstance<nb::str>(metadata)) {
      throw nb::type_error((std::string("[") + api + "] metadata must be a str, found " + py_type_name(metadata) + ".").c_str());
    }
    o.metadata = nb::cast<std::string>(metadata);
    if (!o.metadata.empty()) o.version = "0.32.1";
  }
  if (has_version) {
    if (!nb::isinstance<nb::str>(version)) {
      throw nb::type_error((std::string("[") + api + "] version must be a str such as \"0.30.1\", found " +
                            py_type_name(version) + ".").c_str());
    }
    o.version = nb::cast<std::string>(version);
  }
  return o;
}

// One exporter shared by the Python object and its calls: calls are serialized (the GIL is released
// while a trace and its write run, so two threads could otherwise enter at once).
// MLX raises RuntimeError (std::runtime_error) for a call after close() and for a second trace with
// the same signature; kiln's C++ exporter throws std::invalid_argument for both, so they are
// re-raised here as MLX's Python API raises them.
struct PyExporter {
  std::optional<FunctionExporter> exporter;
  std::mutex mu;
  bool closed = false;
  // The function and callback the exporter calls, visible to Python's cyclic GC (an exporter stored
  // in a dict that the function's closure holds is a cycle).
  std::shared_ptr<PyRef> fun, callback;

  void call(const Args& args, const Kwargs& kwargs) {
    nb::gil_scoped_release release;  // before taking the mutex: the holder may need the GIL to trace
    std::lock_guard<std::mutex> lock(mu);
    if (closed || !exporter) {
      throw std::runtime_error("[export_function] Attempting to write after exporting is closed.");
    }
    try {
      (*exporter)(args, kwargs);
    } catch (const std::invalid_argument& e) {
      static const char kTwice[] = "[export_function] Attempting to export a function twice";
      if (std::string_view(e.what()).starts_with(kTwice)) throw std::runtime_error(e.what());
      throw;
    }
  }
  void close() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu);
    if (exporter) exporter->close();
    closed = true;
  }
};

int exporter_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  auto* p = nb::inst_ptr<PyExporter>(self);
  if (p->fun && p->fun->obj.is_valid()) Py_VISIT(p->fun->obj.ptr());
  if (p->callback && p->callback->obj.is_valid()) Py_VISIT(p->callback->obj.ptr());
  return 0;
}

int exporter_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  auto* p = nb::inst_ptr<PyExporter>(self);
  if (p->fun) p->fun->obj.reset();
  if (p->callback) p->callback->obj.reset();
  return 0;
}

PyType_Slot exporter_slots[] = {{Py_tp_traverse, (void*)exporter_traverse},
                                {Py_tp_clear, (void*)exporter_clear},
                                {0, nullptr}};

// ---- import_function ----

struct PyImported {
  ImportedFunction fn;
  std::string file;

  nb::tuple call(nb::args args, nb::kwargs kwargs) const {
    auto [a, k] = extract_inputs(args, kwargs, "[import_function::call]");
    std::vector<array> outs;
    {
      nb::gil_scoped_release release;
      outs = fn(a, k);
      // Evaluated here, without the GIL, unless the call is part of a function being traced for export
      // or transformed (grad, vmap, ...): then the outputs stay lazy and join that graph.
      if (!kiln::detail::in_tracing() && !kiln::detail::in_transform()) kiln::eval(outs);
    }
    nb::list l;
    for (auto& o : outs) l.append(nb::cast(std::move(o)));
    return nb::tuple(l);
  }
};

uint64_t limit_arg(nb::handle obj, uint64_t deflt, const char* name) {
  if (obj.is_none()) return deflt;
  if (!PyLong_Check(obj.ptr()) || PyBool_Check(obj.ptr())) {
    throw nb::type_error((std::string("[import_function] ") + name + " must be an int (bytes; 0 disables the limit), found " +
                          py_type_name(obj) + ".").c_str());
  }
  auto v = nb::cast<int64_t>(obj);
  if (v < 0) throw std::invalid_argument(std::string("[import_function] ") + name + " must not be negative.");
  return static_cast<uint64_t>(v);
}

}  // namespace

void init_export_tools(nb::module_& m);  // export_tools.cpp

void init_export(nb::module_& m) {
  m.def(
      "export_function",
      [](nb::handle file_or_callback, nb::handle fun, nb::args args, bool shapeless, nb::handle version,
         nb::handle metadata, nb::kwargs kwargs) {
        const char* api = "export_function";
        Target t = target_arg(file_or_callback, api);
        check_callable(fun, api);
        ExportOptions opt = export_options(shapeless, version, metadata, t, api);
        auto [a, k] = extract_inputs(args, kwargs, "[export_function]");
        ArgsKwargsFn f = wrap_function(std::make_shared<PyRef>(fun));
        if (t.path) {
          nb::gil_scoped_release release;
          kiln::export_function(*t.path, f, a, k, opt);
        } else {
          ExportCallback cb = wrap_callback(std::make_shared<PyRef>(t.callback));
          nb::gil_scoped_release release;
          kiln::export_function(cb, f, a, k, shapeless);
        }
      },
      nb::arg().none(), "fun"_a.none(), "args"_a, nb::kw_only(), "shapeless"_a = false, "version"_a = nb::none(),
      "metadata"_a = nb::none(), "kwargs"_a,
      nb::sig("def export_function(file: str | os.PathLike | collections.abc.Callable[[dict], None], fun: collections.abc.Callable, "
              "*args, shapeless: bool = False, version: str | None = None, metadata: str | None = None, "
              "**kwargs) -> None"),
      R"doc(Export a function to an ``.mlxfn`` file (or send its trace to a callback), as MLX.

``fun`` takes arrays positionally and/or by keyword and returns an array, or a tuple or list of arrays
(kiln also takes a dict of arrays: its values are the outputs in insertion order, and importing gives
them back as a tuple in that order). The example inputs are ``*args`` and ``**kwargs`` (arrays, NumPy arrays or Python
scalars, converted as :func:`array` does) or, as MLX allows, a single tuple or list of them and/or a dict.

Args:
    file: a path (str or os.PathLike), or a callable receiving MLX's event dicts (keys ``"type"``
      (``"inputs"``, ``"keyword_inputs"``, ``"outputs"``, ``"constants"`` or ``"primitive"``), ``"inputs"``
      / ``"outputs"`` (lists of ``(name, shape, dtype)``), ``"keywords"`` (``(keyword, name)`` pairs),
      ``"constants"`` (``(name, array)`` pairs), ``"name"`` and ``"arguments"`` for a primitive).
    fun: the function to trace.
    shapeless: whether the function accepts inputs of other shapes (same ranks and dtypes).
    version: kiln: the MLX release whose layout to write (:func:`supported_versions`); default
      ``"0.30.1"``, or ``"0.32.1"`` when ``metadata`` is given.
    metadata: kiln (MLX 0.32.1's argument): a string stored in the header (layouts from 0.32.1).
)doc");

  nb::class_<PyExporter>(m, "FunctionExporter", nb::type_slots(exporter_slots),
                         "Exports several traces of one function to one file: make one with kiln.exporter(file, "
                         "fun), call it with each set of example inputs, then close it (or use it in a with "
                         "statement). The file is complete after every call.")
      .def("__call__",
           [](PyExporter& self, nb::args args, nb::kwargs kwargs) {
             auto [a, k] = extract_inputs(args, kwargs, "[export_function]");
             self.call(a, k);
           },
           "args"_a, "kwargs"_a, "Trace the function once more with these example inputs and append the trace.")
      .def("close", &PyExporter::close, "Forbid further traces (the file is already complete).")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](PyExporter& self, nb::handle, nb::handle, nb::handle) { self.close(); },
           "exc_type"_a = nb::none(), "exc_value"_a = nb::none(), "traceback"_a = nb::none());

  m.def(
      "exporter",
      [](nb::handle file, nb::handle fun, bool shapeless, nb::handle version, nb::handle metadata) {
        const char* api = "exporter";
        Target t = target_arg(file, api);
        check_callable(fun, api);
        ExportOptions opt = export_options(shapeless, version, metadata, t, api);
        auto self = std::make_unique<PyExporter>();
        self->fun = std::make_shared<PyRef>(fun);
        ArgsKwargsFn f = wrap_function(self->fun);
        if (t.path) {
          nb::gil_scoped_release release;
          self->exporter.emplace(kiln::exporter(*t.path, f, opt));
        } else {
          self->callback = std::make_shared<PyRef>(t.callback);
          ExportCallback cb = wrap_callback(self->callback);
          nb::gil_scoped_release release;
          self->exporter.emplace(kiln::exporter(cb, f, shapeless));
        }
        return self.release();
      },
      "file"_a.none(), "fun"_a.none(), nb::kw_only(), "shapeless"_a = false, "version"_a = nb::none(), "metadata"_a = nb::none(),
      nb::rv_policy::take_ownership,
      nb::sig("def exporter(file: str | os.PathLike | collections.abc.Callable[[dict], None], fun: collections.abc.Callable, *, "
              "shapeless: bool = False, version: str | None = None, metadata: str | None = None) "
              "-> FunctionExporter"),
      R"doc(Make a FunctionExporter writing several traces of ``fun`` to ``file``, as MLX:

    with kiln.exporter("fun.mlxfn", fun) as e:
        e(kiln.zeros((2,)))
        e(kiln.zeros((2,)), kiln.zeros((2,)))

``file`` may also be a callback (as for :func:`export_function`); ``shapeless``, ``version`` and
``metadata`` as for :func:`export_function`.)doc");

  nb::class_<PyImported>(m, "ImportedFunction",
                         "A function loaded by kiln.import_function: call it with arrays (kiln or NumPy; not "
                         "Python scalars, as in MLX) positionally and/or by keyword, or with a tuple and/or a "
                         "dict of them; it returns a tuple of arrays.")
      .def("__call__", &PyImported::call, "args"_a, "kwargs"_a,
           nb::sig("def __call__(self, *args, **kwargs) -> tuple[array, ...]"))
      .def_prop_ro(
          "metadata", [](const PyImported& self) { return decode_text(self.fn.metadata()); },
          "The metadata string saved with the function (MLX 0.32.1's layouts; '' otherwise).")
      .def_prop_ro(
          "info", [](const PyImported& self) { return info_dict(self.fn.info(), false); },
          "The file's structure: the dict `kiln inspect --json` prints, without its \"file\" key.")
      .def("_inspect", [](const PyImported& self, bool tape) { return info_dict(self.fn.info(), tape); },
           "tape"_a = false)
      .def_ro("file", &PyImported::file, "The path the function was imported from.")
      .def("__repr__", [](const PyImported& self) {
        auto& info = self.fn.info();
        return "<kiln.ImportedFunction " + self.file + ": " + std::to_string(info.functions.size()) +
               " signature(s), MLX " + info.version + (info.shapeless ? ", shapeless" : "") + ">";
      });

  m.def(
      "import_function",
      [](nb::handle file, nb::handle max_array_bytes, nb::handle max_call_bytes, bool mlx_cpu_quirks) {
        auto path = path_arg(file);
        if (!path) {
          throw nb::type_error(
              ("[import_function] file must be a path (str or os.PathLike), found " + py_type_name(file) + ".").c_str());
        }
        ImportOptions opt;
        opt.max_array_bytes = limit_arg(max_array_bytes, opt.max_array_bytes, "max_array_bytes");
        opt.max_call_bytes = limit_arg(max_call_bytes, opt.max_call_bytes, "max_call_bytes");
        opt.writer_cpu_quirks = mlx_cpu_quirks;
        std::optional<ImportedFunction> fn;
        {
          nb::gil_scoped_release release;
          fn.emplace(kiln::import_function(*path, opt));
        }
        return new PyImported{std::move(*fn), *path};
      },
      "file"_a.none(), nb::kw_only(), "max_array_bytes"_a = nb::none(), "max_call_bytes"_a = nb::none(),
      "mlx_cpu_quirks"_a = false, nb::rv_policy::take_ownership,
      nb::sig("def import_function(file: str | os.PathLike, *, max_array_bytes: int | None = None, "
              "max_call_bytes: int | None = None, mlx_cpu_quirks: bool = False) -> ImportedFunction"),
      R"doc(Import a function from an ``.mlxfn`` file written by MLX (0.22 to 0.32) or kiln, as MLX.

The result is called like the exported function, with ``*args`` and ``**kwargs`` or a tuple and/or a dict
of arrays, and returns a tuple of arrays. The file is parsed completely here (the constants are read when a
call first needs them); a call runs, and its outputs are evaluated, with the GIL released, so the function
can be called from several threads at once.

Args:
    file: the path.
    max_array_bytes: kiln: the largest array a node or constant may have (default 4 GiB; 0: no limit).
    max_call_bytes: kiln: the largest working memory of one call (default 16 GiB; 0: no limit).
    mlx_cpu_quirks: kiln: reproduce the numbers MLX's CPU backend gave for the file, known bugs of its
      writer's version included (default: the documented semantics).
)doc");

  init_export_tools(m);
}

}  // namespace kiln::py
