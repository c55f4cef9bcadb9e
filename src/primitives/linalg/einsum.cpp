// einsum: a composition of diagonal, sum, transpose, reshape, broadcast_to and matmul (no primitive of
// its own, so exported graphs hold only table primitives). Operands are contracted pairwise from the
// left; a label is summed out as soon as no later operand and not the output needs it, and each pair
// becomes one batched matrix product (multiply-and-sum for integer operands, which matmul refuses).
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"

namespace kiln {

namespace {

using Labels = std::vector<int>;  // a letter's code; ellipsis axes get kEllipsis + k
constexpr int kEllipsis = 1000;

// The op named in errors: einsum, or einsum_path while it parses.
thread_local const char* g_op = "einsum";
[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(std::string("[") + g_op + "] " + msg); }

// Letters of one term; "..." becomes `-1` (expanded later once the operand's rank is known).
Labels parse_term(const std::string& t) {
  Labels out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 3, "...") == 0) {
      if (std::count(out.begin(), out.end(), -1)) fail("Only one ellipsis is allowed per subscript.");
      out.push_back(-1);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(t[i]))) {
      out.push_back(t[i]);
    } else {
      fail(std::string("Subscripts must be letters, but got '") + t[i] + "'.");
    }
  }
  return out;
}

// Replace the ellipsis by the operand's leading broadcast axes, right-aligned to `n_ell` axes.
Labels expand(const Labels& term, int n_ell_here, int n_ell) {
  Labels out;
  for (int l : term) {
    if (l != -1) {
      out.push_back(l);
      continue;
    }
    for (int k = 0; k < n_ell_here; ++k) out.push_back(kEllipsis + n_ell - n_ell_here + k);
  }
  return out;
}

struct Operand {
  array a;
  Labels labels;
};

// Collapse repeated labels of one operand onto their diagonal.
void take_diagonals(Operand& op, StreamOrDevice s) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < op.labels.size() && !again; ++i) {
      for (size_t j = i + 1; j < op.labels.size(); ++j) {
        if (op.labels[i] != op.labels[j]) continue;
        op.a = diagonal(op.a, 0, static_cast<int>(i), static_cast<int>(j), s);
        const int l = op.labels[i];
        op.labels.erase(op.labels.begin() + static_cast<long>(j));
        op.labels.erase(op.labels.begin() + static_cast<long>(i));
        op.labels.push_back(l);
        again = true;
        break;
      }
    }
  }
}

// Sum out the labels of `op` that are not in `keep`.
void sum_unneeded(Operand& op, const std::multiset<int>& keep, StreamOrDevice s) {
  std::vector<int> axes;
  Labels rest;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (keep.count(op.labels[i])) {
      rest.push_back(op.labels[i]);
    } else {
      axes.push_back(static_cast<int>(i));
    }
  }
  if (!axes.empty()) {
    op.a = sum(op.a, axes, false, s);
    op.labels = rest;
  }
}

// Labels in both x and y are batch axes when `keep` needs them later, else contracted; the result's
// labels are the batch ones, then x's free ones, then y's.
Operand contract(const Operand& x, const Operand& y, const std::multiset<int>& keep, const std::map<int, int>& size,
                 StreamOrDevice s) {
  std::vector<int> batch, contracted, xfree, yfree;
  for (int l : x.labels) {
    const bool in_y = std::count(y.labels.begin(), y.labels.end(), l) > 0;
    if (!in_y) {
      xfree.push_back(l);
    } else if (keep.count(l)) {
      batch.push_back(l);
    } else {
      contracted.push_back(l);
    }
  }
  for (int l : y.labels) {
    if (!std::count(x.labels.begin(), x.labels.end(), l)) yfree.push_back(l);
  }
  auto pos = [](const Labels& ls, int l) {
    return static_cast<int>(std::find(ls.begin(), ls.end(), l) - ls.begin());
  };
  // Broadcast shared labels of size 1 against the other operand's size.
  auto arrange = [&](const Operand& o, const std::vector<std::vector<int>>& groups) {
    std::vector<int> perm;
    Shape target;
    for (auto& g : groups) {
      for (int l : g) {
        perm.push_back(pos(o.labels, l));
        target.push_back(size.at(l));
      }
    }
    array t = transpose(o.a, perm, s);
    return broadcast_to(t, target, s);
  };
  array xa = arrange(x, {batch, xfree, contracted});
  array ya = arrange(y, {batch, contracted, yfree});
  auto sizes_of = [&](const std::vector<int>& ls) {
    int64_t n = 1;
    for (int l : ls) n *= size.at(l);
    return static_cast<int32_t>(n);
  };
  const int32_t B = sizes_of(batch), M = sizes_of(xfree), K = sizes_of(contracted), N = sizes_of(yfree);
  Shape out_shape;
  Labels out_labels;
  for (auto* g : {&batch, &xfree, &yfree}) {
    for (int l : *g) {
      out_shape.push_back(size.at(l));
      out_labels.push_back(l);
    }
  }
  array r;
  const Dtype t = promote_types(xa.dtype(), ya.dtype());
  if (is_inexact(t)) {
    r = matmul(reshape(xa, {B, M, K}, s), reshape(ya, {B, K, N}, s), s);
  } else {
    // (B, M, K, 1) * (B, 1, K, N) summed over K.
    r = sum(multiply(reshape(xa, {B, M, K, 1}, s), reshape(ya, {B, 1, K, N}, s), s), 2, false, s);
  }
  return {reshape(r, out_shape, s), out_labels};
}

