// A small stand-in for the doctest macros that MLX's C++ tests use, written for kiln's measuring
// stick (scripts/mlx_cpp_tests.sh). Each generated program holds one TEST_CASE; main() runs it and
// prints one line "kiln-shim: checks=N failed=M" (or "kiln-shim: exception: ..."), which the runner
// reads. A failed CHECK records the failure and goes on, as doctest's CHECK does; an exception that
// escapes a CHECK is a failed check; one that escapes the case ends it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace doctest {

// Relative comparison: |a - b| < eps * (scale + max(|a|, |b|)), eps defaulting to 100 float epsilons.
class Approx {
 public:
  explicit Approx(double value) : value_(value) {}
  Approx& epsilon(double e) {
    eps_ = e;
    return *this;
  }
  Approx& scale(double s) {
    scale_ = s;
    return *this;
  }
  bool matches(double other) const {
    return std::fabs(other - value_) < eps_ * (scale_ + std::max(std::fabs(other), std::fabs(value_)));
  }
  double value() const { return value_; }

 private:
  double value_;
  double eps_ = static_cast<double>(std::numeric_limits<float>::epsilon()) * 100;
  double scale_ = 1.0;
};
template <typename T>
  requires std::is_convertible_v<T, double>
bool operator==(T lhs, const Approx& rhs) {
  return rhs.matches(static_cast<double>(lhs));
}
template <typename T>
  requires std::is_convertible_v<T, double>
bool operator==(const Approx& lhs, T rhs) {
  return lhs.matches(static_cast<double>(rhs));
}
template <typename T>
  requires std::is_convertible_v<T, double>
bool operator!=(T lhs, const Approx& rhs) {
  return !rhs.matches(static_cast<double>(lhs));
}
template <typename T>
  requires std::is_convertible_v<T, double>
bool operator!=(const Approx& lhs, T rhs) {
  return !lhs.matches(static_cast<double>(rhs));
}
inline std::ostream& operator<<(std::ostream& os, const Approx& a) { return os << "Approx(" << a.value() << ")"; }

namespace shim {

struct Case {
  const char* name;
  void (*fn)();
};
inline std::vector<Case>& cases() {
  static std::vector<Case> c;
  return c;
}
struct Counts {
  long checks = 0;
  long failed = 0;
};
inline Counts& counts() {
  static Counts c;
  return c;
}
struct Register {
  Register(const char* name, void (*fn)()) { cases().push_back({name, fn}); }
};

template <typename T>
std::string show(const T& v) {
  if constexpr (requires(std::ostream& os) { os << v; }) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else {
    return "{?}";
  }
}

inline void report(const char* file, int line, const std::string& what) {
  std::cerr << file << ":" << line << ": check failed: " << what << "\n";
  counts().failed++;
}

template <typename F>
void check(const char* file, int line, const char* text, bool expect, F&& f) {
  counts().checks++;
  try {
    if (static_cast<bool>(f()) != expect) report(file, line, text);
  } catch (const std::exception& e) {
    report(file, line, std::string(text) + " threw " + e.what());
  } catch (...) {
    report(file, line, std::string(text) + " threw a non-std exception");
  }
}

template <typename F>
void compare(const char* file, int line, const char* text, F&& f) {
  counts().checks++;
  try {
    auto [ok, values] = f();
    if (!ok) report(file, line, std::string(text) + " with " + values);
  } catch (const std::exception& e) {
    report(file, line, std::string(text) + " threw " + e.what());
  } catch (...) {
    report(file, line, std::string(text) + " threw a non-std exception");
  }
}

template <typename A, typename B>
std::pair<bool, std::string> eq(const A& a, const B& b) {
  bool ok = static_cast<bool>(a == b);
  return {ok, ok ? std::string() : show(a) + " vs " + show(b)};
}
template <typename A, typename B>
std::pair<bool, std::string> ne(const A& a, const B& b) {
  bool ok = static_cast<bool>(a != b);
  return {ok, ok ? std::string() : show(a) + " vs " + show(b)};
}

// Any exception passes CHECK_THROWS; CHECK_THROWS_AS matches the type in its own catch.
template <typename F>
void throws(const char* file, int line, const char* text, F&& f) {
  counts().checks++;
  try {
    f();
  } catch (...) {
    return;
  }
  report(file, line, std::string(text) + " did not throw");
}

}  // namespace shim
}  // namespace doctest

