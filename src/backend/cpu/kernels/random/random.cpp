// CPU kernel of RandomBits (threefry-2x32, bit-exact with MLX).
//
// Layout of RandomBits' output, per key (as MLX's CPU backend): the key's share of the output is
// `bytes` bytes, read as W = ceil(bytes / 4) little-endian 32-bit words. With H = W / 2 and
// odd = W % 2, counter pair (c, c + H + odd) for c < H fills words c and c + H + odd with the two hash
// outputs, and when W is odd, word H takes the first output of counter pair (H, 0). The last word is
// cut to the bytes that remain.
#include <cstring>

#include "backend/cpu/loops.h"
#include "backend/cpu/kernels/families.h"

namespace kiln::cpu {

namespace {

inline uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): five
// groups of four add-rotate-xor rounds, with a key injection after each group.
inline std::pair<uint32_t, uint32_t> threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  for (uint32_t g = 0; g < 5; ++g) {
    for (int r : kRot[g % 2]) {
      x0 += x1;
      x1 = rotl(x1, r) ^ x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + g + 1;
  }
  return {x0, x1};
}

void random_bits_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  array& o = out[0];
  o.alloc();
  if (o.size() == 0) return;
  const array keys = cpu::contiguous_copy(in[0]);
  const uint32_t* kp = keys.data<uint32_t>();
  const size_t num_keys = keys.size() / 2;
  const size_t bytes = o.nbytes() / num_keys;
  const size_t words = (bytes + 3) / 4;
  const size_t half = words / 2;
  const size_t odd = words % 2;
  const size_t tasks = half + odd;  // hash calls per key
  char* base = static_cast<char*>(o.raw_data());
  auto put = [&](char* dst, size_t w, uint32_t v) {
    const size_t n = std::min<size_t>(4, bytes - 4 * w);
    std::memcpy(dst + 4 * w, &v, n);  // little-endian host: the low bytes come first
  };
  cpu::parallel_for(num_keys * tasks, cpu::kGrainMedium, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) {
      const size_t i = t / tasks, c = t % tasks;
      const uint32_t k0 = kp[2 * i], k1 = kp[2 * i + 1];
      char* dst = base + i * bytes;
      if (c < half) {
        auto [x, y] = threefry2x32(k0, k1, static_cast<uint32_t>(c), static_cast<uint32_t>(c + half + odd));
        put(dst, c, x);
        put(dst, c + half + odd, y);
      } else {
        put(dst, half, threefry2x32(k0, k1, static_cast<uint32_t>(half), 0).first);
      }
    }
  });
}

}  // namespace

void register_cpu_random(detail::KernelTable& table) { table.add("RandomBits", random_bits_cpu); }

}  // namespace kiln::cpu
