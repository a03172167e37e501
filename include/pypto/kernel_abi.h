// The calling convention between the runtime and generated kernels (plain C layout, so a
// kernel compiled separately can be loaded with dlopen).
#pragma once

#include <stdint.h>

#define PYPTO_MAX_RANK 8

/// A global-memory window a kernel parameter addresses, in the kernel's rank.
typedef struct PyptoParamView {
  char* data;
  int64_t shape[PYPTO_MAX_RANK];
  int64_t stride[PYPTO_MAX_RANK];  // in elements; 0 along dims the value does not have
} PyptoParamView;

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
} PyptoKernelCall;

typedef void (*PyptoKernelFn)(const PyptoKernelCall*);
