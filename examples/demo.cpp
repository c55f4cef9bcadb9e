// kiln demo: a small MLP with embedded weights is traced and exported to an .mlxfn file, then imported
// and run (in a separate process: `kiln_demo run`). Both print their outputs so they can be compared.
//
//   kiln_demo export FILE DIR   builds the model, runs it on DIR/x.npy (written here), exports FILE,
//                               writes the in-process result to DIR/expected.npy
//   kiln_demo run FILE DIR      imports FILE, runs it on DIR/x.npy, compares with DIR/expected.npy
#include <iostream>
#include <string>

#include "kiln/kiln.h"

namespace mx = kiln;
using kiln::operator<<;

namespace {

// Deterministic weights: a smooth pattern, evaluated so they are embedded in the file as constants.
mx::array weights(int rows, int cols, float phase) {
  auto w = mx::sin(mx::reshape(mx::arange(0, rows * cols, mx::float32), {rows, cols}) * 0.37f + phase) * 0.5f;
  mx::eval(w);
  return w;
}

struct Mlp {
  mx::array w1 = weights(8, 32, 0.1f), b1 = weights(1, 32, 0.7f);
  mx::array w2 = weights(32, 32, 1.3f), b2 = weights(1, 32, 2.1f);
  mx::array w3 = weights(32, 4, 2.9f), b3 = weights(1, 4, 3.7f);
  std::vector<mx::array> operator()(const mx::Args& args) const {
    auto h = mx::maximum(mx::matmul(args[0], w1) + b1, mx::array(0.0f));  // ReLU
    h = mx::maximum(mx::matmul(h, w2) + b2, mx::array(0.0f));
    auto logits = mx::matmul(h, w3) + b3;
    return {logits, mx::softmax(logits, -1)};
  }
};

int usage() {
  std::cerr << "usage: kiln_demo export FILE DIR | kiln_demo run FILE DIR\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return usage();
  std::string cmd = argv[1], file = argv[2], dir = argv[3];
  try {
    if (cmd == "export") {
      Mlp model;
      auto x = mx::reshape(mx::cos(mx::arange(0, 3 * 8, mx::float32) * 0.5f), {3, 8});
      mx::eval(x);
      mx::save(dir + "/x.npy", x);
      auto fn = [&model](const mx::Args& a) { return model(a); };
      auto eager = fn({x});
      mx::eval(eager);
      mx::export_function(file, fn, {x});
      mx::save(dir + "/expected.npy", eager[1]);
      std::cout << "[export] traced the MLP (8 -> 32 -> 32 -> 4, ReLU, softmax) into " << file << "\n";
      std::cout << "[export] in-process logits:\n" << eager[0] << "\n";
      std::cout << "[export] in-process probabilities:\n" << eager[1] << "\n";
      return 0;
    }
    if (cmd == "run") {
      auto fn = mx::import_function(file);
      auto x = mx::load(dir + "/x.npy");
      auto out = fn({x});
      mx::eval(out);
      std::cout << "[run] imported " << file << " and called it on x " << x.shape() << "\n";
      std::cout << "[run] logits:\n" << out[0] << "\n";
      std::cout << "[run] probabilities:\n" << out[1] << "\n";
      auto expected = mx::load(dir + "/expected.npy");
      bool same = mx::allclose(out[1], expected, 1e-6, 1e-7).item<bool>();
      std::cout << "[run] matches the exporting process: " << (same ? "yes" : "NO") << "\n";
      return same ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "kiln_demo: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
