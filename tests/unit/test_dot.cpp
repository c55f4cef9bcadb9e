// export_to_dot: MLX's Graphviz layout (source inputs, rectangle primitives labelled with MLX's display
// names, sink outputs, names A, B, ... after the given ones), shared nodes written once, multi-output
// nodes, deep graphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "kiln/kiln.h"

namespace mx = kiln;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

std::string dot(const std::vector<mx::array>& outs, const std::vector<std::pair<mx::array, std::string>>& names = {}) {
  std::ostringstream os;
  mx::export_to_dot(os, outs, names);
  return os.str();
}

// Node ids are addresses: replace each with N1, N2, ... in order of appearance.
std::string normalize(const std::string& s) {
  std::regex num("\\b[0-9]{5,}\\b");
  std::map<std::string, std::string> ids;
  std::string out;
  auto begin = std::sregex_iterator(s.begin(), s.end(), num);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += s.substr(last, it->position() - last);
    auto [p, fresh] = ids.emplace(it->str(), "N" + std::to_string(ids.size() + 1));
    out += p->second;
    last = it->position() + it->length();
  }
  return out + s.substr(last);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Dot, EvaluatedArrayIsASource) {
  mx::array a({1.0f, 2.0f});
  EXPECT_EQ(dot({a}), "digraph {\n{ rank=source; \"A\"; }\n}");
}

TEST(Dot, NamedInputsChain) {
  mx::array a(1.0f), b(2.0f);
  auto c = mx::exp(mx::add(a, b));
  // As MLX writes export_to_dot(f, exp(a + b), a=a, b=b): given names, then C, D.
  EXPECT_EQ(normalize(dot({c, a, b}, {{a, "a"}, {b, "b"}})),
            "digraph {\n"
            "{ rank=source; \"a\"; }\n"
            "{ rank=source; \"b\"; }\n"
            "{ N1 [label =\"Add\", shape=rectangle]; }\n"
            "\"a\" -> N1\n"
            "\"b\" -> N1\n"
            "{ \"C\"; }\n"
            "N1 -> \"C\"\n"
            "{ N2 [label =\"Exp\", shape=rectangle]; }\n"
            "\"C\" -> N2\n"
            "{ rank=sink; \"D\"; }\n"
            "N2 -> \"D\"\n"
            "}");
}

TEST(Dot, DisplayNamesAndIntermediates) {
  mx::array a({1.0f, 2.0f});
  auto s = mx::sum(a, 0);
  std::string d = normalize(dot({s}));
  EXPECT_THAT(d, HasSubstr("[label =\"Sum\", shape=rectangle]"));    // Reduce's display name, as MLX
  EXPECT_THAT(d, HasSubstr("[label =\"Squeeze\", shape=rectangle]"));
  EXPECT_THAT(d, HasSubstr("{ \"B\"; }"));            // used by Squeeze: not a sink
  EXPECT_THAT(d, HasSubstr("{ rank=sink; \"C\"; }"));
  EXPECT_EQ(d.rfind("}"), d.size() - 1);
  EXPECT_NE(d.back(), '\n');
}

TEST(Dot, SharedSubgraphOnceAndMultiOutputNodes) {
  mx::array x({1.0f, 2.0f, 3.0f, 4.0f});
  auto e = mx::exp(x);
  auto parts = mx::split(e, 2, 0);
  auto y = mx::add(parts[0], parts[1]);
  auto z = mx::multiply(y, parts[0]);
  std::string d = normalize(dot({z, y}));
  EXPECT_EQ(count(d, "[label =\"Exp\""), 1u);
  EXPECT_EQ(count(d, "[label =\"Split\""), 1u);  // one node for both outputs
  EXPECT_EQ(count(d, "[label =\"Add\""), 1u);
  EXPECT_EQ(count(d, "rank=source"), 1u);
  // The split node points to both of its outputs.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(d, m, std::regex("\\{ (N[0-9]+) \\[label =\"Split\"")));
  EXPECT_EQ(count(d, m[1].str() + " -> \""), 2u);
  // y feeds z: not a sink although it was asked for; z is the only sink.
  EXPECT_EQ(count(d, "rank=sink"), 1u);
}

TEST(Dot, EveryEdgeNamesDeclaredNodes) {
  mx::array a({1.0f, 2.0f}), b({3.0f, 4.0f});
  auto c = mx::maximum(mx::subtract(a, b), mx::divide(a, b));
  std::string d = dot({c});
  std::regex edge("\"([A-Z]+)\" -> ([0-9]+)\n");
  size_t edges = 0;
  for (auto it = std::sregex_iterator(d.begin(), d.end(), edge); it != std::sregex_iterator(); ++it, ++edges) {
    EXPECT_THAT(d, HasSubstr("\"" + (*it)[1].str() + "\"; }"));
    EXPECT_THAT(d, HasSubstr("{ " + (*it)[2].str() + " [label ="));
  }
  EXPECT_EQ(edges, 6u);
  EXPECT_THAT(d, Not(HasSubstr("label =\"?\"")));
}

TEST(Dot, NamesPastZ) {
  mx::array x(1.0f);
  std::vector<mx::array> outs;
  mx::array y = x;
  for (int i = 0; i < 30; ++i) y = mx::add(y, x);
  std::string d = dot({y});
  EXPECT_THAT(d, HasSubstr("\"Z\""));
  EXPECT_THAT(d, HasSubstr("\"AA\""));
  EXPECT_THAT(d, HasSubstr("{ rank=sink; \"AE\"; }"));  // 1 input + 30 outputs = 31 names
}

TEST(Dot, DeepGraphDoesNotOverflow) {
  mx::array x(1.0f);
  mx::array y = x;
  for (int i = 0; i < 200000; ++i) y = mx::negative(y);
  std::ostringstream os;
  mx::export_to_dot(os, {y});
  EXPECT_EQ(count(os.str(), "[label =\"Negative\""), 200000u);
}

TEST(Dot, EmptyArrayRefused) {
  std::ostringstream os;
  EXPECT_THROW(mx::export_to_dot(os, {mx::array()}), std::invalid_argument);
}
