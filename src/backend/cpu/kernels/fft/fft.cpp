// CPU kernel of FFT: FFTW (single precision) through its guru interface, with a cache of plans. The
// kernel checks that input and output agree (src/primitives/fft/fft.h) before transforming.
#include <fftw3.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "backend/cpu/loops.h"
#include "backend/cpu/kernels/families.h"
#include "primitives/fft/fft.h"

namespace kiln::cpu {

namespace {

using namespace fft_detail;

// ---- FFTW glue ----

enum class Kind { C2CForward, C2CBackward, R2C, C2R };
using IoDims = std::vector<fftwf_iodim64>;

// FFTW's planner (and plan destruction) is not thread-safe; execution is, also of one plan by several
// threads on different arrays. Recursive, because clearing the cache runs plan deleters.
std::recursive_mutex& planner_mutex() {
  static std::recursive_mutex m;
  return m;
}

using Plan = std::shared_ptr<fftwf_plan_s>;

// A plan is reusable on other arrays with the same layout and the same SIMD alignment (the new-array
// execute functions), so plans are cached by that. Planning costs more than a small transform.
struct PlanKey {
  Kind kind;
  std::vector<ptrdiff_t> layout;  // (n, is, os) of each transform dim, then of each batch dim
  size_t rank;
  bool in_place;
  int align_in, align_out;
  auto operator<=>(const PlanKey&) const = default;
};

fftwf_plan make_plan(Kind k, const IoDims& d, const IoDims& h, void* in, void* out) {
  const int r = static_cast<int>(d.size()), hr = static_cast<int>(h.size());
  auto* cin = static_cast<fftwf_complex*>(in);
  auto* cout = static_cast<fftwf_complex*>(out);
  switch (k) {
    case Kind::C2CForward:
      return fftwf_plan_guru64_dft(r, d.data(), hr, h.data(), cin, cout, FFTW_FORWARD, FFTW_ESTIMATE);
    case Kind::C2CBackward:
      return fftwf_plan_guru64_dft(r, d.data(), hr, h.data(), cin, cout, FFTW_BACKWARD, FFTW_ESTIMATE);
    case Kind::R2C:
      return fftwf_plan_guru64_dft_r2c(r, d.data(), hr, h.data(), static_cast<float*>(in), cout, FFTW_ESTIMATE);
    case Kind::C2R:
      return fftwf_plan_guru64_dft_c2r(r, d.data(), hr, h.data(), cin, static_cast<float*>(out),
                                       FFTW_ESTIMATE | FFTW_DESTROY_INPUT);
  }
  return nullptr;
}

Plan get_plan(Kind k, const IoDims& d, const IoDims& h, void* in, void* out) {
  PlanKey key{k, {}, d.size(), in == out, 0, 0};
  for (const IoDims* v : {&d, &h}) {
    for (auto& x : *v) key.layout.insert(key.layout.end(), {x.n, x.is, x.os});
  }
  key.align_in = fftwf_alignment_of(static_cast<float*>(in));
  key.align_out = fftwf_alignment_of(static_cast<float*>(out));
  static std::map<PlanKey, Plan> cache;
  std::lock_guard<std::recursive_mutex> lock(planner_mutex());
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  fftwf_plan p = make_plan(k, d, h, in, out);
  if (!p) throw std::runtime_error("[FFT] FFTW could not plan the transform.");
  Plan plan(p, [](fftwf_plan q) {
    std::lock_guard<std::recursive_mutex> l(planner_mutex());
    fftwf_destroy_plan(q);
  });
  if (cache.size() >= 256) cache.clear();  // plans in use stay alive through their shared_ptr
  cache.emplace(std::move(key), plan);
  return plan;
}

void execute(Kind k, const Plan& p, void* in, void* out) {
  auto* cin = static_cast<fftwf_complex*>(in);
  auto* cout = static_cast<fftwf_complex*>(out);
  switch (k) {
    case Kind::C2CForward:
    case Kind::C2CBackward: fftwf_execute_dft(p.get(), cin, cout); break;
    case Kind::R2C: fftwf_execute_dft_r2c(p.get(), static_cast<float*>(in), cout); break;
    case Kind::C2R: fftwf_execute_dft_c2r(p.get(), cin, static_cast<float*>(out)); break;
  }
}

// Runs the transform in chunks of its largest batch axis, so large batches use several threads. All
// plans are obtained before any thread starts, so a planner failure throws here, not in parallel_for.
void run(Kind k, const IoDims& dims, const IoDims& howmany, size_t work, void* in, void* out) {
  const size_t in_size = k == Kind::R2C ? sizeof(float) : sizeof(fftwf_complex);
  const size_t out_size = k == Kind::C2R ? sizeof(float) : sizeof(fftwf_complex);
  int split = -1;
  ptrdiff_t chunks = 1;
  if (!howmany.empty() && work >= (size_t(1) << 15)) {
    split = static_cast<int>(std::max_element(howmany.begin(), howmany.end(),
                                              [](auto& x, auto& y) { return x.n < y.n; }) - howmany.begin());
    chunks = std::min<ptrdiff_t>(cpu::num_threads(), howmany[split].n);
  }
  struct Chunk {
    Plan plan;
    void* in;
    void* out;
  };
  std::vector<Chunk> parts;
  for (ptrdiff_t j = 0; j < chunks; ++j) {
    IoDims h = howmany;
    char* pi = static_cast<char*>(in);
    char* po = static_cast<char*>(out);
    if (split >= 0) {
      const ptrdiff_t n = howmany[split].n, b = n * j / chunks, e = n * (j + 1) / chunks;
      h[split].n = e - b;
      pi += b * howmany[split].is * static_cast<ptrdiff_t>(in_size);
      po += b * howmany[split].os * static_cast<ptrdiff_t>(out_size);
    }
    parts.push_back({get_plan(k, dims, h, pi, po), pi, po});
  }
  cpu::parallel_for(parts.size(), 1, [&](size_t b, size_t e) {
    for (size_t j = b; j < e; ++j) execute(k, parts[j].plan, parts[j].in, parts[j].out);
  });
}

// Splits the axes of `shape` into transform dims (in `axes` order) and batch dims, with the given
// element strides of input and output.
void iodims(const Shape& shape, const Strides& is, const Strides& os, const std::vector<uint64_t>& axes,
            IoDims& dims, IoDims& howmany) {
  std::vector<bool> is_axis(shape.size(), false);
  for (uint64_t a : axes) {
    is_axis[a] = true;
    dims.push_back({shape[a], static_cast<ptrdiff_t>(is[a]), static_cast<ptrdiff_t>(os[a])});
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!is_axis[d]) howmany.push_back({shape[d], static_cast<ptrdiff_t>(is[d]), static_cast<ptrdiff_t>(os[d])});
  }
}

void* data_ptr(const array& a) { return static_cast<char*>(a.buffer()->ptr) + a.offset() * a.itemsize(); }

void scale_output(array& out, float scale) {
  const size_t n = out.size() * (out.dtype() == complex64 ? 2 : 1);
  float* p = static_cast<float*>(out.buffer()->ptr);
  cpu::parallel_for(n, cpu::kGrainCheap, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) p[i] *= scale;
  });
}

