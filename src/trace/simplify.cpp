// Tape simplification (spec 4.1, step 4): the rewrites MLX's exporter applies before writing. Each
// rewrite drops entries and rewires later uses; the order of the remaining entries never changes.
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "format/bytes.h"
#include "trace/tape.h"

namespace kiln::detail {

namespace {

using format::Entry;
using format::Record;

// Follows merge links to the surviving id.
struct Renames {
  std::unordered_map<uint64_t, uint64_t> to;
  uint64_t operator()(uint64_t id) const {
    auto it = to.find(id);
    while (it != to.end()) {
      id = it->second;
      it = to.find(id);
    }
    return id;
  }
  void apply(Record& rec) const {
    if (to.empty()) return;
    for (auto& e : rec.tape) {
      for (auto& in : e.inputs) in = (*this)(in);
    }
    for (auto& o : rec.output_ids) o = (*this)(o);
  }
};

void compact(Record& rec, const std::vector<bool>& drop) {
  size_t k = 0;
  for (size_t i = 0; i < rec.tape.size(); ++i) {
    if (!drop[i]) {
      if (k != i) rec.tape[k] = std::move(rec.tape[i]);
      ++k;
    }
  }
  rec.tape.resize(k);
}

// 0-d constants with the same dtype and bits are one value: keep the first.
void merge_scalars(Record& rec) {
  std::unordered_map<uint64_t, uint64_t> seen[Dtype::num_types];
  Renames ren;
  std::vector<bool> drop(rec.tape.size(), false);
  for (size_t i = 0; i < rec.tape.size(); ++i) {
    auto& e = rec.tape[i];
    if (e.kind != Entry::Kind::Constant || !e.specs[0].shape.empty() || !e.value.is_available()) continue;
    auto bytes = format::payload_bytes(e.value);
    uint64_t bits = 0;
    for (size_t b = 0; b < bytes.size() && b < 8; ++b) bits |= uint64_t(bytes[b]) << (8 * b);
    auto [it, fresh] = seen[e.specs[0].dtype.code()].emplace(bits, e.id);
    if (!fresh && it->second != e.id) {
      ren.to[e.id] = it->second;
      drop[i] = true;
    }
  }
  ren.apply(rec);
  compact(rec, drop);
}

// Rows flagged kNoOp forward inputs: Copy and StopGradient their input; CustomTransforms (m outputs
// after n - m inputs, custom_function's node) output k forwards input n - m + k.
void remove_noops(Record& rec) {
  Renames ren;
  std::vector<bool> drop(rec.tape.size(), false);
  for (size_t i = 0; i < rec.tape.size(); ++i) {
    auto& e = rec.tape[i];
    for (auto& in : e.inputs) in = ren(in);
    if (e.kind == Entry::Kind::Primitive && (e.def->flags & kNoOp) && !e.out_ids.empty() &&
        e.inputs.size() >= e.out_ids.size()) {
      const size_t first = e.inputs.size() - e.out_ids.size();
      for (size_t k = 0; k < e.out_ids.size(); ++k) ren.to[e.out_ids[k]] = e.inputs[first + k];
      drop[i] = true;
    }
  }
  for (auto& o : rec.output_ids) o = ren(o);
  compact(rec, drop);
}

uint64_t mix(uint64_t x) {  // splitmix64 finalizer: spreads sequential ids over the table
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

size_t hash_node(const Entry& e) {
  uint64_t h = mix(reinterpret_cast<uintptr_t>(e.def));
  for (auto in : e.inputs) h = mix(h ^ in);
  return static_cast<size_t>(h);
}

// Merge a node into an earlier one with the same row, inputs and state, unless it is an output.
// The index is an open-addressing table of tape positions, so a pass allocates O(1) blocks.
bool cse_pass(Record& rec) {
  std::unordered_set<uint64_t> outputs(rec.output_ids.begin(), rec.output_ids.end());
  size_t cap = 16;
  while (cap < 2 * rec.tape.size()) cap <<= 1;
  std::vector<int64_t> table(cap, -1);
  Renames ren;
  std::vector<bool> drop(rec.tape.size(), false);
  bool changed = false;
  for (size_t i = 0; i < rec.tape.size(); ++i) {
    auto& e = rec.tape[i];
    if (!ren.to.empty()) {
      for (auto& in : e.inputs) in = ren(in);
    }
    if (e.kind != Entry::Kind::Primitive || e.inputs.empty() || (e.def->flags & kNoCSE)) continue;
    bool is_output = false;
    for (auto id : e.out_ids) is_output |= outputs.count(id) > 0;
    size_t slot = hash_node(e) & (cap - 1);
    bool merged = false;
    for (; table[slot] >= 0; slot = (slot + 1) & (cap - 1)) {
      const Entry& p = rec.tape[static_cast<size_t>(table[slot])];
      if (p.def == e.def && p.inputs == e.inputs && p.specs == e.specs && p.state == e.state) {
        if (!is_output) {
          for (size_t k = 0; k < e.out_ids.size(); ++k) ren.to[e.out_ids[k]] = p.out_ids[k];
          drop[i] = true;
          merged = changed = true;
        }
        break;
      }
    }
    if (!merged && table[slot] < 0) table[slot] = static_cast<int64_t>(i);
  }
  for (auto& o : rec.output_ids) o = ren(o);
  compact(rec, drop);
  return changed;
}

}  // namespace

void simplify(Record& rec, int cse_passes) {
  merge_scalars(rec);
  remove_noops(rec);
  for (int p = 0; p < cse_passes; ++p) {
    if (!cse_pass(rec)) break;
  }
}

}  // namespace kiln::detail
