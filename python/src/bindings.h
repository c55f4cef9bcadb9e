// kiln Python bindings: one init function per binding file, called in order by module.cpp. A new family
// of bindings (the function transforms come next: grad, vjp, jvp, vmap, compile) adds its file and one
// line here and in module.cpp.
#pragma once

#include <nanobind/nanobind.h>

#include <kiln/kiln.h>

namespace kiln::py {
namespace nb = nanobind;
using namespace nb::literals;

void init_dtypes(nb::module_& m);                  // dtype.cpp: Dtype, DtypeCategory, finfo, iinfo
void init_devices(nb::module_& m);                 // device.cpp: Device, Stream, cpu/gpu, default_*
void init_array(nb::module_& m);                   // array.cpp: the array class, conversions, operators
void init_indexing(nb::class_<array>& cls);        // indexing.cpp: __getitem__, __setitem__, .at
void init_array_methods(nb::class_<array>& cls);   // array_methods.cpp: a.sum(), a.reshape(), ...
void init_ops(nb::module_& m);                     // ops_*.cpp: kiln.add, kiln.sum, ... (MLX's names)
void init_random(nb::module_& m);                  // random.cpp: kiln.random
void init_linalg(nb::module_& m);                  // linalg.cpp: kiln.linalg
void init_fft(nb::module_& m);                     // fft.cpp: kiln.fft
void init_fast(nb::module_& m);                    // fast.cpp: kiln.fast
void init_export(nb::module_& m);                  // export.cpp: export_function, import_function, ...
void init_io(nb::module_& m);                      // io.cpp: save, load, savez, save_safetensors, ...
void init_memory(nb::module_& m);                  // memory.cpp: get_active_memory, set_cache_limit, ...
void init_transforms(nb::module_& m);              // transforms.cpp: flat vjp, jvp, vmap, ... (_transforms.py)

}  // namespace kiln::py
