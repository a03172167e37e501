// Element-level fusion of instruction chains in generated kernels. A run of consecutive
// elementwise fp32 instructions (binary, tile-scalar, unary, row-broadcast forms, exp of a
// difference) on tiles of one shape becomes one loop over the tile's elements: each value is
// loaded once, intermediates stay in vector registers, and only tiles read after the run are
// stored. Each element sees the same operations in the same order as the instruction
// sequence, so results match it; the instruction sequence remains as the fallback for hosts
// without AVX2.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/block_graph.h"

namespace pypto {

/// How an fp32 instruction reads its operands, and its AVX2 expression (A and B stand for
/// the first and second operand: a tile, the scalar, or the row value of an R x 1 tile).
enum class Form { Binary, Scalar, Unary, RowExpand };
struct OpInfo {
  Form form;
  std::string expr;
};
/// The elementwise instructions fused loops compute in registers.
const std::map<std::string, OpInfo>& FusableOps();

/// A row reduction as a fused loop computes it: accumulate, identity, final horizontal step.
struct Reduction {
  const char* vec;
  const char* init;
  const char* scalar;
};
const Reduction* RowReduction(const std::string& op);  // null if `op` is not one

/// `s` with every `from` replaced by `to` (filling the A/B operands of an OpInfo expression).
std::string ReplaceAll(std::string s, const std::string& from, const std::string& to);

/// An AVX2 vector of the float a tile-scalar instruction uses.
std::string ScalarLiteral(double v);

struct FusionEnv {
  const Kernel& kernel;
  std::function<std::string(const Expr&)> expr;  // C++ for a symbolic expression
  std::function<std::string(int)> ptr;           // C++ for a buffer's address
  std::function<std::string(int)> stride;        // C++ for a buffer's row stride (elements)
  std::map<int, int> reads;                      // reads of each buffer in the whole kernel
  std::set<int> views;                           // loaded tiles that view global memory
};

/// Length of the fusable run starting at body[i] (0 or 1 when there is nothing to fuse).
size_t FusableRun(const FusionEnv& env, const std::vector<Instr>& body, size_t i);

/// C++ for the run body[i, i + n): the fused loop under AVX2, else `fallback`.
std::string EmitFusedRun(const FusionEnv& env, const std::vector<Instr>& body, size_t i, size_t n,
                         const std::string& fallback, const std::string& pad);

}  // namespace pypto