#define KILN_SHIM_CAT2(a, b) a##b
#define KILN_SHIM_CAT(a, b) KILN_SHIM_CAT2(a, b)
#define KILN_SHIM_CASE(name, id)                                                      \
  static void KILN_SHIM_CAT(kiln_shim_case_, id)();                                   \
  static ::doctest::shim::Register KILN_SHIM_CAT(kiln_shim_reg_, id)(name,           \
                                                                   &KILN_SHIM_CAT(kiln_shim_case_, id)); \
  static void KILN_SHIM_CAT(kiln_shim_case_, id)()
#define TEST_CASE(name) KILN_SHIM_CASE(name, __LINE__)

#define CHECK(...) ::doctest::shim::check(__FILE__, __LINE__, "CHECK(" #__VA_ARGS__ ")", true, [&]() -> bool { return static_cast<bool>(__VA_ARGS__); })
#define CHECK_FALSE(...) ::doctest::shim::check(__FILE__, __LINE__, "CHECK_FALSE(" #__VA_ARGS__ ")", false, [&]() -> bool { return static_cast<bool>(__VA_ARGS__); })
#define CHECK_EQ(...) ::doctest::shim::compare(__FILE__, __LINE__, "CHECK_EQ(" #__VA_ARGS__ ")", [&]() { return ::doctest::shim::eq(__VA_ARGS__); })
#define CHECK_NE(...) ::doctest::shim::compare(__FILE__, __LINE__, "CHECK_NE(" #__VA_ARGS__ ")", [&]() { return ::doctest::shim::ne(__VA_ARGS__); })
#define CHECK_THROWS(...) ::doctest::shim::throws(__FILE__, __LINE__, "CHECK_THROWS(" #__VA_ARGS__ ")", [&]() { static_cast<void>(__VA_ARGS__); })
#define CHECK_THROWS_MESSAGE(expr, ...) ::doctest::shim::throws(__FILE__, __LINE__, "CHECK_THROWS(" #expr ")", [&]() { static_cast<void>(expr); })
#define CHECK_THROWS_AS(expr, ...)                                                         \
  do {                                                                                     \
    ::doctest::shim::counts().checks++;                                                    \
    try {                                                                                  \
      static_cast<void>(expr);                                                             \
      ::doctest::shim::report(__FILE__, __LINE__, "CHECK_THROWS_AS(" #expr ") did not throw"); \
    } catch (const __VA_ARGS__&) {                                                         \
    } catch (const std::exception& kiln_shim_e) {                                          \
      ::doctest::shim::report(__FILE__, __LINE__,                                          \
                              std::string("CHECK_THROWS_AS(" #expr ", " #__VA_ARGS__ ") threw another type: ") + \
                                  kiln_shim_e.what());                                     \
    } catch (...) {                                                                        \
      ::doctest::shim::report(__FILE__, __LINE__, "CHECK_THROWS_AS(" #expr ") threw another type"); \
    }                                                                                      \
  } while (0)
#define INFO(...) static_cast<void>(0)

#ifdef KILN_SHIM_MAIN
int main() {
  auto& cs = ::doctest::shim::cases();
  if (cs.size() != 1) {
    std::printf("kiln-shim: expected one test case, found %zu\n", cs.size());
    return 3;
  }
  try {
    cs[0].fn();
  } catch (const std::exception& e) {
    std::printf("kiln-shim: exception: %s\n", e.what());
    return 2;
  } catch (...) {
    std::printf("kiln-shim: exception: (not a std::exception)\n");
    return 2;
  }
  auto& c = ::doctest::shim::counts();
  std::printf("kiln-shim: checks=%ld failed=%ld\n", c.checks, c.failed);
  return c.failed == 0 ? 0 : 1;
}
#endif