// The subscripts checked against the operands: each operand's labels (ellipsis expanded), the output's,
// and every label's (broadcast) size.
struct Spec {
  std::vector<Labels> terms;
  Labels out;
  std::map<int, int> size;
};

Spec parse_spec(const std::string& subscripts, const std::vector<array>& operands) {
  if (operands.empty()) fail("At least one operand is required.");
  std::string lhs = subscripts, rhs;
  const bool explicit_out = subscripts.find("->") != std::string::npos;
  if (explicit_out) {
    lhs = subscripts.substr(0, subscripts.find("->"));
    rhs = subscripts.substr(subscripts.find("->") + 2);
  }
  lhs.erase(std::remove(lhs.begin(), lhs.end(), ' '), lhs.end());
  rhs.erase(std::remove(rhs.begin(), rhs.end(), ' '), rhs.end());
  std::vector<Labels> terms;
  for (size_t p = 0;;) {
    size_t q = lhs.find(',', p);
    terms.push_back(parse_term(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p)));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (terms.size() != operands.size()) {
    fail("Number of operands, " + std::to_string(operands.size()) + ", does not match number of input subscripts, " +
         std::to_string(terms.size()));
  }
  // Ellipsis widths.
  std::vector<int> n_ell_of(terms.size(), 0);
  int n_ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has = std::count(terms[i].begin(), terms[i].end(), -1) > 0;
    const int letters = static_cast<int>(terms[i].size()) - (has ? 1 : 0);
    const int nd = static_cast<int>(operands[i].ndim());
    if ((!has && letters != nd) || (has && letters > nd)) {
      fail("Invalid number of subscripts " + std::to_string(letters) + " for input " + std::to_string(i) + " with " +
           std::to_string(nd) + " dimensions.");
    }
    n_ell_of[i] = has ? nd - letters : 0;
    n_ell = std::max(n_ell, n_ell_of[i]);
  }
  Spec sp;
  std::map<int, int>& size = sp.size;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    Labels labels = expand(terms[i], n_ell_of[i], n_ell);
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d], n = operands[i].shape()[d];
      auto it = size.find(l);
      if (it == size.end() || it->second == 1) {
        size[l] = n;
      } else if (n != 1 && n != it->second) {
        std::ostringstream m;
        m << "Cannot broadcast dimension " << d << " of input " << i << " with shape (";
        for (size_t k = 0; k < operands[i].ndim(); ++k) m << (k ? "," : "") << operands[i].shape()[k];
        m << ") to size " << it->second << ".";
        fail(m.str());
      }
      count[l]++;
    }
    sp.terms.push_back(std::move(labels));
  }
  Labels& out = sp.out;
  if (explicit_out) {
    Labels t = parse_term(rhs);
    if (std::count(t.begin(), t.end(), -1) && n_ell == 0 && std::none_of(terms.begin(), terms.end(), [](auto& x) {
          return std::count(x.begin(), x.end(), -1) > 0;
        })) {
      fail("Ellipsis in the output but not in any input.");
    }
    out = expand(t, n_ell, n_ell);
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::count(out.begin(), out.end(), out[i]) > 1) fail("Repeat indices not allowed in output.");
      if (!size.count(out[i])) fail(std::string("Output subscript '") + char(out[i]) + "' does not appear in the inputs.");
    }
  } else {
    for (int k = 0; k < n_ell; ++k) out.push_back(kEllipsis + k);
    for (auto& [l, c] : count) {
      if (l < kEllipsis && c == 1) out.push_back(l);
    }
  }
  return sp;
}


