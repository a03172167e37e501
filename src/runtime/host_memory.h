// Host memory for outputs, created tensors and workspaces. Large blocks are 2 MiB aligned and
// advised as transparent huge pages (a 64 MiB output then costs 32 page faults, not 16384),
// and freed blocks are kept in a small pool for the next call of the same shapes, so a warm
// call writes into memory that is already mapped.
#pragma once

#include <cstddef>
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

/// std::bad_alloc with a message naming the size and the tensor (MemoryError in Python).
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  std::string msg_;
};

}  // namespace pypto
