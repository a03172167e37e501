// Host memory for outputs, created tensors and workspaces. Large blocks are 2 MiB aligned and
// advised as transparent huge pages (a 64 MiB output then costs 32 page faults, not 16384),
// and freed blocks are kept in a small pool for the next call of the same shapes, so a warm
// call writes into memory that is already mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

namespace pypto {

/// Uninitialized memory of at least `bytes` (64-byte aligned; 2 MiB aligned when large).
void* AllocHost(size_t bytes);
/// Zeroed memory.
void* AllocHostZeroed(size_t bytes);
/// Returns a block from AllocHost; `bytes` must be the size it was allocated with.
void FreeHost(void* p, size_t bytes);
/// Frees the blocks kept for reuse (up to 1 GiB after calls of varying shapes); returns the
/// bytes released. pypto.release_memory() in Python.
size_t ReleaseHostPool();

/// What pypto's host memory holds, in bytes (block sizes as allocated: rounded up to 64 B, or
/// to 2 MiB for large blocks). pypto.memory_stats() in Python.
struct HostMemoryStats {
  size_t live = 0;       // handed out and not yet returned (outputs the caller holds included)
  size_t peak = 0;       // the most `live` reached since the last ResetHostPeak
  size_t pooled = 0;     // returned blocks kept for reuse
  size_t held = 0;       // live + pooled: what pypto keeps of the process's memory
  size_t peak_held = 0;  // the most `held` reached since the last ResetHostPeak
  uint64_t allocs = 0;   // blocks taken from the system
  uint64_t reuses = 0;   // blocks served from the pool
};
HostMemoryStats GetHostMemoryStats();
/// Starts a new peak: peak = live, peak_held = held. Returns the stats before the reset.
HostMemoryStats ResetHostPeak();
/// Counts `delta` bytes pypto allocates elsewhere on a call's behalf (the frontend's dense copy
/// of a strided argument) as live while they are: + when taken, - when dropped.
void CountHostBytes(int64_t delta);

/// std::bad_alloc with a message naming the size and the tensor (MemoryError in Python).
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  std::string msg_;
};

}  // namespace pypto
