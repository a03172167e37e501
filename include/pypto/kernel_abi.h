// The calling convention between the runtime and generated kernels (plain C layout, so a
// kernel compiled separately can be loaded with dlopen).
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PYPTO_MAX_RANK 8

/// A global-memory window a kernel parameter addresses, in the kernel's rank.
typedef struct PyptoParamView {
  char* data;
  int64_t shape[PYPTO_MAX_RANK];
  int64_t stride[PYPTO_MAX_RANK];  // in elements; 0 along dims the value does not have
} PyptoParamView;

/// Memory the tasks of one launch share: the first kernel that needs it sets `table` (compare
/// and swap) and `release`; the runtime calls release(table) once, when the launch's last task
/// has finished (or the call ended). The cube kernels keep there the Left / Right packings that
/// several grid points read (pypto_kernel::SharedPacks). alloc / free (may be null) are the
/// runtime's host memory: blocks kept mapped from call to call (no page faults when warm).
typedef struct PyptoShared {
  void* table;
  void (*release)(void* table);
  void* (*alloc)(size_t bytes);
  void (*free)(void* p, size_t bytes);
} PyptoShared;

/// One task: grid points [first, first + count) of one launch.
typedef struct PyptoKernelCall {
  const int64_t* sym;             // values of the kernel's program symbols (loop indices, dims)
  const PyptoParamView* params;   // one per kernel parameter
  const int64_t* grid;            // tiles along each grid dim
  int64_t first, count;
  char* ub;                       // this worker's on-chip buffer stand-in (64-byte aligned)
  // Cancellation (may be null): the kernel calls stop(stop_ctx) before each grid point and each
  // step of its outer loops, and returns at once when it answers nonzero (the call was cancelled
  // or failed; its outputs are then undefined and the call raises). So Ctrl-C and timeouts also
  // end one long task, not only the wait between tasks.
  int (*stop)(void* stop_ctx);
  void* stop_ctx;
  PyptoShared* shared;  // this launch's (may be null)
} PyptoKernelCall;

typedef void (*PyptoKernelFn)(const PyptoKernelCall*);
