#include "format/callback.h"

#include <algorithm>
#include <unordered_map>

#include "format/compat/version.h"

namespace kiln::format {

std::string callback_name(uint64_t n) {
  std::string s;
  while (n > 0) {
    s.push_back(static_cast<char>('A' + (n - 1) % 26));
    n = (n - 1) / 26;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

namespace {

// Names in order of first mention, fresh for each trace.
class Namer {
 public:
  const std::string& operator()(uint64_t id) {
    auto it = names_.find(id);
    if (it == names_.end()) it = names_.emplace(id, callback_name(names_.size() + 1)).first;
    return it->second;
  }

 private:
  std::unordered_map<uint64_t, std::string> names_;
};

using Described = std::vector<std::tuple<std::string, Shape, Dtype>>;

}  // namespace

void emit_events(const Record& rec, const ExportCallback& callback, std::unordered_set<uint64_t>& reported,
                 bool implied) {
  Namer name;
  std::unordered_map<uint64_t, ArraySpec> spec;
  for (size_t i = 0; i < rec.input_ids.size(); ++i) spec.emplace(rec.input_ids[i], rec.inputs[i]);
  for (auto& e : rec.tape) {
    for (size_t k = 0; k < e.out_ids.size(); ++k) spec.emplace(e.out_ids[k], e.specs[k]);
  }
  auto describe = [&](uint64_t id) {
    const ArraySpec& s = spec.at(id);
    return std::make_tuple(name(id), s.shape, s.dtype);
  };

  {
    Described ins;
    for (auto id : rec.input_ids) ins.push_back(describe(id));
    callback({{"type", std::string("inputs")}, {"inputs", std::move(ins)}});
  }
  {
    std::vector<std::pair<std::string, std::string>> kws;
    size_t first_kw = rec.input_ids.size() - rec.kwarg_keys.size();
    for (size_t k = 0; k < rec.kwarg_keys.size(); ++k) {
      kws.emplace_back(rec.kwarg_keys[k], name(rec.input_ids[first_kw + k]));
    }
    callback({{"type", std::string("keyword_inputs")}, {"keywords", std::move(kws)}});
  }
  {
    Described outs;
    for (auto id : rec.output_ids) outs.push_back(describe(id));
    callback({{"type", std::string("outputs")}, {"outputs", std::move(outs)}});
  }
  {
    std::vector<std::pair<std::string, array>> consts;
    for (auto& e : rec.tape) {
      if (e.kind != Entry::Kind::Constant || reported.count(e.id)) continue;
      reported.insert(e.id);
      consts.emplace_back(name(e.id), e.value);
    }
    callback({{"type", std::string("constants")}, {"constants", std::move(consts)}});
  }
  for (auto& e : rec.tape) {
    if (e.kind != Entry::Kind::Primitive) continue;
    Described ins, outs;
    for (auto id : e.inputs) ins.push_back(describe(id));
    for (auto id : e.out_ids) outs.push_back(describe(id));
    std::vector<StateT> args;
    for (size_t i = 0; i < e.state.values.size(); ++i) {
      if (i < e.def->fields.size() && e.def->fields[i].type == FieldType::Placeholder) continue;
      if (!implied && implied_field(*e.def, static_cast<int>(i))) continue;  // not part of MLX's state (DivMod's floor)
      args.push_back(e.state.values[i]);
    }
    callback({{"type", std::string("primitive")},
              {"name", e.def->name},
              {"inputs", std::move(ins)},
              {"outputs", std::move(outs)},
              {"arguments", std::move(args)}});
  }
}

}  // namespace kiln::format
