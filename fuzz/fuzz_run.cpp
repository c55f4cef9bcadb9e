// libFuzzer target: import arbitrary bytes (small limits) and run every stored function on inputs of
// its recorded signature. A crash, a sanitizer report, a leak, a hang, or outputs whose shapes or
// dtypes differ from what the validated file records (a wrong answer) are findings; a kiln exception
// is a fine outcome.
#include <stdexcept>

#include "format/validate.h"
#include "fuzz_common.h"

namespace {

// A call's inputs stay small too (the recorded input shapes are not limited by ImportOptions).
constexpr uint64_t kMaxInputBytes = 256 << 10;

void run_all(const kiln::ImportedFunction& f) {
  const auto& info = f.info();
  size_t runs = 0;
  for (auto& fn : info.functions) {
    if (++runs > 4) break;
    uint64_t bytes = 0;
    for (auto& s : fn.inputs) bytes += std::min<uint64_t>(kiln::format::spec_bytes(s), kMaxInputBytes + 1);
    if (bytes > kMaxInputBytes) continue;
    kiln::Args args;
    kiln::Kwargs kwargs;
    for (size_t i = 0; i < fn.inputs.size(); ++i) {
      auto a = kiln_fuzz::make_input(fn.inputs[i], i);
      if (i < fn.num_positional()) {
        args.push_back(a);
      } else {
        kwargs.emplace(fn.kwarg_keys[i - fn.num_positional()], a);
      }
    }
    try {
      auto outs = f(args, kwargs);
      kiln::eval(outs);
      if (outs.size() != fn.outputs.size()) __builtin_trap();
      for (size_t k = 0; k < outs.size(); ++k) {
        if (outs[k].dtype() != fn.outputs[k].dtype) __builtin_trap();
        if (!info.shapeless && outs[k].shape() != fn.outputs[k].shape) __builtin_trap();
        if (!outs[k].is_available()) __builtin_trap();
      }
    } catch (const std::invalid_argument&) {
    } catch (const std::runtime_error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run_all(kiln_fuzz::import_bytes(data, size, kiln_fuzz::fuzz_options()));
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
