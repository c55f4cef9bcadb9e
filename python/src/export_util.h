// Helpers shared by the export binding files (export.cpp, export_tools.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert.h"

namespace kiln::py {

// A Python object kept alive by C++ code that may run, copy and drop it without the GIL (kiln's
// exporter stores the traced function in a std::function): share it through a shared_ptr<PyRef>;
// the last owner takes the GIL to release the object.
struct PyRef {
  nb::object obj;
  explicit PyRef(nb::handle h) : obj(nb::borrow(h)) {}
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef();
};

// A file path: a str, bytes, or an os.PathLike (bytes are taken as they are). nullopt for anything else.
std::optional<std::string> path_arg(nb::handle obj);

// The inputs of an exported or imported function as MLX's Python API takes them: `*args` and
// `**kwargs`, or a single tuple/list and/or a dict (then nothing else). kiln converts each input as
// kiln.array does (arrays as they are; NumPy arrays and Python scalars become arrays; lists are not
// inputs, as in MLX). Throws
// ValueError "<prefix> Inputs can either be ..." (MLX's message) for other forms.
std::pair<Args, Kwargs> extract_inputs(nb::handle args, nb::handle kwargs, const std::string& prefix);

// A traced function's result as a list of arrays: an array, a tuple or list of arrays, or (kiln) a
// dict of arrays, taken in insertion order. Throws ValueError naming `api` for anything else
// (nested containers included, as MLX).
std::vector<array> flatten_outputs(nb::handle result, const char* api);

nb::tuple shape_to_tuple(const Shape& s);

// Bytes that should be text (metadata): decoded as UTF-8, invalid sequences replaced by U+FFFD.
nb::str decode_text(const std::string& s);

// The dict `kiln inspect --json [--tape]` prints for `info`, without its "file" key.
nb::dict info_dict(const FileInfo& info, bool tape);

}  // namespace kiln::py
