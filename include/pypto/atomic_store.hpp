// TSTORE with atomic add: a tile added into global memory element by element with atomic
// read-modify-writes, so several writers (the ranks of a host adding into one window: CANN's
// shmem_put with AtomicType.ADD) may add into the same elements at once. Floats add in fp32 and
// round once (a 16-bit element: fp32 inside, one rounding, as torch); integers wrap.
#pragma once

#include <cstdint>
#include <cstring>
#include <pto/pto.hpp>
#include <type_traits>

namespace pypto_kernel {

template <class T>
inline void AtomicAdd(T* p, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v) __atomic_store_n(p, true, __ATOMIC_RELAXED);  // a sum of bools is their or
  } else if constexpr (std::is_integral_v<T>) {
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    U* u = reinterpret_cast<U*>(p);
    U old = __atomic_load_n(u, __ATOMIC_RELAXED);
    for (;;) {
      T f;
      std::memcpy(&f, &old, sizeof(T));
      f += v;
      U next;
      std::memcpy(&next, &f, sizeof(T));
      if (__atomic_compare_exchange_n(u, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
    }
  } else {  // pto::half / pto::bfloat16: 16-bit patterns
    uint16_t* u = &p->bits;
    uint16_t old = __atomic_load_n(u, __ATOMIC_RELAXED);
    for (;;) {
      T cur;
      cur.bits = old;
      uint16_t next = T(static_cast<float>(cur) + static_cast<float>(v)).bits;
      if (__atomic_compare_exchange_n(u, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
    }
  }
}

}  // namespace pypto_kernel
