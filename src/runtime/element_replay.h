// Native execution of element-level (pypto.asc) kernels: each block's instruction stream, as the
// Python interpreter recorded it once, replayed on the CPU without Python (blocks in parallel).
#pragma once

#include <cstdint>
#include <vector>

namespace pypto::rt {

/// The instructions a recorded stream may hold: data moves and exactly rounded elementwise ops
/// (what numpy computes bit for bit; exp, log, ... stay interpreted).
enum class ElemOp : int64_t { Copy, Dup, Add, Sub, Mul, Div, Max, Min, AddS, MulS, MaxS, MinS, Abs, Relu, Sqrt };
enum class ElemType : int64_t { F32, F16, I32 };

/// One instruction. Memories 0..n-1 are the launch's global arrays, n is the block's UB; offsets
/// are in bytes; `count` in elements of `type` (bytes for Copy).
struct ElemInstr {
  ElemOp op;
  ElemType type;
  int64_t dst_mem, dst_off, src0_mem, src0_off, src1_mem, src1_off, count;
  double scalar;
};

/// Runs every block's stream, up to `workers` blocks at once, each with its own `ub_bytes` of UB.
/// The streams were checked (bounds, alignment) when they were recorded.
void RunElementBlocks(const std::vector<std::vector<ElemInstr>>& blocks, const std::vector<char*>& gm, int64_t ub_bytes,
                      int workers);

}  // namespace pypto::rt
