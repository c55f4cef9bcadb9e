// The reference sweep's op table: each case's op name (MLX's python name, or kiln.<name>) mapped to the
// kiln call, fn(inputs, params) -> outputs, with helpers that read a case's JSON parameters. The MLX side
// is tests/reference/sweep_ops.py; the sweep itself is test_sweep.cpp.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/kiln.h"

namespace sweep {

namespace mx = kiln;
using json = nlohmann::json;
using Arrays = std::vector<mx::array>;
using OpFn = std::function<Arrays(const Arrays&, const json&)>;

const std::map<std::string, OpFn>& ops();

// ---- parameters (a missing or null key gives the default)

inline mx::Dtype dtype_of(const std::string& s) {
  static const std::map<std::string, mx::Dtype> m = {
      {"bool", mx::bool_},       {"uint8", mx::uint8},     {"uint16", mx::uint16},   {"uint32", mx::uint32},
      {"uint64", mx::uint64},    {"int8", mx::int8},       {"int16", mx::int16},     {"int32", mx::int32},
      {"int64", mx::int64},      {"float16", mx::float16}, {"bfloat16", mx::bfloat16}, {"float32", mx::float32},
      {"float64", mx::float64},  {"complex64", mx::complex64}};
  return m.at(s);
}


inline bool has(const json& p, const char* k) { return p.contains(k) && !p[k].is_null(); }
inline int gi(const json& p, const char* k, int d = 0) { return has(p, k) ? p[k].get<int>() : d; }
inline float gf(const json& p, const char* k, float d = 0) { return has(p, k) ? p[k].get<float>() : d; }
inline bool gb(const json& p, const char* k, bool d = false) { return has(p, k) ? p[k].get<bool>() : d; }
inline std::string gs(const json& p, const char* k, const std::string& d = "") {
  return has(p, k) ? p[k].get<std::string>() : d;
}
inline std::vector<int> gv(const json& p, const char* k) { return has(p, k) ? p[k].get<std::vector<int>>() : std::vector<int>{}; }
inline mx::Shape gshape(const json& p, const char* k) { return has(p, k) ? p[k].get<mx::Shape>() : mx::Shape{}; }
inline std::optional<int> gopt(const json& p, const char* k) {
  return has(p, k) ? std::optional<int>(p[k].get<int>()) : std::nullopt;
}
inline mx::Dtype gd(const json& p, const char* k = "dtype", mx::Dtype d = mx::float32) {
  return has(p, k) ? dtype_of(p[k].get<std::string>()) : d;
}
// A single int or a list of ints (conv strides and paddings).
inline std::vector<int> gints(const json& p, const char* k, int d, int n) {
  if (!has(p, k)) return std::vector<int>(n, d);
  if (p[k].is_number()) return std::vector<int>(n, p[k].get<int>());
  return p[k].get<std::vector<int>>();
}
inline std::pair<int, int> g2(const json& p, const char* k, int d) {
  auto v = gints(p, k, d, 2);
  return {v[0], v[1]};
}
inline std::tuple<int, int, int> g3(const json& p, const char* k, int d) {
  auto v = gints(p, k, d, 3);
  return {v[0], v[1], v[2]};
}


}  // namespace sweep
