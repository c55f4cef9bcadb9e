// Per-primitive timing of evaluations: where a call to an imported (or lazily built) function spends
// its time. Off by default; when on, every step of every evaluation is timed with a steady clock (a
// few tens of nanoseconds per step) and added to a table keyed by the primitive's name. A fused
// element-wise group counts under "fused", with its member nodes counted in `nodes`. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct ProfileRow {
  std::string primitive;  // the primitive's name, or "fused" for a fused element-wise group
  int64_t calls = 0;      // kernel calls (groups, for "fused")
  int64_t nodes = 0;      // graph nodes they ran
  double seconds = 0;     // wall time spent in them
};

// Turn timing on or off (the table is kept). Returns the previous setting.
bool set_profiling(bool on);

// The table since the last reset, slowest first; `reset` clears it.
std::vector<ProfileRow> profile_report(bool reset = true);

}  // namespace kiln
