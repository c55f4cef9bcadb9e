// kiln's memory functions (kiln/memory.h) with mlx.core's Python names: what kiln's array buffers
// use now, at their peak and in the cache of freed buffers, and the limits that bound them.
#include "bindings.h"

namespace kiln::py {

void init_memory(nb::module_& m) {
  m.def("get_active_memory", &kiln::get_active_memory,
        "Bytes of array buffers in use now (their size classes; the cache not included).");
  m.def("get_peak_memory", &kiln::get_peak_memory,
        "The most active memory seen since the program started or the last reset_peak_memory().");
  m.def("reset_peak_memory", &kiln::reset_peak_memory, "Set the peak memory to zero.");
  m.def("get_cache_memory", &kiln::get_cache_memory, "Bytes held in the cache of freed buffers.");
  m.def("set_memory_limit", &kiln::set_memory_limit, "limit"_a,
        "Set the memory limit (a guideline: cached buffers are released before going over it); returns the "
        "previous limit.");
  m.def("set_cache_limit", &kiln::set_cache_limit, "limit"_a,
        "Set the most bytes the cache keeps (0 disables it); returns the previous limit.");
  m.def("clear_cache", &kiln::clear_cache, "Return every cached buffer to the system.");
  m.def("set_wired_limit", &kiln::set_wired_limit, "limit"_a,
        "MLX's wired (resident) memory limit, a Metal setting: no effect on kiln's CPUs; returns 0.");
}

}  // namespace kiln::py
