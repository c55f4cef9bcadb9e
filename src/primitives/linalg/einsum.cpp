// einsum: a composition of diagonal, sum, transpose, reshape, broadcast_to and matmul (no primitive of
// its own, so exported graphs hold only table primitives). Operands are contracted pairwise from the
// left; a label is summed out as soon as no later operand and not the output needs it, and each pair
// becomes one batched matrix product (multiply-and-sum for integer operands, which matmul refuses).
#include <algorithm>
#include <map>
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

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument("[einsum] " + msg); }

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

}  // namespace

array einsum(const std::string& subscripts, const std::vector<array>& operands, StreamOrDevice s) {
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
  std::vector<Operand> ops;
  std::map<int, int> size;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    Operand o{operands[i], expand(terms[i], n_ell_of[i], n_ell)};
    for (size_t d = 0; d < o.labels.size(); ++d) {
      const int l = o.labels[d], n = o.a.shape()[d];
      auto it = size.find(l);
      if (it == size.end() || it->second == 1) {
        size[l] = n;
      } else if (n != 1 && n != it->second) {
        std::ostringstream m;
        m << "Cannot broadcast dimension " << d << " of input " << i << " with shape (";
        for (size_t k = 0; k < o.a.ndim(); ++k) m << (k ? "," : "") << o.a.shape()[k];
        m << ") to size " << it->second << ".";
        fail(m.str());
      }
      count[l]++;
    }
    ops.push_back(std::move(o));
  }
  Labels out;
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
