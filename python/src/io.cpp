// The array-file bindings: private helpers (kiln._core._io_*) that python/kiln/_io.py builds MLX's
// save / savez / savez_compressed / load / save_safetensors on. Paths are read and written by the C++
// library with the GIL released; Python file objects are written through a std::streambuf that calls
// their write() (big blocks go straight from the array's memory, without a copy) and read by the
// Python side into bytes, parsed here with the GIL released.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unordered_map.h>

#include <algorithm>
#include <functional>
#include <ostream>
#include <streambuf>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings.h"

namespace kiln::py {

namespace {

// Writes to a Python object's write(); the GIL must be held while it is used. Handles short writes
// (raw files) by writing the rest; a Python exception propagates through the ostream (badbit).
class PyWriteBuf : public std::streambuf {
 public:
  explicit PyWriteBuf(nb::handle file) : write_(file.attr("write")) { setp(buf_, buf_ + sizeof buf_); }

 protected:
  int_type overflow(int_type ch) override {
    flush_buffer();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n >= static_cast<std::streamsize>(sizeof buf_)) {
      flush_buffer();
      write_all(s, static_cast<size_t>(n));
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }
  int sync() override {
    flush_buffer();
    return 0;
  }

 private:
  void flush_buffer() {
    size_t n = static_cast<size_t>(pptr() - pbase());
    if (n) write_all(pbase(), n);
    setp(buf_, buf_ + sizeof buf_);
  }
  void write_all(const char* p, size_t n) {
    while (n) {
      const size_t chunk = std::min<size_t>(n, size_t(1) << 30);
      nb::object view = nb::steal(PyMemoryView_FromMemory(const_cast<char*>(p), static_cast<Py_ssize_t>(chunk), PyBUF_READ));
      if (!view.is_valid()) throw nb::python_error();
      nb::object r = write_(view);
      // None (some file-likes return nothing) counts as everything written.
      size_t done = chunk;
      if (!r.is_none()) {
        done = nb::cast<size_t>(r);
        if (done == 0 || done > chunk) {
          throw std::runtime_error("[save] The file object's write() reported " + std::to_string(done) + " of " +
                                   std::to_string(chunk) + " bytes written.");
        }
      }
      p += done;
      n -= done;
    }
  }

