// Helpers shared by the per-family tests: an array's values read back through its own strides
// (independent of the kernels under test), the text of the exception a call throws, the shape and
// dtype half of a result comparison, and MLX 0.30.1's export-callback events as text.
#pragma once

#include <charconv>
#include <cstring>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include <kiln/export.h>
#include <kiln/kiln.h>

namespace test_util {

namespace mx = kiln;

// Sanitizer builds run 10-30x slower: tests that scale a structure use a smaller one there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// Every element of `a` (any strides) in row-major order, converted to T.
template <typename T>
std::vector<T> vals(mx::array a) {
  a.eval();
  std::vector<T> out(a.size());
  const char* base = static_cast<const char*>(a.buffer() ? a.buffer()->ptr : nullptr);
  const size_t isz = a.itemsize();
  std::vector<int> idx(a.ndim(), 0);
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t off = a.offset();
    for (size_t d = 0; d < a.ndim(); ++d) off += idx[d] * a.strides()[d];
    mx::convert_values(base + off * isz, a.dtype(), &out[i], mx::storage_dtype_of<T>, 1);
    for (int d = static_cast<int>(a.ndim()) - 1; d >= 0; --d) {
      if (++idx[d] < a.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Calls `f` once for each node of the graph below `outs` (with one array of the node), outputs first.
inline void for_each_node(const std::vector<mx::array>& outs, const std::function<void(const mx::array&)>& f) {
  std::vector<mx::array> stack(outs.begin(), outs.end());
  std::unordered_set<const mx::Node*> seen;
  while (!stack.empty()) {
    mx::array a = stack.back();
    stack.pop_back();
    if (!a.has_primitive() || !seen.insert(a.node().get()).second) continue;
    f(a);
    for (auto& in : a.inputs()) stack.push_back(in);
  }
}

// Whether the graph below `outs` holds a node of the row `name`.
inline bool graph_has(const std::vector<mx::array>& outs, const std::string& name) {
  bool found = false;
  for_each_node(outs, [&](const mx::array& a) { found = found || a.node()->def->name == name; });
  return found;
}

// The message of the exception `f` throws; `none` when it throws nothing.
inline std::string message_of(const std::function<void()>& f, const char* none = "<no exception>") {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return none;
}

// Why `got` differs from `want` in shape or dtype ("shape (2,3) != expected (3,2)"); empty when both agree.
inline std::string shape_dtype_mismatch(const mx::array& got, const mx::array& want) {
  using kiln::operator<<;  // Shape is a std::vector: its printer is not found by argument-dependent lookup
  std::ostringstream why;
  if (got.shape() != want.shape()) {
    why << "shape " << got.shape() << " != expected " << want.shape();
  } else if (got.dtype() != want.dtype()) {
    why << "dtype " << got.dtype() << " != expected " << want.dtype();
  }
  return why.str();
}

// ---- export callback events, printed as the tests' MLX 0.30.1 scripts print them ----

inline std::string fmt_double(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

inline std::string fmt_value(const mx::Value& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "T" : "F");
        } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint64_t>) {
          os << x;
        } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          os << fmt_double(x);
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>> || std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<uint64_t>>) {
          os << "[";
          for (size_t i = 0; i < x.size(); ++i) os << (i ? "," : "") << x[i];
          os << "]";
        } else {
          os << "?";
        }
      },
      v);
  return os.str();
}

inline std::string fmt_shape(const mx::Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

using IO = std::vector<std::tuple<std::string, mx::Shape, mx::Dtype>>;
inline std::string fmt_io(const IO& l) {
  std::string out = "[";
  for (size_t i = 0; i < l.size(); ++i) {
    out += (i ? " " : "") + std::get<0>(l[i]) + ":" + fmt_shape(std::get<1>(l[i])) + ":" +
           mx::dtype_name(std::get<2>(l[i]));
  }
  return out + "]";
}

// The callback events of exporting `f` on `args`, one line each, in MLX's Python callback format.
inline std::string events(const mx::ArgsFn& f, const mx::Args& args, bool shapeless) {
  std::vector<std::string> lines;
  auto cb = [&](const mx::ExportCallbackInput& e) {
    const auto& type = std::get<std::string>(e.at("type"));
    if (type == "inputs") {
      lines.push_back("in " + fmt_io(std::get<IO>(e.at("inputs"))));
    } else if (type == "outputs") {
      lines.push_back("out " + fmt_io(std::get<IO>(e.at("outputs"))));
    } else if (type == "constants") {
      std::string s = "const [";
      const auto& c = std::get<std::vector<std::pair<std::string, mx::array>>>(e.at("constants"));
      for (size_t i = 0; i < c.size(); ++i) {
        s += (i ? " " : "") + c[i].first + ":" + fmt_shape(c[i].second.shape()) + ":" +
             mx::dtype_name(c[i].second.dtype());
      }
      lines.push_back(s + "]");
    } else if (type == "primitive") {
      std::string s = std::get<std::string>(e.at("name")) + " [";
      bool first = true;
      for (auto& v : std::get<std::vector<mx::StateT>>(e.at("arguments"))) {
        if (std::holds_alternative<mx::Dtype>(v)) continue;  // MLX 0.30.1's callback drops dtypes
        s += (first ? "" : ",") + fmt_value(v);
        first = false;
      }
      s += "] " + fmt_io(std::get<IO>(e.at("inputs"))) + " -> " + fmt_io(std::get<IO>(e.at("outputs")));
      lines.push_back(s);
    }
  };
  mx::export_function(cb, f, args, shapeless);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

}  // namespace test_util
