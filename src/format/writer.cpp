// Serializing function records (spec 2.2-2.4).
#include <stdexcept>

#include "format/codec.h"
#include "format/record.h"

namespace kiln::format {

StreamInfo stream_info(const Stream& s) {
  return StreamInfo{s.index, static_cast<int32_t>(s.device.type), s.device.index};
}

void write_header(ByteWriter& w, const FormatVersion& v, int32_t count, bool shapeless, const std::string& metadata) {
  w.str(v.str());
  w.i32(count);
  w.boolean(shapeless);
  if (header_has_metadata(v)) w.str(metadata);
}

namespace {

std::string serial_name(const PrimitiveDef& def, const State& st) {
  // MLX cuts the display name at its first space ("Scatter Sum" -> "Scatter").
  std::string n = def.display_name(st);
  auto sp = n.find(' ');
  return sp == std::string::npos ? n : n.substr(0, sp);
}

}  // namespace

void check_serializable(const Record& rec, bool callback) {
  for (auto& e : rec.tape) {
    if (e.kind != Entry::Kind::Primitive) continue;
    bool ok = e.def && !(e.def->flags & kNotSerializable) && registry::find(e.def->name) == e.def;
    if (!ok) {
      std::string name = e.def ? serial_name(*e.def, e.state) : std::string("<unknown>");
      throw std::invalid_argument(callback ? "[export_function] Unable to get state for primitive " + name
                                           : "[export_function] Unable to serialize primitive " + name);
    }
  }
}

void check_writable(const Record& rec, const FormatVersion& v, const std::string& api, bool target_reads) {
  for (size_t i = 0; i < rec.inputs.size(); ++i) {
    check_dtype_expressible(rec.inputs[i].dtype, v, api, "input " + std::to_string(i));
  }
  for (auto& e : rec.tape) {
    if (e.kind == Entry::Kind::Constant) {
      check_dtype_expressible(e.specs[0].dtype, v, api, "a constant");
    } else if (e.kind == Entry::Kind::Primitive && e.def) {
      check_expressible(*e.def, e.state, v, api);
      if (target_reads) check_target_reads(*e.def, e.state, v, api);
      for (auto& s : e.specs) check_dtype_expressible(s.dtype, v, api, "an output of " + e.def->name);
      for (size_t k = 0; k < e.def->fields.size() && k < e.state.values.size(); ++k) {
        if (auto* t = std::get_if<Dtype>(&e.state.values[k])) {
          check_dtype_expressible(*t, v, api, "the state of " + e.def->name);
        }
      }
    }
  }
}

void write_record(ByteWriter& w, const Record& rec, const FormatVersion& v, const std::unordered_set<uint64_t>& written,
                  std::vector<uint64_t>& added, const std::string& api, bool target_reads) {
  check_writable(rec, v, api, target_reads);
  std::unordered_set<uint64_t> here;  // payloads written by this record
  w.u64(rec.kwarg_keys.size());
  for (auto& k : rec.kwarg_keys) w.str(k);
  write_ids(w, rec.input_ids);
  w.u64(rec.inputs.size());
  for (auto& s : rec.inputs) {
    write_shape(w, s.shape);
    write_dtype(w, s.dtype, v);
  }
  write_ids(w, rec.output_ids);
  w.u64(rec.tape.size());
  for (auto& e : rec.tape) {
    w.u64(e.id);
    switch (e.kind) {
      case Entry::Kind::Input:
        w.boolean(false);
        w.boolean(false);
        break;
      case Entry::Kind::Constant: {
        w.boolean(false);
        w.boolean(true);
        if (!written.count(e.id) && here.insert(e.id).second) {
          write_shape(w, e.specs[0].shape);
          write_dtype(w, e.specs[0].dtype, v);
          w.payload(e.value);
          added.push_back(e.id);
        }
        break;
      }
      case Entry::Kind::Primitive: {
        w.boolean(true);
        write_ids(w, e.inputs);
        write_stream(w, e.stream);
        w.str(disk_name(*e.def, v));
        write_state(w, *e.def, e.state, v, e.specs);
        if (e.specs.size() == 1) {
          w.u64(0);
          write_shape(w, e.specs[0].shape);
          write_dtype(w, e.specs[0].dtype, v);
        } else {
          // P6b: every output's id, shape and dtype.
          w.u64(e.specs.size() - 1);
          write_ids(w, e.out_ids);
          w.u64(e.specs.size());
          for (auto& s : e.specs) write_shape(w, s.shape);
          w.u64(e.specs.size());
          for (auto& s : e.specs) write_dtype(w, s.dtype, v);
        }
        break;
      }
    }
  }
}

}  // namespace kiln::format
