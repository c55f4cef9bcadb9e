// libFuzzer target: parse and validate arbitrary bytes as an .mlxfn file, then build its FileInfo.
// A crash, a sanitizer report, a leak, a hang, an exception that is not kiln's error, or a problem
// reported by the check (fuzz_common.h) is a finding.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!kiln_fuzz::check_reader(data, size).empty()) __builtin_trap();
  return 0;
}
