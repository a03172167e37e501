// TNOTIFY and TWAIT, the signals of distributed programs (pld.system.notify / wait, CANN's
// shmem_signal / shmem_wait_until): one int32 cell of a window, a symmetric-heap mapping every
// rank of the host shares (python/pypto/dist). A notify is an atomic store or add followed by a
// futex wake on the cell; a wait sleeps on the cell's futex (shared between processes, not
// FUTEX_PRIVATE) in short slices, so it costs no core while it waits, sees cancellation (the
// call's stop callback) within a slice, and gives up past its deadline with an error that names
// the cell, what it holds and what it waited for.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <string>

#include "pypto/kernel_abi.h"

namespace pypto_kernel {

/// The int32 cell of window `p` at element `coord` (one index per dim of the view).
inline int32_t* SignalCell(const PyptoParamView& p, int rank, const int64_t* coord) {
  int64_t off = 0;
  for (int d = 0; d < rank; ++d) off += coord[d] * p.stride[d];
  return reinterpret_cast<int32_t*>(p.data) + off;
}

inline void FutexWake(int32_t* cell) { syscall(SYS_futex, cell, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

/// op 0: *cell = value; op 1: *cell += value (atomically). Then wakes every waiter of the cell.
inline void Notify(int32_t* cell, int64_t value, int op) {
  if (op == 0)
    __atomic_store_n(cell, static_cast<int32_t>(value), __ATOMIC_SEQ_CST);
  else
    __atomic_fetch_add(cell, static_cast<int32_t>(value), __ATOMIC_SEQ_CST);
  FutexWake(cell);
}

/// cmp: pto::CmpMode order (EQ NE LT LE GT GE).
inline bool SignalHolds(int32_t v, int64_t expected, int cmp) {
  switch (cmp) {
    case 0:
      return v == expected;
    case 1:
      return v != expected;
    case 2:
      return v < expected;
    case 3:
      return v <= expected;
    case 4:
      return v > expected;
    default:
      return v >= expected;
  }
}

/// Seconds a wait may take: PYPTO_DIST_TIMEOUT (the rank launcher sets it from the program's
/// timeout option), 60 by default.
inline double SignalTimeoutSeconds() {
  static const double s = [] {
    const char* e = std::getenv("PYPTO_DIST_TIMEOUT");
    double v = e ? std::strtod(e, nullptr) : 0.0;
    return v > 0 ? v : 60.0;
  }();
  return s;
}

/// Sleeps until `*cell cmp expected` holds; with `consume`, then atomically subtracts `expected`
/// (a barrier's tokens, so the same cells serve the next barrier). Returns 1 when the call was
/// stopped while waiting (the caller returns), 0 when the signal holds; throws past the deadline.
inline int Wait(int32_t* cell, int64_t expected, int cmp, int consume, int (*stop)(void*), void* stop_ctx,
                const char* what, const char* where) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(SignalTimeoutSeconds());
  for (;;) {
    int32_t v = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
    if (SignalHolds(v, expected, cmp)) {
      if (consume) __atomic_fetch_sub(cell, static_cast<int32_t>(expected), __ATOMIC_SEQ_CST);
      return 0;
    }
    if (stop && stop(stop_ctx)) return 1;
    if (Clock::now() > deadline) {
      static const char* names[] = {"==", "!=", "<", "<=", ">", ">="};
      throw std::runtime_error(
          std::string(what) + ": timed out after " + std::to_string(static_cast<int>(SignalTimeoutSeconds())) +
          " s waiting for the signal cell to become " + names[cmp < 0 || cmp > 5 ? 5 : cmp] + " " +
          std::to_string(expected) + " (it holds " + std::to_string(v) + "): a peer rank never signalled it" +
          (where && *where ? std::string(" at ") + where : "") +
          " (raise the limit with the timeout option or PYPTO_DIST_TIMEOUT)");
    }
    // 20 ms slices: the stop callback and the deadline are seen promptly; a notify wakes at once.
    struct timespec slice = {0, 20 * 1000 * 1000};
    syscall(SYS_futex, cell, FUTEX_WAIT, v, &slice, nullptr, 0);
  }
}

}  // namespace pypto_kernel
