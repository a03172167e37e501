// Executes one kernel at one grid point with the PTO reference instructions: the block-level
// interpreter. It is the semantics every faster backend is tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/block_graph.h"
#include "runtime/small_vec.h"

namespace pypto {

/// A kernel parameter bound to memory: the origin of the tensor window, its shape and strides
/// (in elements), seen through the param's dim_map as a tensor of the kernel's rank.
struct BoundParam {
  char* data = nullptr;
  DataType dtype = DataType::FP32;
  DimVec shape;    // kernel-rank shape (1 where dim_map is -1)
  DimVec strides;  // kernel-rank strides in elements (0 where dim_map is -1)
};

/// Runs `k` at grid point `coord` (one entry per grid dim). `env` holds the program's symbols
/// and is extended with the grid variables; `ub` is a scratch buffer of k.ub_bytes. `stop`
/// (if set) is asked before each step of the kernel's loops, as compiled kernels do (see
/// PyptoKernelCall::stop); the kernel returns early when it answers nonzero.
void InterpretKernel(const Kernel& k, const std::vector<BoundParam>& params, const std::vector<int64_t>& coord,
                     SymEnv& env, char* ub, int (*stop)(void*) = nullptr, void* stop_ctx = nullptr);

}  // namespace pypto
