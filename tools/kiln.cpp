// The kiln command-line tool.
#include <iostream>
#include <string>

#include "kiln/kiln.h"

namespace {
const char* kUsage =
    "usage: kiln <command> [options]\n"
    "\n"
    "commands:\n"
    "  version     print kiln's version\n"
    "\n"
    "Run 'kiln <command> --help' for a command's options.\n";
}

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage;
    return argc < 2 ? 1 : 0;
  }
  std::string cmd = argv[1];
  if (cmd == "version") {
    std::cout << "kiln 0.1.0 (writes the MLX 0.30.1 .mlxfn layout)\n";
    return 0;
  }
  std::cerr << "kiln: unknown command '" << cmd << "' (expected one of: version); see kiln --help\n";
  return 2;
}