  nb::object write_;
  char buf_[1 << 16];
};

void write_to_file_object(nb::handle file, const std::function<void(std::ostream&)>& body) {
  PyWriteBuf buf(file);
  std::ostream os(&buf);
  os.exceptions(std::ios::badbit);
  body(os);
  os.flush();
}

// A dict in sorted key order (the C++ maps are unordered).
template <typename V>
nb::dict sorted_dict(std::unordered_map<std::string, V>&& m) {
  std::vector<std::string> keys;
  keys.reserve(m.size());
  for (auto& [k, v] : m) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  nb::dict d;
  for (auto& k : keys) d[nb::str(k.data(), k.size())] = nb::cast(std::move(m.at(k)));
  return d;
}

nb::tuple safetensors_result(SafetensorsLoad&& r) {
  nb::dict arrays = sorted_dict(std::move(r.first));
  nb::dict metadata = sorted_dict(std::move(r.second));
  return nb::make_tuple(arrays, metadata);
}

using ArrayMap = std::unordered_map<std::string, array>;
using MetaMap = std::unordered_map<std::string, std::string>;

void eval_all(ArrayMap& arrays) {
  std::vector<array> v;
  v.reserve(arrays.size());
  for (auto& [k, a] : arrays) v.push_back(a);
  eval(v);
}

}  // namespace

void init_io(nb::module_& m) {
  m.def(
      "_io_save_npy",
      [](const std::string& path, array a) {
        nb::gil_scoped_release nogil;
        save(path, std::move(a));
      },
      "path"_a, "arr"_a, "Write `arr` as .npy to `path` (\".npy\" appended when missing), atomically.");
  m.def(
      "_io_save_npy_file",
      [](nb::handle file, array a) {
        {
          nb::gil_scoped_release nogil;
          a.eval();
        }
        write_to_file_object(file, [&](std::ostream& os) { save(os, a); });
      },
      "file"_a, "arr"_a, "Write `arr` as .npy through file.write().");
  m.def(
      "_io_load_npy",
      [](const std::string& path) {
        nb::gil_scoped_release nogil;
        return load(path);
      },
      "path"_a);
  m.def(
      "_io_load_npy_bytes",
      [](nb::bytes data) {
        const char* p = data.c_str();
        const size_t n = data.size();
        nb::gil_scoped_release nogil;
        return load_npy(p, n);
      },
      "data"_a);
  m.def(
      "_io_save_safetensors",
      [](const std::string& path, ArrayMap arrays, MetaMap metadata) {
        nb::gil_scoped_release nogil;
        save_safetensors(path, std::move(arrays), std::move(metadata));
      },
      "path"_a, "arrays"_a, "metadata"_a);
  m.def(
      "_io_save_safetensors_file",
      [](nb::handle file, ArrayMap arrays, MetaMap metadata) {
        {
          nb::gil_scoped_release nogil;
          eval_all(arrays);
        }
        write_to_file_object(file, [&](std::ostream& os) { save_safetensors(os, arrays, metadata); });
      },
      "file"_a, "arrays"_a, "metadata"_a);
  m.def(
      "_io_load_safetensors",
      [](const std::string& path) {
        SafetensorsLoad r;
        {
          nb::gil_scoped_release nogil;
          r = load_safetensors(path);
        }
        return safetensors_result(std::move(r));
      },
      "path"_a);
  m.def(
      "_io_load_safetensors_bytes",
      [](nb::bytes data) {
        const char* p = data.c_str();
        const size_t n = data.size();
        SafetensorsLoad r;
        {
          nb::gil_scoped_release nogil;
          r = load_safetensors_bytes(p, n);
        }
        return safetensors_result(std::move(r));
      },
      "data"_a);
  m.def(
      "_io_load_gguf",
      [](const std::string& path) {
        GGUFLoad r;
        {
          nb::gil_scoped_release nogil;
          r = load_gguf(path);
        }
        // Metadata values as Python objects: an array, a str or a list of str.
        std::unordered_map<std::string, nb::object> metadata;
        for (auto& [k, v] : r.second) {
          nb::object o = nb::none();
          if (auto* a = std::get_if<array>(&v)) o = nb::cast(std::move(*a));
          if (auto* s = std::get_if<std::string>(&v)) o = nb::str(s->data(), s->size());
          if (auto* ss = std::get_if<std::vector<std::string>>(&v)) {
            nb::list l;
            for (auto& x : *ss) l.append(nb::str(x.data(), x.size()));
            o = l;
          }
          metadata.emplace(k, std::move(o));
        }
        return nb::make_tuple(sorted_dict(std::move(r.first)), sorted_dict(std::move(metadata)));
      },
      "path"_a);
  m.def(
      "_io_save_gguf",
      [](const std::string& path, ArrayMap arrays, nb::dict metadata) {
        // Values checked by kiln/_io.py: str, a list of str, or a kiln.array.
        std::unordered_map<std::string, GGUFMetaData> meta;
        for (auto [k, v] : metadata) {
          std::string key = nb::cast<std::string>(k);
          if (nb::isinstance<nb::str>(v)) {
            meta.emplace(key, nb::cast<std::string>(v));
          } else if (nb::isinstance<nb::list>(v)) {
            std::vector<std::string> ss;
            for (nb::handle x : nb::borrow<nb::list>(v)) ss.push_back(nb::cast<std::string>(x));
            meta.emplace(key, std::move(ss));
          } else {
            meta.emplace(key, nb::cast<array>(v));
          }
        }
        nb::gil_scoped_release nogil;
        save_gguf(path, std::move(arrays), std::move(meta));
      },
      "path"_a, "arrays"_a, "metadata"_a);
}

}  // namespace kiln::py
