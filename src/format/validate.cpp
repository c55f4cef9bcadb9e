#include "format/validate.h"

#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "format/codec.h"

namespace kiln::format {

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t sat_add(uint64_t a, uint64_t b) { return a > kMax - b ? kMax : a + b; }

const std::vector<ArraySpec>& entry_specs(const Record& rec, const std::vector<std::vector<ArraySpec>>* specs,
                                          size_t i) {
  return specs ? (*specs)[i] : rec.tape[i].specs;
}

std::string what_of(const Entry& e) {
  if (e.kind == Entry::Kind::Constant) return "constant " + std::to_string(e.id);
  if (e.kind == Entry::Kind::Input) return "input " + std::to_string(e.id);
  return e.def->name + " node " + std::to_string(e.id);
}

// The first violation of `o` in `rec`, or "" when there is none.
std::string violation(const Record& rec, const std::vector<std::vector<ArraySpec>>* specs, const ImportOptions& o) {
  if (o.max_array_bytes) {
    for (size_t i = 0; i < rec.tape.size(); ++i) {
      const Entry& e = rec.tape[i];
      if (e.kind == Entry::Kind::Input) continue;
      for (auto& s : entry_specs(rec, specs, i)) {
        uint64_t b = spec_bytes(s);
        if (b > o.max_array_bytes) {
          return "tape entry " + std::to_string(i) + " (" + what_of(e) + ") is an array of " + spec_text(s) +
                 " that needs " + std::to_string(b) + " bytes, more than the limit of " +
                 std::to_string(o.max_array_bytes) + " bytes (ImportOptions::max_array_bytes)";
        }
      }
    }
  }
  if (o.max_call_bytes) {
    uint64_t peak = peak_bytes(rec, specs);
    if (peak > o.max_call_bytes) {
      return "a call needs about " + std::to_string(peak) + " bytes of working memory, more than the limit of " +
             std::to_string(o.max_call_bytes) + " bytes (ImportOptions::max_call_bytes)";
    }
  }
  return "";
}

}  // namespace

uint64_t spec_bytes(const ArraySpec& s) {
  uint64_t n = s.dtype.size;
  for (auto d : s.shape) {
    if (d <= 0) return 0;
    if (n > kMax / static_cast<uint64_t>(d)) return kMax;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

uint64_t peak_bytes(const Record& rec, const std::vector<std::vector<ArraySpec>>* specs) {
  constexpr size_t kForever = std::numeric_limits<size_t>::max();
  std::unordered_map<uint64_t, size_t> last_use;
  for (size_t i = 0; i < rec.tape.size(); ++i) {
    for (auto id : rec.tape[i].inputs) last_use[id] = i;
  }
  for (auto id : rec.output_ids) last_use[id] = kForever;
  std::unordered_map<uint64_t, uint64_t> live_bytes;  // ids alive now that can still be freed
  uint64_t live = 0, peak = 0;
  for (size_t i = 0; i < rec.tape.size(); ++i) {
    const Entry& e = rec.tape[i];
    if (e.kind == Entry::Kind::Input) continue;
    const auto& out = entry_specs(rec, specs, i);
    for (size_t k = 0; k < out.size() && k < e.out_ids.size(); ++k) {
      uint64_t b = spec_bytes(out[k]);
      live = sat_add(live, b);
      auto it = last_use.find(e.out_ids[k]);
      // Constants stay cached by the file; outputs nobody reads are freed at once.
      if (e.kind == Entry::Kind::Primitive && it != last_use.end() && it->second != kForever) {
        live_bytes[e.out_ids[k]] = b;
      }
      peak = std::max(peak, live);
      if (e.kind == Entry::Kind::Primitive && it == last_use.end() && live != kMax) live -= b;
    }
    for (auto id : e.inputs) {
      auto lb = live_bytes.find(id);
      if (lb != live_bytes.end() && last_use[id] == i) {
        if (live != kMax) live -= lb->second;
        live_bytes.erase(lb);
      }
    }
  }
  return peak;
}

void check_limits(const Record& rec, size_t index, const ImportOptions& options) {
  std::string v = violation(rec, nullptr, options);
  if (!v.empty()) {
    throw std::invalid_argument("[import_function] Function record " + std::to_string(index) + " exceeds a limit: " +
                                v + ".");
  }
}

void check_call_limits(const Record& rec, const std::vector<std::vector<ArraySpec>>& specs,
                       const ImportOptions& options) {
  std::string v = violation(rec, &specs, options);
  if (!v.empty()) throw std::invalid_argument("[import_function::call] For the given input shapes, " + v + ".");
}

}  // namespace kiln::format
