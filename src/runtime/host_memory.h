// Host memory for outputs, created tensors and workspaces. Large blocks are 2 MiB aligned and
// advised as transparent huge pages (a 64 MiB output then costs 32 page faults, not 16384),
// and freed blocks are kept in a small pool for the next call of the same shapes, so a warm
// call writes into memory that is already mapped.
#pragma once

#include <cstddef>

namespace pypto {

/// Uninitialized memory of at least `bytes` (64-byte aligned; 2 MiB aligned when large).
void* AllocHost(size_t bytes);
/// Zeroed memory.
void* AllocHostZeroed(size_t bytes);
/// Returns a block from AllocHost; `bytes` must be the size it was allocated with.
void FreeHost(void* p, size_t bytes);

}  // namespace pypto
