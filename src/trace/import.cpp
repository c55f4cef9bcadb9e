// import_function: parse the file once (constants stay on disk as lazy Load nodes), then match each
// call to a record and replay it.
#include <map>
#include <mutex>

#include "core/kernels.h"
#include "format/callback.h"
#include "format/codec.h"
#include "format/validate.h"
#include "format/compat/version.h"
#include "primitives/misc/load.h"
#include "trace/match.h"
#include "trace/tape.h"

namespace kiln {

namespace detail {

struct FunctionTable {
  std::shared_ptr<const format::Source> source;
  format::ParsedFile file;
  ImportOptions options;
  std::map<size_t, std::vector<size_t>> groups;  // input count -> record indices, in file order
  mutable std::once_flag info_once;
  mutable FileInfo info;
  bool quirks = false;
  int writer[3] = {0, 0, 0};  // the header's version, for quirks

  void build_info() const {
    info.version = file.version;
    info.format = file.layout.str();
    info.shapeless = file.shapeless;
    info.metadata = file.metadata;
    info.file_bytes = file.file_bytes;
    info.constants = file.constants;
    info.constant_bytes = file.constant_bytes;
    for (auto& rec : file.records) {
      FunctionInfo f;
      f.kwarg_keys = rec.kwarg_keys;
      f.input_ids = rec.input_ids;
      f.inputs = rec.inputs;
      f.output_ids = rec.output_ids;
      std::unordered_map<uint64_t, ArraySpec> specs;
      for (size_t i = 0; i < rec.inputs.size(); ++i) specs.emplace(rec.input_ids[i], rec.inputs[i]);
      f.tape.reserve(rec.tape.size());
      for (auto& e : rec.tape) {
        TapeEntryInfo t;
        t.id = e.id;
        t.output_ids = e.out_ids;
        t.outputs = e.specs;
        for (size_t k = 0; k < e.out_ids.size(); ++k) specs.emplace(e.out_ids[k], e.specs[k]);
        switch (e.kind) {
          case format::Entry::Kind::Input:
            t.kind = TapeEntryInfo::Kind::Input;
            break;
          case format::Entry::Kind::Constant:
            t.kind = TapeEntryInfo::Kind::Constant;
            t.payload = e.payload;
            t.value = e.value;
            if (e.payload) {
              f.new_constants++;
              f.new_constant_bytes += e.value.nbytes();
            }
            break;
          case format::Entry::Kind::Primitive:
            t.kind = TapeEntryInfo::Kind::Primitive;
            t.name = e.def->name;
            t.display_name = e.def->display_name(e.state);
            t.input_ids = e.inputs;
            t.stream = e.stream;
            t.state = e.state.values;
            t.state_text = format::state_text(*e.def, e.state);
            f.num_primitives++;
            f.primitive_histogram[e.def->name]++;
            f.streams[e.stream]++;
            break;
        }
        f.tape.push_back(std::move(t));
      }
      for (auto id : rec.output_ids) f.outputs.push_back(specs.at(id));
      f.peak_bytes = format::peak_bytes(rec);
      info.functions.push_back(std::move(f));
    }
  }

  const FileInfo& get_info() const {
    std::call_once(info_once, [&] { build_info(); });
    return info;
  }

  std::vector<array> call(const Args& args, const Kwargs& kwargs) const {
    auto kw = sort_kwargs(kwargs);
    auto it = groups.find(args.size() + kw.size());
    if (it != groups.end()) {
      for (size_t r : it->second) {
        auto& rec = file.records[r];
        if (signature_matches(rec.kwarg_keys, rec.inputs, args, kw, file.shapeless)) {
          std::vector<array> inputs = args;
          for (auto& [k, a] : kw) inputs.push_back(a);
          return replay(rec, inputs, file.shapeless, &options, quirks ? writer : nullptr);
        }
      }
    }
    std::vector<const FunctionInfo*> fns;
    auto& inf = get_info();
    for (auto& [n, recs] : groups) {
      for (size_t r : recs) fns.push_back(&inf.functions[r]);
    }
    throw std::invalid_argument(no_match_message(fns, args, kw));
  }
};

}  // namespace detail

ImportedFunction::ImportedFunction(std::shared_ptr<detail::FunctionTable> table) : table_(std::move(table)) {}

std::vector<array> ImportedFunction::operator()(const Args& args) const { return table_->call(args, {}); }
std::vector<array> ImportedFunction::operator()(const Kwargs& kwargs) const { return table_->call({}, kwargs); }
std::vector<array> ImportedFunction::operator()(const Args& args, const Kwargs& kwargs) const {
  return table_->call(args, kwargs);
}
const FileInfo& ImportedFunction::info() const { return table_->get_info(); }
const std::string& ImportedFunction::metadata() const { return table_->file.metadata; }

namespace detail {

ImportedFunction import_source(std::shared_ptr<const format::Source> src, const ImportOptions& options) {
  auto table = std::make_shared<detail::FunctionTable>();
  table->source = src;
  table->options = options;
  table->file = format::read_file(*src, [&](const ArraySpec& spec, uint64_t offset, uint64_t nbytes) {
    return detail::load_constant(src, spec, offset, nbytes);
  });
  for (size_t r = 0; r < table->file.records.size(); ++r) {
    format::check_limits(table->file.records[r], r, options);
    table->groups[table->file.records[r].inputs.size()].push_back(r);
  }
  format::FormatVersion v;
  if (options.writer_cpu_quirks && format::FormatVersion::parse(table->file.version, v)) {
    table->quirks = true;
    table->writer[0] = v.major;
    table->writer[1] = v.minor;
    table->writer[2] = v.patch;
  }
  return ImportedFunction(std::move(table));
}

}  // namespace detail

ImportedFunction import_function(const std::string& file, const ImportOptions& options) {
  return detail::import_source(std::make_shared<format::FileSource>(file), options);
}

void export_events(const ImportedFunction& fn, size_t function, const ExportCallback& callback) {
  const auto& records = fn.table_->file.records;
  if (function >= records.size()) {
    throw std::out_of_range("[export_events] The file has " + std::to_string(records.size()) +
                            " function(s); function " + std::to_string(function + 1) + " does not exist.");
  }
  std::unordered_set<uint64_t> reported;
  // Converters need the whole state: implied values too (DivMod's floor), unlike MLX's callbacks.
  format::emit_events(records[function], callback, reported, /*implied=*/true);
}

ImportedFunction import_function(const std::string& file) { return import_function(file, ImportOptions{}); }

void prepare_import() {
  // The primitive registry (every family's rows), each release's layouts of them (the first lookup builds
  // and checks the table) and the CPU kernel table.
  format::find_disk_name("Add", format::newest_known());
  detail::kernels_for(Device::cpu);
}

}  // namespace kiln