// ---- einsum_path: MLX's greedy contraction order (after NumPy and opt_einsum) ----
using LabelSet = std::set<int>;

size_t set_size(const LabelSet& t, const std::map<int, int>& size) {
  size_t n = 1;
  for (int l : t) n *= static_cast<size_t>(size.at(l));
  return n;
}

// The FLOP estimate of contracting `terms` operands over the labels `all`: one multiply per operand
// beyond the first, and one more when some label is summed out.
size_t flops(const LabelSet& all, bool inner, int terms, const std::map<int, int>& size) {
  return set_size(all, size) * static_cast<size_t>(std::max(1, terms - 1) + (inner ? 1 : 0));
}

struct PathResult {
  std::vector<std::vector<int>> path;
  size_t naive_cost = 0, cost = 0;
  size_t naive_scaling = 0, scaling = 0;
};

PathResult greedy_path(const Spec& sp) {
  const auto& size = sp.size;
  std::vector<LabelSet> in;
  for (auto& t : sp.terms) in.emplace_back(t.begin(), t.end());
  const LabelSet out(sp.out.begin(), sp.out.end());
  PathResult r;
  auto naive = [&](const std::vector<LabelSet>& terms) {
    LabelSet all;
    for (auto& t : terms) all.insert(t.begin(), t.end());
    const bool inner = std::any_of(all.begin(), all.end(), [&](int l) { return !out.count(l); });
    return std::pair<size_t, size_t>{flops(all, inner, static_cast<int>(terms.size()), size), all.size()};
  };
  std::tie(r.naive_cost, r.naive_scaling) = naive(in);
  if (in.size() <= 2) {
    std::vector<int> all(in.size());
    std::iota(all.begin(), all.end(), 0);
    r.path.push_back(all);
    r.cost = r.naive_cost;
    r.scaling = r.naive_scaling;
    return r;
  }
  // No intermediate may be larger than the largest operand or the output, nor the total cost exceed the
  // naive one.
  size_t memory_limit = set_size(out, size);
  for (auto& t : in) memory_limit = std::max(memory_limit, set_size(t, size));
  struct Candidate {
    int64_t removed;  // elements freed: both operands' sizes less the result's
    size_t cost;
    LabelSet result;
    size_t labels;
    int x, y;
  };
  std::vector<Candidate> cands;
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < static_cast<int>(in.size()); ++i) {
    for (int j = i + 1; j < static_cast<int>(in.size()); ++j) pairs.emplace_back(i, j);
  }
  auto consider = [&](int x, int y) {
    LabelSet both = in[x];
    both.insert(in[y].begin(), in[y].end());
    LabelSet result;
    for (int l : both) {
      bool later = out.count(l) > 0;
      for (int k = 0; k < static_cast<int>(in.size()) && !later; ++k) later = k != x && k != y && in[k].count(l);
      if (later) result.insert(l);
    }
    const size_t rsize = set_size(result, size);
    if (rsize > memory_limit) return;
    const size_t cost = flops(both, both.size() > result.size(), 2, size);
    if (r.cost + cost > r.naive_cost) return;
    const int64_t removed = static_cast<int64_t>(set_size(in[x], size) + set_size(in[y], size)) -
                            static_cast<int64_t>(rsize);
    cands.push_back({removed, cost, std::move(result), both.size(), x, y});
  };
  const size_t n_in = in.size();
  for (size_t step = 0; step + 1 < n_in; ++step) {
    for (auto [x, y] : pairs) {
      // Pairs sharing a label first; outer products only when nothing else is left. (The lambda reads
      // the set, not the structured binding: clang 14 cannot capture bindings.)
      const auto& in_y = in[y];
      if (std::any_of(in[x].begin(), in[x].end(), [&](int l) { return in_y.count(l) > 0; })) consider(x, y);
    }
    if (cands.empty()) {
      for (auto [x, y] : pairs) consider(x, y);
    }
    if (cands.empty()) {  // the rest in one naive step
      std::vector<int> all(in.size());
      std::iota(all.begin(), all.end(), 0);
      r.path.push_back(all);
      auto [c, sc] = naive(in);
      r.cost += c;
      r.scaling = std::max(r.scaling, sc);
      break;
    }
    // The most elements freed; on a tie the cheaper; on a tie again the first considered.
    auto best_it = std::min_element(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return a.removed > b.removed || (a.removed == b.removed && a.cost < b.cost);
    });
    Candidate best = *best_it;
    r.scaling = std::max(r.scaling, best.labels);
    r.cost += best.cost;
    r.path.push_back({best.x, best.y});
    in.erase(in.begin() + best.y);
    in.erase(in.begin() + best.x);
    in.push_back(best.result);
    // Candidates over untouched operands stay (renumbered); new pairs are the result with each other one.
    std::vector<Candidate> kept;
    for (auto& c : cands) {
      if (c.x == best.x || c.x == best.y || c.y == best.x || c.y == best.y) continue;
      c.x -= (c.x > best.x) + (c.x > best.y);
      c.y -= (c.y > best.x) + (c.y > best.y);
      kept.push_back(std::move(c));
    }
    cands = std::move(kept);
    pairs.clear();
    const int last = static_cast<int>(in.size()) - 1;
    for (int i = 0; i < last; ++i) pairs.emplace_back(i, last);
  }
  return r;
}

}  // namespace

