// Shared by the autodiff tests: the derivative-check cases (one or more per differentiable row, keyed by
// the row's name) and the finite-difference check itself.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <kiln/kiln.h>

namespace autodiff_test {

namespace mx = kiln;
using Fn = std::function<std::vector<mx::array>(const std::vector<mx::array>&)>;

struct Case {
  std::string primitive;            // the row the case differentiates (it must appear in f's graph)
  std::string label;                // what the case is, for messages
  Fn f;                             // of the differentiable inputs only (constants are captured)
  std::vector<mx::array> inputs;    // float64 where the rows support it on the CPU, else float32
  double tol = 1e-6;                // relative tolerance of the check
};

// Every case (test_autodiff_cases.cpp).
const std::vector<Case>& cases();
// Rows whose derivative is checked by a dedicated test instead of a finite difference (why).
const std::vector<std::pair<std::string, std::string>>& dedicated();
// The rows of the lazy graph of `outs` (every node's row name).
std::vector<std::string> rows_in(const std::vector<mx::array>& outs);

}  // namespace autodiff_test
