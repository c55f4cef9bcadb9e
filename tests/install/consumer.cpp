// Uses the installed kiln as MLX code would: `namespace mx = kiln;`.
#include <kiln/kiln.h>

#include <iostream>

namespace mx = kiln;

int main() {
  auto a = mx::array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  auto b = mx::matmul(a, mx::transpose(a)) + mx::array(1.0f);
  float s = mx::sum(b).item<float>();
  std::cout << b << "\n";
  // [[1,2],[3,4]] @ [[1,3],[2,4]] = [[5,11],[11,25]]; +1 each -> sum 56.
  return s == 56.0f ? 0 : 1;
}
