// Parsing and validating a whole .mlxfn file (spec 2.8). Every count is checked against the bytes
// that remain before anything is allocated, every id must be defined before use, and every node is
// checked against its registry row (arity, output count, and the output rule when there is one), so
// a malformed or hostile file fails with an "[import_function] ..." error instead of crashing later.
// Rows with a `check` hook validate their recorded outputs themselves.
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "format/codec.h"
#include "kiln/device.h"
#include "format/record.h"

namespace kiln::format {

namespace {

std::string clip(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 120)) out += (c >= 32 && c < 127) ? c : '?';
  return s.size() > 120 ? out + "..." : out;
}

std::string specs_text(const std::vector<ArraySpec>& v) {
  std::string s = "[";
  // Clipped: a hostile node may have millions of inputs.
  for (size_t i = 0; i < v.size() && i < 16; ++i) s += (i ? ", " : "") + spec_text(v[i]);
  if (v.size() > 16) s += ", ... (" + std::to_string(v.size()) + " in all)";
  return s + "]";
}

class RecordParser {
 public:
  RecordParser(ByteReader& r, ParsedFile& file, std::unordered_map<uint64_t, array>& constants,
               const ConstantFactory& make_constant, size_t index, bool mlx_rules)
      : r_(r), file_(file), constants_(constants), make_constant_(make_constant), index_(index),
        mlx_rules_(mlx_rules) {}

  Record parse() {
    Record rec;
    uint64_t nk = r_.count("keyword names", 8);
    rec.kwarg_keys.reserve(nk);
    for (uint64_t i = 0; i < nk; ++i) {
      rec.kwarg_keys.push_back(r_.str("a keyword name"));
      if (i > 0 && !(rec.kwarg_keys[i - 1] < rec.kwarg_keys[i])) {
        fail("keyword names must be sorted and distinct, but \"" + clip(rec.kwarg_keys[i]) + "\" follows \"" +
             clip(rec.kwarg_keys[i - 1]) + "\"");
      }
    }
    rec.input_ids = read_ids(r_, "input ids");
    uint64_t n = r_.count("input descriptors", 13);
    if (n != rec.input_ids.size()) {
      fail("expected " + std::to_string(rec.input_ids.size()) + " input descriptors (one per input id) but found " +
           std::to_string(n));
    }
    if (nk > n) {
      fail("found " + std::to_string(nk) + " keyword names for only " + std::to_string(n) + " inputs");
    }
    for (uint64_t i = 0; i < n; ++i) {
      ArraySpec s;
      s.shape = read_shape(r_, "an input shape");
      s.dtype = read_dtype(r_, "an input dtype", file_.layout, mlx_rules_);
      check_size(s.shape, "input shape");
      rec.inputs.push_back(s);
      input_pos_.emplace(rec.input_ids[i], i);
      if (!defined_.emplace(rec.input_ids[i], s).second) {
        fail("input id " + std::to_string(rec.input_ids[i]) + " is listed twice");
      }
    }
    rec.output_ids = read_ids(r_, "output ids");
    uint64_t tape_len = r_.count("tape entries", 10);
    rec.tape.reserve(tape_len);
    for (uint64_t k = 0; k < tape_len; ++k) {
      entry_ = k;
      Entry e = parse_entry(rec);
      for (auto& x : expanded_) rec.tape.push_back(std::move(x));
      expanded_.clear();
      rec.tape.push_back(std::move(e));
    }
    entry_ = -1;
    for (auto id : rec.output_ids) {
      if (!defined_.count(id)) fail("output id " + std::to_string(id) + " is not defined by the record's tape");
    }
    return rec;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) {
    std::ostringstream os;
    os << "Invalid function record " << index_;
    if (entry_ >= 0) os << ", tape entry " << entry_;
    os << " (offset " << r_.pos() << "): " << msg << ".";
    r_.fail(os.str());
  }

