// libFuzzer target: parse and validate arbitrary bytes as an .mlxfn file, then build its FileInfo
// (what `kiln inspect` prints). Any outcome but a parse or a kiln exception is a finding.
#include <stdexcept>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = kiln_fuzz::import_bytes(data, size, kiln::ImportOptions{});
    const auto& info = f.info();
    size_t n = 0;
    for (auto& fn : info.functions) n += fn.tape.size() + fn.outputs.size();
    if (n == static_cast<size_t>(-1)) __builtin_trap();  // keep the walk
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
