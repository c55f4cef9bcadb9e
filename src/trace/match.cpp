#include "trace/match.h"

#include <algorithm>
#include <sstream>

namespace kiln::detail {

SortedKwargs sort_kwargs(const Kwargs& kwargs) {
  SortedKwargs kw(kwargs.begin(), kwargs.end());
  std::sort(kw.begin(), kw.end(), [](auto& a, auto& b) { return a.first < b.first; });
  return kw;
}

namespace {
bool same(const array& a, const ArraySpec& s, bool shapeless) {
  if (a.dtype() != s.dtype || a.ndim() != s.shape.size()) return false;
  return shapeless || a.shape() == s.shape;
}
}  // namespace

bool signature_matches(const std::vector<std::string>& stored_keys, const std::vector<ArraySpec>& stored,
                       const Args& args, const SortedKwargs& kwargs, bool shapeless) {
  if (stored.size() != args.size() + kwargs.size()) return false;
  for (auto& k : stored_keys) {
    bool found = std::any_of(kwargs.begin(), kwargs.end(), [&](auto& kv) { return kv.first == k; });
    if (!found) return false;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (!same(args[i], stored[i], shapeless)) return false;
  }
  for (size_t j = 0; j < kwargs.size(); ++j) {
    if (!same(kwargs[j].second, stored[args.size() + j], shapeless)) return false;
  }
  return true;
}

std::string no_match_message(const std::vector<const FunctionInfo*>& functions, const Args& args,
                             const SortedKwargs& kwargs) {
  std::ostringstream os;
  os << "[import_function::call] No imported function found which matches the given positional and keyword "
        "arguments. Possible functions include:\n";
  int n = 1;
  for (auto* f : functions) {
    size_t np = f->num_positional();
    os << " " << n++ << ". Function with " << np << " positional inputs and " << f->kwarg_keys.size()
       << " keyword inputs:\n";
    for (size_t i = 0; i < f->inputs.size(); ++i) {
      os << "   ";
      if (i < np) {
        os << i + 1 << ": ";
      } else {
        os << "\"" << f->kwarg_keys[i - np] << "\": ";
      }
      os << f->inputs[i].shape << " " << f->inputs[i].dtype << "\n";
    }
  }
  os << "\nCalled with " << args.size() << " positional inputs and " << kwargs.size() << " keyword inputs:\n";
  for (size_t i = 0; i < args.size(); ++i) os << "  " << i + 1 << ": " << args[i].shape() << " " << args[i].dtype() << "\n";
  for (auto& [k, a] : kwargs) os << "  \"" << k << "\": " << a.shape() << " " << a.dtype() << "\n";
  return os.str();
}

}  // namespace kiln::detail