  // As MLX, a node's stream must exist in the importing process. A CPU stream is one of this
  // process's (the default, index 0, or one made by new_stream) or index 1, the default CPU stream of
  // an MLX process that also has a GPU (its GPU default is 0). GPU streams name the writer's GPU, which
  // kiln has none of: their nodes run on the CPU, so any index is accepted.
  void check_stream(const StreamInfo& st) {
    if (st.device_type != 0) return;
    if (st.index == 1 || stream_exists(Stream{st.index, Device{Device::cpu, st.device_index}})) return;
    fail("a node names CPU stream " + std::to_string(st.index) + " (device cpu:" + std::to_string(st.device_index) +
         "), which does not exist in this process; create the streams a file uses with new_stream before "
         "importing it");
  }

  void check_size(const Shape& s, const char* what) {
    uint64_t n = 1;
    for (auto d : s) {
      if (d != 0 && n > (uint64_t(1) << 62) / static_cast<uint64_t>(d)) {
        fail(std::string(what) + " " + detail_shape(s) + " has too many elements");
      }
      n *= static_cast<uint64_t>(d);
    }
  }
  static std::string detail_shape(const Shape& s) {
    std::ostringstream os;
    os << s;
    return os.str();
  }

  Entry parse_entry(const Record& rec) {
    Entry e;
    e.id = r_.u64("a tape entry id");
    bool has_primitive = r_.boolean("has_primitive");
    if (!has_primitive) {
      bool is_constant = r_.boolean("is_constant");
      if (!is_constant) {
        e.kind = Entry::Kind::Input;
        auto pos = input_pos_.find(e.id);  // a map, not a scan: n references to n inputs stay linear
        if (pos == input_pos_.end()) {
          fail("input reference " + std::to_string(e.id) + " is not one of the record's input ids");
        }
        size_t i = pos->second;
        // Writers place each input once at most; refusing repeats bounds memory by the file size.
        if (!inputs_on_tape_.insert(e.id).second) {
          fail("input " + std::to_string(e.id) + " appears twice on the tape");
        }
        e.specs = {rec.inputs[i]};
        e.out_ids = {e.id};
        return e;
      }
      return parse_constant(std::move(e));
    }
    return parse_primitive(std::move(e));
  }

  Entry parse_constant(Entry e) {
    e.kind = Entry::Kind::Constant;
    e.out_ids = {e.id};
    if (defined_.count(e.id)) fail("constant id " + std::to_string(e.id) + " is already defined in this record");
    auto it = constants_.find(e.id);
    if (it == constants_.end()) {
      ArraySpec s;
      s.shape = read_shape(r_, "a constant's shape");
      s.dtype = read_dtype(r_, "a constant's dtype", file_.layout, mlx_rules_);
      check_size(s.shape, "constant shape");
      uint64_t elems = 1;
      for (auto d : s.shape) elems *= static_cast<uint64_t>(d);
      if (elems > r_.remaining() / s.dtype.size) {
        fail("constant of shape " + detail_shape(s.shape) + " and dtype " + dtype_name(s.dtype) + " needs " +
             std::to_string(elems) + " elements of " + std::to_string(s.dtype.size) + " bytes but only " +
             std::to_string(r_.remaining()) + " bytes remain in the file");
      }
      uint64_t nbytes = elems * s.dtype.size;
      uint64_t offset = r_.pos();
      r_.skip(nbytes, "a constant's payload");
      e.value = make_constant_(s, offset, nbytes);
      e.payload = true;
      constants_.emplace(e.id, e.value);
      file_.constants++;
      file_.constant_bytes += nbytes;
    } else {
      e.value = it->second;
    }
    e.specs = {{e.value.shape(), e.value.dtype()}};
    defined_.emplace(e.id, e.specs[0]);
    return e;
  }

