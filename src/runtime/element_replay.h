// Native execution of element-level (pypto.asc) instructions. The Python interpreter turns each
// instruction it can into an ElemInstr and runs it here (one semantics for both paths), and
// records them; later launches with the same signature replay each block's recorded stream
// without Python, the blocks as jobs of the runtime's worker pool.
#pragma once

#include <cstdint>
#include <vector>

namespace pypto::rt {

/// The instructions. Elementwise ops compute 16-bit floats in fp32 and round once (torch's
/// convention); integers wrap. Scalar* ops work on the block's scalar registers (doubles): what
/// `get_value` read, and arithmetic on it, used later as an instruction's scalar operand.
enum class ElemOp : int64_t {
  Copy,  // dst[i] = src0[i]
  Dup,   // dst[i] = scalar
  // binary: dst[i] = f(src0[i], src1[i])
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  And,
  Or,
  AddRelu,
  // tile-scalar: dst[i] = f(src0[i], scalar)
  AddS,
  MulS,
  MaxS,
  MinS,
  LeakyRelu,
  // unary
  Abs,
  Relu,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Exp,
  Ln,
  Not,
  Cast,  // src_type -> type with the RoundMode in `aux`
  // reductions over groups of `aux` elements of src0, one value per group at dst (flags & 1:
  // the index of the first max / min follows the value, as raw bits)
  ReduceSum,
  ReduceMax,
  ReduceMin,
  // dst (bytes) = one bit per element (bit k of byte k / 8) of src0 <mode aux> src1 (or the scalar
  // when flags & 1); modes: 0 LT, 1 GT, 2 EQ, 3 LE, 4 GE, 5 NE
  Compare,
  // dst[i] = bit i of the mask at src0 ? src1[i] : b[i], b at memory flags - 1, byte offset aux
  // (the scalar when flags == 0)
  Select,
  ScalarLoad,   // reg[aux] = src0[0]
  ScalarStore,  // dst[0] = the scalar operand
  ScalarArith,  // reg[aux] = a (flags: 0 +, 1 -, 2 *, 3 /, 4 negate a) b; a = reg[src0_off] or the
                // scalar when src0_off < 0, b likewise with src1_off
};
enum class ElemType : int64_t { F32, F16, BF16, I32, I8, U8, I16, U16, U32, I64, U64, F64 };

/// One instruction. Memories 0..n-1 are the launch's global arrays, n is the block's UB; offsets
/// are in bytes; `count` in elements. An operand's `*_idx` >= 0 names an index list (element
/// positions from its offset, `count` of them: the repeat form, strided copies) instead of the
/// first `count` elements.
struct ElemInstr {
  ElemOp op;
  ElemType type, src_type;
  int64_t dst_mem, dst_off, src0_mem, src0_off, src1_mem, src1_off, count;
  int64_t dst_idx, src0_idx, src1_idx;
  int64_t sreg;  // >= 0: the scalar operand is this register, not `scalar`
  int64_t aux, flags;
  double scalar;
};
inline constexpr int kElemInstrFields = 16;  // the int64 fields above, in order (op first)

/// A block's recorded stream: its instructions and the index lists they name.
struct ElemStream {
  std::vector<ElemInstr> instrs;
  std::vector<std::vector<int64_t>> index_lists;
};

/// Runs `instrs` on `mem` (global arrays, then the UB) with scalar registers `regs`.
void RunElementStream(const ElemStream& stream, char* const* mem, std::vector<double>& regs);

/// Runs every block's stream on the runtime's worker pool (up to `workers` at once), each block
/// with its own UB of `ub_bytes` (filled with 0xA5, as the interpreter's). The streams were
/// checked (bounds, alignment) when they were recorded.
void RunElementBlocks(const std::vector<ElemStream>& blocks, const std::vector<char*>& gm, int64_t ub_bytes,
                      int workers);

}  // namespace pypto::rt
