// The one place where tensor-level ops are declared: name, kind, legal dtypes, shape
// inference, and the PTO instructions they lower to. The interpreter's semantics are those
// PTO instructions (see runtime/kernel_interpreter.cpp), so adding an op means one row here plus,
// for a new instruction, one dispatch entry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/opcode.h"
#include "ir/tensor_graph.h"

namespace pypto {

enum class OpKind : uint8_t {
  Unary,         // y = f(x)
  Binary,        // z = f(x, y) with broadcasting
  BinaryScalar,  // z = f(x, s), s a Python scalar (attr "scalar")
  Reduce,        // y = reduce(x, dim, keepdim)
  Cast,          // y = cast(x, dtype)
  Assemble,      // dst[offsets...] = src
  Matmul,        // c = a @ b on the cube unit (attrs a_trans, b_trans, out_dtype)
  Compare,       // bool = x cmp y, or x cmp scalar (attr "scalar"), with broadcasting
  Select,        // where(cond, a, b): a and b tensors or scalars (attrs "a_scalar", "b_scalar")
  ArgReduce,     // int32 index of the first max / min along attr "dim" (attr "keepdim")
  Scan,          // inclusive prefix sum / product along attr "dim"
  Permute,       // y[i0, i1, ...] = x[i_perm...]: y dim d is x dim perm[d] (attr "perm")
  Expand,        // x broadcast to attr "shape" and materialized (expand_clone; clone when equal)
  TopK,          // the attr "k" largest / smallest (attr "largest") along the last dim, in order: the
                 // values, or their int32 indices (attr "indices")
  Gather,        // y = x[..., index[...], ...] along attr "dim" (torch.gather); y has index's shape
  Fill,          // no inputs: attr "shape" filled with attr "value" (attr "dtype")
  Iota,          // no inputs: 0, 1, ..., n - 1 along attr "dim" of attr "shape" (other dims 1), integer
  Random,        // no inputs: attr "shape" (1-D) of uniform values in [0, 1) (attr "dtype", a float) from the
                 // Philox generator under attrs "key" and "offset" (uint64 bit patterns)
  Scatter,       // dst[..., index[p], ...] (=|+=|*=) src[p] along attr "dim" (attr "reduce" 0|1|2); inputs
                 // src, index (src's shape), dst; writes dst in place
  Signal,        // int32 cells of a window (its only input; each cell on its own), in program order with every other
                 // launch: notify (attrs "value", "op": NotifyOp) or wait (attrs "expected", "cmp": CmpMode,
                 // "consume" 0|1); the cell counts as written
};

/// Ops that write their last input in place and have no result (assemble, scatter).
inline bool WritesInPlace(OpKind k) { return k == OpKind::Assemble || k == OpKind::Scatter || k == OpKind::Signal; }

/// Ops whose tile spans the whole of their axis (attr "dim"): an index or a running value
/// depends on every element before it along the axis.
inline bool WholeAxis(OpKind k) { return k == OpKind::ArgReduce || k == OpKind::Scan || k == OpKind::TopK; }

struct OpDef {
  std::string name;
  OpKind kind;
  bool float_only = false;
  std::optional<Opcode> pto;             // instruction on equal-shaped tiles (TADD, TEXP, TROWMAX, TCVT)
  std::optional<Opcode> pto_scalar;      // tile-scalar form (TADDS)
  std::optional<Opcode> pto_row_expand;  // fused broadcast of an R x 1 operand (TROWEXPANDADD)
  std::optional<Opcode> pto_col_expand;  // fused broadcast of a 1 x C operand (TCOLEXPANDADD)
  std::optional<Opcode> pto_col_reduce;  // reduction over a leading axis (TCOLMAX)
  std::optional<Opcode> combine;         // binary instruction that merges two partial reductions
  std::string doc;
  bool commutative = false;   // f(x, y) == f(y, x): a broadcast operand may come first
  CmpMode cmp = CmpMode::EQ;  // Compare: the comparison
};

/// Looks up an op; an unknown name is an internal error (the frontend only emits known ops).
const OpDef& GetOpDef(const std::string& name);
bool HasOpDef(const std::string& name);
const std::vector<OpDef>& AllOpDefs();

/// Broadcast two shapes, numpy style (aligned right; equal dims or 1). Throws UserError.
std::vector<Expr> BroadcastShapes(const std::vector<Expr>& a, const std::vector<Expr>& b, const std::string& op,
                                  const SourceLoc& loc);

/// Normalizes a possibly negative axis; throws UserError when out of range.
int NormalizeAxis(int64_t dim, int rank, const std::string& op, const SourceLoc& loc);

/// Infers the dtype and shape of `call`'s output from its inputs (already in `f`).
/// Fills `out` (dtype, shape). Throws UserError naming the op, the shapes and the line.
void InferOpType(const Function& f, const OpCall& call, Value& out);

}  // namespace pypto