  Entry parse_primitive(Entry e) {
    e.kind = Entry::Kind::Primitive;
    e.inputs = read_ids(r_, "a node's input ids");
    std::vector<ArraySpec> in_specs;
    in_specs.reserve(e.inputs.size());
    for (auto id : e.inputs) {
      auto it = defined_.find(id);
      if (it == defined_.end()) fail("input id " + std::to_string(id) + " is not defined by an earlier entry");
      in_specs.push_back(it->second);
    }
    e.stream = read_stream(r_, "a node's stream");
    check_stream(e.stream);
    std::string name = r_.str("a primitive name");
    const PrimitiveDef* def = find_disk_name(name, file_.layout);
    if (!def || (def->flags & kNotSerializable)) {
      std::string msg = "[import_function] Unable to deserialize primitive " + clip(name);
      // A kiln primitive that the file's MLX version could not serialize (or knew by another name).
      if (auto* known = registry::find(name); known && !(known->flags & kNotSerializable)) {
        msg += " (not in the table of MLX " + file_.layout.str() + " files)";
      }
      throw std::invalid_argument(msg);
    }
    e.def = def;
    std::vector<Value> disk_state = read_disk_state(r_, *def, file_.layout, mlx_rules_);
    int n_in = static_cast<int>(std::min<size_t>(e.inputs.size(), 1u << 30));
    if (n_in < def->min_inputs || (def->max_inputs >= 0 && n_in > def->max_inputs)) {
      std::string want = def->max_inputs < 0 ? "at least " + std::to_string(def->min_inputs)
                         : def->min_inputs == def->max_inputs
                             ? std::to_string(def->min_inputs)
                             : std::to_string(def->min_inputs) + " to " + std::to_string(def->max_inputs);
      fail(name + " expects " + want + " inputs but the node has " + std::to_string(e.inputs.size()));
    }
    uint64_t n_sib = r_.u64("n_siblings");
    if (n_sib == 0) {
      ArraySpec s;
      s.shape = read_shape(r_, "an output shape");
      s.dtype = read_dtype(r_, "an output dtype", file_.layout, mlx_rules_);
      check_size(s.shape, "output shape");
      e.specs = {s};
      e.out_ids = {e.id};
    } else {
      e.out_ids = read_ids(r_, "sibling output ids");
      uint64_t m = r_.count("output shapes", 8);
      if (m != e.out_ids.size() || m != n_sib + 1) {
        fail(name + " lists " + std::to_string(e.out_ids.size()) + " output ids and " + std::to_string(m) +
             " output shapes for " + std::to_string(n_sib) + " siblings (expected " + std::to_string(n_sib + 1) +
             " of each)");
      }
      e.specs.resize(m);
      for (auto& s : e.specs) {
        s.shape = read_shape(r_, "an output shape");
        check_size(s.shape, "output shape");
      }
      uint64_t md = r_.count("output dtypes", 5);
      if (md != m) {
        fail(name + " lists " + std::to_string(m) + " output shapes but " + std::to_string(md) + " output dtypes");
      }
      for (auto& s : e.specs) s.dtype = read_dtype(r_, "an output dtype", file_.layout, mlx_rules_);
      bool own = false;
      for (auto id : e.out_ids) own |= id == e.id;
      if (!own) fail("the entry id " + std::to_string(e.id) + " is not among its node's output ids");
    }
    if (def->num_outputs >= 0 && e.specs.size() != static_cast<size_t>(def->num_outputs)) {
      fail(name + " has " + std::to_string(def->num_outputs) + " outputs but the node records " +
           std::to_string(e.specs.size()));
    }
    std::string combine = reduce_expansion(*def, file_.layout, disk_state);
    e.state = to_schema(*def, file_.layout, std::move(disk_state), in_specs, e.specs, mlx_rules_);
    if (!combine.empty()) expand_reducing_update(e, in_specs, combine);
    if (def->check) {
      // Rows whose recorded outputs are not a function of the state alone validate them directly.
      try {
        def->check(e.state, in_specs, e.specs);
      } catch (const std::exception& ex) {
        fail(name + " with inputs " + specs_text(in_specs) + " and state {" + state_text(*def, e.state) +
             "} cannot produce the recorded " + specs_text(e.specs) + ": " + ex.what());
      }
    } else if (def->infer) {
      std::vector<ArraySpec> want;
      try {
        want = def->infer(e.state, in_specs);
      } catch (const std::exception& ex) {
        fail(name + " node is invalid for its inputs " + specs_text(in_specs) + ": " + ex.what());
      }
      bool ok = want.size() == e.specs.size();
      for (size_t i = 0; ok && i < want.size(); ++i) {
        ok = want[i].shape == e.specs[i].shape;
        // A node without inputs (Arange) takes its dtype from the record; otherwise the rule decides it.
        if (!in_specs.empty()) ok = ok && want[i].dtype == e.specs[i].dtype;
      }
      if (!ok) {
        fail(name + " with inputs " + specs_text(in_specs) + " and state {" + state_text(*def, e.state) +
             "} produces " + specs_text(want) + " but the file records " + specs_text(e.specs));
      }
    }
    for (size_t i = 0; i < e.out_ids.size(); ++i) {
      if (!defined_.emplace(e.out_ids[i], e.specs[i]).second) {
        fail("output id " + std::to_string(e.out_ids[i]) + " of " + name + " is already defined in this record");
      }
    }
    return e;
  }

