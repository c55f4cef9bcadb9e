// import_function: parse the file once (constants stay on disk as lazy Load nodes), then match each
// call to a record and replay it.
#include <map>
#include <mutex>

#include "core/fusion.h"
#include "core/kernels.h"
#include "core/mode.h"
#include "core/program.h"
#include "core/row_patterns.h"
#include "format/callback.h"
#include "format/codec.h"
#include "format/validate.h"
#include "format/compat/version.h"
#include "primitives/misc/imported_call.h"
#include "primitives/misc/load.h"
#include "trace/match.h"
#include "trace/tape.h"

namespace kiln {

namespace detail {

// A record planned for one input signature (and the evaluator's settings the plan depends on).
struct PlannedCall {
  size_t record = 0;
  std::vector<ArraySpec> inputs;
  bool fusion = true, patterns = true;
  size_t min_elements = 0;
  State node_state;   // the ImportedCall nodes' state
  std::mutex run_mu;  // one run at a time; a concurrent call evaluates the replayed graph instead
  std::unique_ptr<Program> program;
};

struct FunctionTable;

// One call's node (ImportedCall, primitives/misc/imported_call.h): the table (for the record) and the plan.
struct CallBody final : ImportedCallBody {
  std::shared_ptr<const FunctionTable> table;
  std::shared_ptr<PlannedCall> planned;
  std::vector<array> expand(const std::vector<array>& inputs) const override;
  std::vector<array> run(const std::vector<array>& inputs) const override;
};

struct FunctionTable : std::enable_shared_from_this<FunctionTable> {
  std::shared_ptr<const format::Source> source;
  format::ParsedFile file;
  ImportOptions options;
  std::map<size_t, std::vector<size_t>> groups;  // input count -> record indices, in file order
  mutable std::once_flag info_once;
  mutable FileInfo info;
  bool quirks = false;
  int writer[3] = {0, 0, 0};  // the header's version, for quirks
  // Plans of recent calls (a few signatures per table, newest last).
  static constexpr size_t kMaxPlans = 8;
  mutable std::mutex plans_mu;
  mutable std::vector<std::shared_ptr<PlannedCall>> plans;

  std::vector<array> replay_record(size_t r, const std::vector<array>& inputs) const {
    return replay(file.records[r], inputs, file.shapeless, &options, quirks ? writer : nullptr);
  }

  // The plan of record `r` for inputs of `specs`, made at the signature's second call (the record
  // replayed on placeholders and planned): null at its first, which replays the record as a graph, so a
  // function called once plans nothing beyond what its evaluation plans, and its constants are read then.
  std::shared_ptr<PlannedCall> plan_for(size_t r, const std::vector<ArraySpec>& specs) const {
    const bool fusion_on = fusion::enabled(), patterns_on = row_patterns_enabled();
    const size_t min_el = fusion::min_elements();
    std::shared_ptr<PlannedCall> found;
    {
      std::lock_guard<std::mutex> lock(plans_mu);
      for (auto& p : plans) {
        if (p->record == r && p->fusion == fusion_on && p->patterns == patterns_on && p->min_elements == min_el &&
            p->inputs.size() == specs.size()) {
          bool same = true;
          for (size_t i = 0; i < specs.size() && same; ++i) {
            same = specs[i].shape == p->inputs[i].shape && specs[i].dtype == p->inputs[i].dtype;
          }
          if (!same) continue;
          if (p->program) return p;
          found = p;
          break;
        }
      }
      if (!found) {
        auto p = std::make_shared<PlannedCall>();
        p->record = r;
        p->inputs = specs;
        p->fusion = fusion_on;
        p->patterns = patterns_on;
        p->min_elements = min_el;
        p->node_state = State{std::string("function ") + std::to_string(r)};
        if (plans.size() >= kMaxPlans) plans.erase(plans.begin());
        plans.push_back(std::move(p));
        return nullptr;
      }
    }
    // Constants not read yet stay Load nodes: steps of the program that give the loaded data after the
    // first run.
    std::vector<array> holders;
    holders.reserve(specs.size());
    for (auto& s : specs) holders.push_back(placeholder(s.shape, s.dtype));
    auto program = std::make_unique<Program>(holders, replay_record(r, holders));
    std::lock_guard<std::mutex> lock(plans_mu);
    if (!found->program) found->program = std::move(program);
    return found;
  }

  // Whether a call runs as one ImportedCall node (when planned calls are on). Not while tracing for an
  // export or compile: the record's nodes then go on the tape in the order of the traced function's own
  // search, as an MLX export writes them (a node built before the trace and captured by it is expanded
  // by the tracer). Transforms meet the node: its rules expand it into the record's nodes.
  static bool planned_call(const std::vector<array>& inputs) {
    if (!programs_enabled() || in_tracing()) return false;
    for (auto& a : inputs) {
      if (!a.valid()) return false;
    }
    return true;
  }

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
          if (!planned_call(inputs)) return replay_record(r, inputs);
          auto planned = plan_for(r, specs_of(inputs));
          // A signature's first call, or a function without outputs (no node to build): the record's graph.
          if (!planned || planned->program->output_specs().empty()) return replay_record(r, inputs);
          const Stream cpu = default_stream(Device{Device::cpu, 0});
          auto outs = make_arrays(imported_call_def(), planned->node_state, inputs, planned->program->output_specs(), cpu);
          auto body = std::make_shared<CallBody>();
          body->table = shared_from_this();
          body->planned = std::move(planned);
          outs[0].node()->extra = std::move(body);
          return outs;
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

std::vector<array> CallBody::expand(const std::vector<array>& inputs) const {
  return table->replay_record(planned->record, inputs);
}

std::vector<array> CallBody::run(const std::vector<array>& inputs) const {
  std::unique_lock<std::mutex> lock(planned->run_mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    std::vector<array> r = expand(inputs);
    kiln::eval(r);
    return r;
  }
  return planned->program->run(inputs);
}

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
