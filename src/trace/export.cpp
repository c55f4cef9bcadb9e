// export_function / exporter: trace, simplify, then write one complete record per trace (or send
// callback events). A record is serialized in memory and appended before the header count is
// rewritten, and a failed write is truncated away, so the file always holds exactly the successful
// traces.
#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "format/callback.h"
#include "format/codec.h"
#include "trace/match.h"
#include "trace/tape.h"

namespace kiln {

namespace detail {

struct ExporterImpl {
  ArgsKwargsFn fun;
  bool shapeless = false;
  bool closed = false;
  format::FormatVersion version = format::kDefaultVersion;
  std::string metadata;  // header H4 (layouts from 0.32.1)
  IdAllocator ids;
  ConstantTable constants;
  std::unordered_set<uint64_t> written;  // constants already in the file (or reported to the callback)
  struct Signature {
    std::vector<std::string> keys;
    std::vector<ArraySpec> inputs;
  };
  std::vector<Signature> signatures;

  // File mode.
  std::string path;
  int fd = -1;
  int32_t count = 0;
  uint64_t end = 0;  // size of the valid file
  // Callback mode.
  ExportCallback callback;

  ~ExporterImpl() {
    if (fd >= 0) ::close(fd);
  }

  void pwrite_all(const void* p, size_t n, uint64_t offset) {
    auto* b = static_cast<const char*>(p);
    while (n > 0) {
      ssize_t r = ::pwrite(fd, b, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw std::runtime_error("[export_function] Failed to write " + path + ": " + std::strerror(errno));
      b += r;
      n -= static_cast<size_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }

  void write_header(int32_t n) {
    format::ByteWriter h;
    format::write_header(h, version, n, shapeless, metadata);
    pwrite_all(h.bytes().data(), h.bytes().size(), 0);
  }

  void open_file(const std::string& file) {
    path = file;
    fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("[export_function] Failed to open " + file);
    write_header(0);
    format::ByteWriter h;
    format::write_header(h, version, 0, shapeless, metadata);
    end = h.bytes().size();
  }

  // Appends the record at `end`, then rewrites the header; on failure the file is cut back.
  void append(const format::ByteWriter& w) {
    uint64_t at = end;
    try {
      size_t prev = 0;
      auto& buf = w.bytes();
      for (auto& [pos, a] : w.payloads()) {
        pwrite_all(buf.data() + prev, pos - prev, at);
        at += pos - prev;
        prev = pos;
        array c = a;
        c.eval();
        if (c.row_contiguous() && std::endian::native == std::endian::little) {
          pwrite_all(c.raw_data(), c.nbytes(), at);
        } else {
          auto bytes = format::payload_bytes(c);
          pwrite_all(bytes.data(), bytes.size(), at);
        }
        at += c.nbytes();
      }
      pwrite_all(buf.data() + prev, buf.size() - prev, at);
      at += buf.size() - prev;
      write_header(count + 1);
    } catch (...) {
      if (::ftruncate(fd, static_cast<off_t>(end)) == 0) {
        try {
          write_header(count);
        } catch (...) {
        }
      }
      throw;
    }
    end = at;
    ++count;
  }

  void run(const Args& args, const Kwargs& kwargs) {
    if (closed) throw std::invalid_argument("[export_function] Attempting to write after exporting is closed.");
    auto kw = sort_kwargs(kwargs);
    for (auto& s : signatures) {
      if (signature_matches(s.keys, s.inputs, args, kw, shapeless)) {
        throw std::invalid_argument(
            "[export_function] Attempting to export a function twice with the same signature is not allowed.");
      }
    }
    format::Record rec = trace_function(fun, args, kwargs, shapeless, ids, constants);
    simplify(rec);
    bool cb = static_cast<bool>(callback);
    format::check_serializable(rec, cb);
    if (cb) {
      format::emit_events(rec, callback, written);
    } else {
      format::ByteWriter w;
      std::vector<uint64_t> added;
      format::write_record(w, rec, version, written, added);
      append(w);
      written.insert(added.begin(), added.end());
    }
    signatures.push_back({rec.kwarg_keys, rec.inputs});
  }
};

}  // namespace detail

namespace {

ArgsKwargsFn wrap(const ArgsFn& f) {
  return [f](const Args& a, const Kwargs&) { return f(a); };
}
ArgsKwargsFn wrap(const KwargsFn& f) {
  return [f](const Args&, const Kwargs& k) { return f(k); };
}
const ArgsKwargsFn& wrap(const ArgsKwargsFn& f) { return f; }

template <typename Fn>
FunctionExporter make_file_exporter(const std::string& file, const Fn& fun, const ExportOptions& opt) {
  auto impl = std::make_shared<detail::ExporterImpl>();
  impl->fun = wrap(fun);
  impl->shapeless = opt.shapeless;
  impl->version = format::target_version(opt.version, "export_function");
  if (!opt.metadata.empty() && !format::header_has_metadata(impl->version)) {
    throw std::invalid_argument("[export_function] Metadata cannot be written for MLX " + impl->version.str() +
                                ": its layout has no metadata field (added in 0.32.1).");
  }
  impl->metadata = opt.metadata;
  impl->open_file(file);
  return FunctionExporter(std::move(impl));
}

// MLX 0.32.1's positional form: metadata implies the first layout that stores it.
ExportOptions mlx_options(bool shapeless, const std::string& metadata) {
  ExportOptions o;
  o.shapeless = shapeless;
  o.metadata = metadata;
  if (!metadata.empty()) o.version = "0.32.1";
  return o;
}

template <typename Fn>
FunctionExporter make_callback_exporter(const ExportCallback& cb, const Fn& fun, bool shapeless) {
  if (!cb) throw std::invalid_argument("[export_function] The export callback is empty.");
  auto impl = std::make_shared<detail::ExporterImpl>();
  impl->fun = wrap(fun);
  impl->shapeless = shapeless;
  impl->callback = cb;
  return FunctionExporter(std::move(impl));
}

}  // namespace

FunctionExporter::FunctionExporter(std::shared_ptr<detail::ExporterImpl> impl) : impl_(std::move(impl)) {}
FunctionExporter::~FunctionExporter() = default;

void FunctionExporter::operator()(const Args& args) { impl_->run(args, {}); }
void FunctionExporter::operator()(const Kwargs& kwargs) { impl_->run({}, kwargs); }
void FunctionExporter::operator()(const Args& args, const Kwargs& kwargs) { impl_->run(args, kwargs); }
void FunctionExporter::close() { impl_->closed = true; }

FunctionExporter exporter(const std::string& file, const ArgsFn& fun, bool shapeless, const std::string& metadata) {
  return make_file_exporter(file, fun, mlx_options(shapeless, metadata));
}
FunctionExporter exporter(const std::string& file, const KwargsFn& fun, bool shapeless, const std::string& metadata) {
  return make_file_exporter(file, fun, mlx_options(shapeless, metadata));
}
FunctionExporter exporter(const std::string& file, const ArgsKwargsFn& fun, bool shapeless,
                          const std::string& metadata) {
  return make_file_exporter(file, fun, mlx_options(shapeless, metadata));
}
FunctionExporter exporter(const std::string& file, const ArgsFn& fun, const ExportOptions& options) {
  return make_file_exporter(file, fun, options);
}
FunctionExporter exporter(const std::string& file, const KwargsFn& fun, const ExportOptions& options) {
  return make_file_exporter(file, fun, options);
}
FunctionExporter exporter(const std::string& file, const ArgsKwargsFn& fun, const ExportOptions& options) {
  return make_file_exporter(file, fun, options);
}
FunctionExporter exporter(const ExportCallback& cb, const ArgsFn& fun, bool shapeless) {
  return make_callback_exporter(cb, fun, shapeless);
}
FunctionExporter exporter(const ExportCallback& cb, const KwargsFn& fun, bool shapeless) {
  return make_callback_exporter(cb, fun, shapeless);
}
FunctionExporter exporter(const ExportCallback& cb, const ArgsKwargsFn& fun, bool shapeless) {
  return make_callback_exporter(cb, fun, shapeless);
}

void export_function(const std::string& file, const ArgsFn& fun, const Args& args, bool shapeless,
                     const std::string& metadata) {
  exporter(file, fun, shapeless, metadata)(args);
}
void export_function(const std::string& file, const KwargsFn& fun, const Kwargs& kwargs, bool shapeless,
                     const std::string& metadata) {
  exporter(file, fun, shapeless, metadata)(kwargs);
}
void export_function(const std::string& file, const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs,
                     bool shapeless, const std::string& metadata) {
  exporter(file, fun, shapeless, metadata)(args, kwargs);
}
void export_function(const std::string& file, const ArgsFn& fun, const Args& args, const ExportOptions& options) {
  exporter(file, fun, options)(args);
}
void export_function(const std::string& file, const KwargsFn& fun, const Kwargs& kwargs,
                     const ExportOptions& options) {
  exporter(file, fun, options)(kwargs);
}
void export_function(const std::string& file, const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs,
                     const ExportOptions& options) {
  exporter(file, fun, options)(args, kwargs);
}
void export_function(const ExportCallback& cb, const ArgsFn& fun, const Args& args, bool shapeless) {
  exporter(cb, fun, shapeless)(args);
}
void export_function(const ExportCallback& cb, const KwargsFn& fun, const Kwargs& kwargs, bool shapeless) {
  exporter(cb, fun, shapeless)(kwargs);
}
void export_function(const ExportCallback& cb, const ArgsKwargsFn& fun, const Args& args, const Kwargs& kwargs,
                     bool shapeless) {
  exporter(cb, fun, shapeless)(args, kwargs);
}

}  // namespace kiln