std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands) {
  g_op = "einsum_path";
  Spec sp;
  try {
    sp = parse_spec(subscripts, operands);
  } catch (...) {
    g_op = "einsum";
    throw;
  }
  g_op = "einsum";
  PathResult r = greedy_path(sp);
  std::ostringstream os;
  os << "  Complete contraction:  " << subscripts << "\n"
     << "         Naive scaling:  " << r.naive_scaling << "\n"
     << "     Optimized scaling:  " << r.scaling << "\n"
     << "      Naive FLOP count:  " << r.naive_cost << "\n"
     << "  Optimized FLOP count:  " << r.cost << "\n";
  return {r.path, os.str()};
}

array einsum(const std::string& subscripts, const std::vector<array>& operands, StreamOrDevice s) {
  g_op = "einsum";
  Spec sp = parse_spec(subscripts, operands);
  const Labels& out = sp.out;
  const std::map<int, int>& size = sp.size;
  std::vector<Operand> ops;
  for (size_t i = 0; i < operands.size(); ++i) ops.push_back({operands[i], sp.terms[i]});
  // Labels still needed after operand i: the output's and those of operands > i.
  auto needed_after = [&](size_t i) {
    std::multiset<int> keep(out.begin(), out.end());
    for (size_t j = i + 1; j < ops.size(); ++j) keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    return keep;
  };
  for (auto& o : ops) take_diagonals(o, s);
  Operand acc = ops[0];
  {
    std::multiset<int> keep = needed_after(0);
    sum_unneeded(acc, keep, s);
  }
  for (size_t i = 1; i < ops.size(); ++i) {
    std::multiset<int> keep = needed_after(i);
    // y's own labels that neither the output, later operands nor acc need are summed first.
    std::multiset<int> keep_y = keep;
    keep_y.insert(acc.labels.begin(), acc.labels.end());
    Operand y = ops[i];
    sum_unneeded(y, keep_y, s);
    std::multiset<int> keep_x = keep;
    keep_x.insert(y.labels.begin(), y.labels.end());
    sum_unneeded(acc, keep_x, s);
    acc = contract(acc, y, keep, size, s);
  }
  {
    std::multiset<int> keep(out.begin(), out.end());
    sum_unneeded(acc, keep, s);
  }
  // Broadcast labels that stayed at size 1 in every operand they were seen in are already right; order
  // the axes as the output asks.
  std::vector<int> perm;
  Shape target;
  for (int l : out) {
    perm.push_back(static_cast<int>(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin()));
    target.push_back(size.at(l));
  }
  array r = transpose(acc.a, perm, s);
  return r.shape() == target ? r : broadcast_to(r, target, s);
}

}  // namespace kiln
