// TPHILOX, the compiler's uniform random numbers (pypto.uniform, pypto.normal): element g of the
// flattened result is word g % 4 of Philox-4x32-10 applied to the 128-bit counter
// (g / 4, offset) under the 64-bit key, as CANN PyPTO computes it; its low mantissa bits make a
// value in [0, 1): 23 bits for fp32 (the word's low 23 bits over 2^23), 10 for fp16 and 7 for
// bf16 (of its low 16 bits). A value depends only on (key, offset, g): any tiling, thread count
// or backend gives the same bits. Shared by generated kernels and the interpreter.
#pragma once

#include <cstdint>
#include <type_traits>

#include "pto/half.hpp"

namespace pypto_kernel {

// Ten rounds of Philox-4x32 on `ctr` (four words, low first) under `key` (two words).
inline void Philox4x32x10(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * ctr[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * ctr[2];
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    const uint32_t c1 = ctr[1], c3 = ctr[3];
    ctr[0] = hi1 ^ c1 ^ k0;
    ctr[1] = lo1;
    ctr[2] = hi0 ^ c3 ^ k1;
    ctr[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

template <class T>
inline T UniformFromWord(uint32_t w) {
  if constexpr (std::is_same_v<T, pto::half>)
    return T(float(w & 0x3FFu) * (1.0f / 1024));  // exact: m / 2^10
  else if constexpr (std::is_same_v<T, pto::bfloat16>)
    return T(float(w & 0x7Fu) * (1.0f / 128));
  else
    return T(float(w & 0x7FFFFFu) * (1.0f / 8388608));
}

// dst[0 .. n) = the values of flat elements start .. start + n.
template <class T>
inline void PhiloxUniform(char* dst, int64_t n, int64_t start, int64_t key, int64_t offset) {
  T* d = reinterpret_cast<T*>(dst);
  const uint64_t k = uint64_t(key), off = uint64_t(offset);
  uint32_t words[4];
  int64_t block = -1;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t g = start + i;
    if (g / 4 != block) {
      block = g / 4;
      const uint64_t b = uint64_t(block);
      words[0] = uint32_t(b);
      words[1] = uint32_t(b >> 32);
      words[2] = uint32_t(off);
      words[3] = uint32_t(off >> 32);
      Philox4x32x10(words, uint32_t(k), uint32_t(k >> 32));
    }
    d[i] = UniformFromWord<T>(words[g % 4]);
  }
}

}  // namespace pypto_kernel
