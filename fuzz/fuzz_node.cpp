// libFuzzer target: one primitive node (registry row, input specs, state bytes), its shape rule and
// its CPU kernel; reaches extreme state values much faster than mutating whole files.
// A crash, a sanitizer report, a leak, a hang, an exception that is not kiln's error, or a problem
// reported by the check (fuzz_common.h) is a finding.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!kiln_fuzz::check_node(data, size).empty()) __builtin_trap();
  return 0;
}
