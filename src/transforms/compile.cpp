// compile (kiln/compile.h): trace once per input signature with src/trace's tracer, simplify with
// its simplify(), fuse element-wise groups into Compiled nodes (compile_fuse.h), keep the record, and
// replay it with src/trace's replay, the machinery that runs imported functions. A compiled function is a closure over a shared cache, so copies of it share
// the traces.
#include "kiln/compile.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "trace/tape.h"
#include "transforms/compile_fuse.h"

namespace kiln {

namespace {

std::atomic<int> g_mode{std::getenv("MLX_DISABLE_COMPILE") ? static_cast<int>(CompileMode::disabled)
                                                           : static_cast<int>(CompileMode::enabled)};
std::atomic<size_t> g_traces{0};

// Per input: dtype code, then the rank, then (unless shapeless) the dimensions.
using Signature = std::vector<int64_t>;

Signature signature_of(const std::vector<array>& inputs, bool shapeless) {
  Signature sig;
  sig.push_back(static_cast<int64_t>(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const array& a = inputs[i];
    if (!a.valid()) {
      throw std::invalid_argument("[compile] Input " + std::to_string(i) +
                                  " is an empty (default-constructed) array.");
    }
    sig.push_back(a.dtype().code());
    sig.push_back(static_cast<int64_t>(a.ndim()));
    if (!shapeless) sig.insert(sig.end(), a.shape().begin(), a.shape().end());
  }
  return sig;
}

struct Trace {
  format::Record rec;
  detail::ConstantTable constants;  // holds the captured constants alive
};

struct Cache {
  CompiledFn fun;
  bool shapeless = false;
  std::mutex mu;
  std::map<std::pair<int, Signature>, std::shared_ptr<const Trace>> traces;  // keyed by (mode, signature)

  std::shared_ptr<const Trace> trace_for(const std::vector<array>& inputs, CompileMode mode) {
    auto key = std::make_pair(static_cast<int>(mode), signature_of(inputs, shapeless));
    std::lock_guard<std::mutex> lk(mu);
    if (auto it = traces.find(key); it != traces.end()) return it->second;
    auto t = std::make_shared<Trace>();
    detail::IdAllocator ids;
    ArgsKwargsFn wrapped = [this](const Args& args, const Kwargs&) {
      std::vector<array> outs = fun(args);
      for (size_t i = 0; i < outs.size(); ++i) {
        if (!outs[i].valid()) {
          throw std::invalid_argument("[compile] The function's output " + std::to_string(i) +
                                      " is an empty (default-constructed) array; a compiled function must "
                                      "return arrays.");
        }
      }
      return outs;
    };
    t->rec = detail::trace_function(wrapped, inputs, {}, shapeless, ids, t->constants);
    if (mode != CompileMode::no_simplify) detail::simplify(t->rec);
    if (mode != CompileMode::no_fuse) detail::fuse_compiled(t->rec, shapeless);
    g_traces.fetch_add(1, std::memory_order_relaxed);
    traces.emplace(std::move(key), t);
    return t;
  }
};

CompiledFn compiled(std::shared_ptr<Cache> cache) {
  return [cache](const std::vector<array>& inputs) -> std::vector<array> {
    auto mode = compile_mode();
    if (mode == CompileMode::disabled) return cache->fun(inputs);
    auto t = cache->trace_for(inputs, mode);
    return detail::replay(t->rec, inputs, cache->shapeless);
  };
}

[[noreturn]] void null_function() {
  throw std::invalid_argument("[compile] Expected a function to compile, found a null function.");
}

}  // namespace

CompiledFn compile(CompiledFn fun, bool shapeless) {
  if (compile_mode() == CompileMode::disabled) return fun;
  if (!fun) null_function();
  auto cache = std::make_shared<Cache>();
  cache->fun = std::move(fun);
  cache->shapeless = shapeless;
  return compiled(std::move(cache));
}

CompiledFn compile(std::vector<array> (*fun)(const std::vector<array>&), bool shapeless) {
  if (compile_mode() == CompileMode::disabled) return fun ? CompiledFn(fun) : CompiledFn();
  if (!fun) null_function();
  // One cache per (function, shapeless), for the life of the program, as MLX keys plain functions.
  static std::mutex mu;
  static std::map<std::pair<void*, bool>, std::shared_ptr<Cache>> caches;
  std::lock_guard<std::mutex> lk(mu);
  auto& cache = caches[{reinterpret_cast<void*>(fun), shapeless}];
  if (!cache) {
    cache = std::make_shared<Cache>();
    cache->fun = fun;
    cache->shapeless = shapeless;
  }
  return compiled(cache);
}

void disable_compile() { g_mode.store(static_cast<int>(CompileMode::disabled)); }
void enable_compile() { g_mode.store(static_cast<int>(CompileMode::enabled)); }
void set_compile_mode(CompileMode mode) { g_mode.store(static_cast<int>(mode)); }
CompileMode compile_mode() { return static_cast<CompileMode>(g_mode.load()); }

namespace detail {
size_t compile_trace_count() { return g_traces.load(); }
}  // namespace detail

}  // namespace kiln
