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
};

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
};

/// Looks up an op; an unknown name is an internal error (the frontend only emits known ops).
const OpDef& GetOpDef(const std::string& name);
bool HasOpDef(const std::string& name);
const std::vector<OpDef>& AllOpDefs();

/// Broadcast two shapes, numpy style (aligned right; equal dims or 1). Throws UserError.
std::vector<Expr> BroadcastShapes(const std::vector<Expr>& a, const std::vector<Expr>& b,
                                  const std::string& op, const SourceLoc& loc);

/// Normalizes a possibly negative axis; throws UserError when out of range.
int NormalizeAxis(int64_t dim, int rank, const std::string& op, const SourceLoc& loc);

/// Infers the dtype and shape of `call`'s output from its inputs (already in `f`).
/// Fills `out` (dtype, shape). Throws UserError naming the op, the shapes and the line.
void InferOpType(const Function& f, const OpCall& call, Value& out);

}  // namespace pypto