void fft_cpu(const Node& node, const std::vector<array>& inputs, std::vector<array>& outputs) {
  const State& st = node.state;
  check_fft(st, {inputs[0].shape(), inputs[0].dtype()}, {outputs[0].shape(), outputs[0].dtype()});
  const auto& axes = st.get<std::vector<uint64_t>>(kAxes);
  const bool inverse = st.b(kInverse), real = st.b(kReal);
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0 || inputs[0].size() == 0) return;
  const size_t work = out.size();

  if (!real || !inverse) {
    // c2c, or r2c (FFTW halves the last listed dimension, as MLX halves the last listed axis).
    array in = cpu::contiguous_copy(inputs[0]);
    IoDims dims, howmany;
    iodims(in.shape(), in.strides(), out.strides(), axes, dims, howmany);
    const Kind k = real ? Kind::R2C : inverse ? Kind::C2CBackward : Kind::C2CForward;
    run(k, dims, howmany, work, data_ptr(in), data_ptr(out));
  } else {
    // irfft: complex transforms over the leading axes, then a 1-D complex-to-real transform over the last
    // one (whose DC and Nyquist imaginary parts are ignored). This is the order MLX's pocketfft uses, so
    // non-Hermitian inputs give the same values. FFTW destroys a c2r input: work on a private copy.
    array scratch(inputs[0].shape(), complex64);
    cpu::copy_to_contiguous(inputs[0], scratch);
    void* buf = data_ptr(scratch);
    if (axes.size() > 1) {
      std::vector<uint64_t> lead(axes.begin(), axes.end() - 1);
      IoDims dims, howmany;
      iodims(scratch.shape(), scratch.strides(), scratch.strides(), lead, dims, howmany);
      run(Kind::C2CBackward, dims, howmany, work, buf, buf);
    }
    IoDims dims, howmany;
    iodims(out.shape(), scratch.strides(), out.strides(), {axes.back()}, dims, howmany);
    run(Kind::C2R, dims, howmany, work, buf, data_ptr(out));
  }

  if (inverse) {
    const Shape& logical = real ? out.shape() : inputs[0].shape();
    double n = 1;
    for (uint64_t a : axes) n *= logical[a];
    scale_output(out, static_cast<float>(1.0 / n));
  }
}

}  // namespace

void register_cpu_fft(detail::KernelTable& table) { table.add("FFT", fft_cpu); }

}  // namespace kiln::cpu