  // SliceUpdate(src, upd) with a reduce type becomes s = Slice(src), c = combine(s, upd), then the
  // node itself as a plain SliceUpdate(src, c). The two new nodes get ids from a range that writers
  // do not use (kiln and MLX ids are small counters or heap addresses); a clash is reported as a
  // duplicate definition.
  void expand_reducing_update(Entry& e, const std::vector<ArraySpec>& in_specs, const std::string& combine) {
    if (e.inputs.size() != 2 || e.specs.size() != 1) return;  // the row's checks report it
    ArraySpec upd = in_specs[1];
    auto make = [&](const char* name, State st, std::vector<uint64_t> inputs) {
      Entry x;
      x.kind = Entry::Kind::Primitive;
      x.def = &registry::get(name);
      x.state = std::move(st);
      x.stream = e.stream;
      x.inputs = std::move(inputs);
      x.specs = {upd};
      x.id = 0xfffffffe00000000ull + (next_expanded_id_++);
      x.out_ids = {x.id};
      if (!defined_.emplace(x.id, upd).second) fail("expanded node id " + std::to_string(x.id) + " is already defined");
      return x;
    };
    Entry sl = make("Slice", e.state, {e.inputs[0]});
    Entry co = make(combine.c_str(), {}, {sl.id, e.inputs[1]});
    e.inputs[1] = co.id;
    expanded_.push_back(std::move(sl));
    expanded_.push_back(std::move(co));
  }

  std::vector<Entry> expanded_;
  uint64_t next_expanded_id_ = 1;
  ByteReader& r_;
  ParsedFile& file_;
  std::unordered_map<uint64_t, array>& constants_;
  const ConstantFactory& make_constant_;
  size_t index_;
  bool mlx_rules_ = false;
  int64_t entry_ = -1;
  std::unordered_map<uint64_t, ArraySpec> defined_;
  std::unordered_set<uint64_t> inputs_on_tape_;
  std::unordered_map<uint64_t, size_t> input_pos_;
};

}  // namespace

ParsedFile read_file(const Source& src, const ConstantFactory& make_constant, const ReadOptions& options) {
  ParsedFile file;
  file.file_bytes = src.size();
  ByteReader r(src);
  file.version = r.str("the version string");
  file.layout = options.layout ? *options.layout : reader_layout(file.version);
  uint64_t at = r.pos();
  int32_t count = r.i32("the function count");
  if (count < 0) {
    r.fail("Invalid header (offset " + std::to_string(at) + "): expected a non-negative function count but found " +
           std::to_string(count) + ".");
  }
  file.shapeless = r.boolean("the shapeless flag");
  if (header_has_metadata(file.layout)) file.metadata = r.str("the metadata string");
  std::unordered_map<uint64_t, array> constants;
  // Each record needs at least 40 bytes (five empty lists), so a bogus count fails before looping long.
  if (static_cast<uint64_t>(count) > r.remaining() / 40) {
    r.fail("Invalid header: the file declares " + std::to_string(count) + " functions but only " +
           std::to_string(r.remaining()) + " bytes follow the header.");
  }
  file.records.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    RecordParser p(r, file, constants, make_constant, static_cast<size_t>(i), options.mlx_rules);
    file.records.push_back(p.parse());
  }
  return file;
}

}  // namespace kiln::format
