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

/// How an fp32 instruction reads its operands, and its expression on VecF (pypto/kernel_vec.hpp; $A and $B stand for
/// the first and second operand: a tile, the scalar, or the row value of an R x 1 tile).
/// `exp`: the result is exp of the expression (computed for several vectors at once).
/// ColExpand: the second operand is a 1 x C tile, the same row for every row (row fusion only).
enum class Form { Binary, Scalar, Unary, RowExpand, ColExpand };
struct OpInfo {
  Form form;
  std::string expr;
  bool exp = false;
};
/// The elementwise instructions fused loops compute in registers.
const std::map<Opcode, OpInfo>& FusableOps();

/// A row reduction as a fused loop computes it: accumulate, identity, final horizontal step.
struct Reduction {
  const char* vec;     // combines two 8-lane accumulators: acc = vec(acc, v) (pypto/kernel_vec.hpp)
  const char* init;    // the identity, as a float
  const char* scalar;  // combines two floats: "+" or a function, h = scalar(h, x)
};
const Reduction* RowReduction(Opcode op);  // null if `op` is not one
/// Code that folds the 8 lanes of the accumulator `acc` with `red` in lane order and writes the
/// result to the float lvalue `dst`.
std::string EmitLaneFold(const Reduction& red, const std::string& acc, const std::string& dst, const std::string& pad);

/// `s` with every `from` replaced by `to` (filling the A/B operands of an OpInfo expression).
std::string ReplaceAll(std::string s, const std::string& from, const std::string& to);

/// A C++ float expression for `v` (rounded to float once; inf and NaN included).
std::string FloatLiteral(double v);
/// A C++ double expression for `v` (exact; inf and NaN included).
std::string DoubleLiteral(double v);
/// A C++ int64_t expression for `v` (INT64_MIN has no literal of its own).
std::string Int64Literal(int64_t v);
/// A VecF of the float a tile-scalar instruction uses.
std::string ScalarLiteral(double v);

/// One loop over the valid columns `vc` of a row: `ops` (elementwise instructions, or row
/// reductions accumulating into the variable `acc[op]`) read the tiles in `rows_in` from
/// `in<b> + c`, the R x 1 tiles in `values` as `rv<b>`, and store the tiles in `rows_out` to
/// `out<b> + c`. Full steps do kUnroll vectors with each operation issued for all of them in a
/// row (independent chains side by side keep the FMA pipes busy), then single vectors, then a
/// masked tail. Values and the order of accumulation are the same in every kind of step.
struct ColumnLoop {
  std::vector<const Instr*> ops;
  std::set<int> rows_in, values, rows_out;
  std::map<const Instr*, std::string> acc;
  // Rows of `rows_out` that may be stored with non-temporal stores: the name of a bool in scope
  // that says whether this row does (it is an output's row, 32-byte aligned).
  std::map<int, std::string> stream;
  // Rows of `rows_in` read from memory: an expression for how many floats ahead the same
  // stream's later row lies, prefetched as the loop goes (the data arrives while this row's
  // other passes compute from cache, instead of after them).
  std::map<int, std::string> prefetch;
};
constexpr int kUnroll = 4;
/// The loop as C++ on pypto/kernel_vec.hpp's VecF (8 or 16 lanes); `vc` and the pointers and accumulators named
/// above must be in scope.
std::string EmitColumnLoop(const ColumnLoop& loop, const std::string& pad);

/// What the fused-loop and row-fusion emitters know of the kernel being written.
struct FusionEnv {
  const Function& fn;
  const Kernel& kernel;
  std::function<std::string(const Expr&)> expr;  // C++ for a symbolic expression
  std::function<std::string(int)> ptr;           // C++ for a buffer's address
  std::function<std::string(int)> stride;        // C++ for a buffer's row stride (elements)
  std::map<int, int> reads;                      // reads of each buffer in the whole kernel
  std::set<int> views;                           // loaded tiles that view global memory
  std::set<int> stream_params;                   // params written once, never read: stores may bypass the cache
};

/// Length of the fusable run starting at body[i] (0 or 1 when there is nothing to fuse).
size_t FusableRun(const FusionEnv& env, const std::vector<Instr>& body, size_t i);

/// C++ for the run body[i, i + n): the fused loop under AVX2, else `fallback`.
std::string EmitFusedRun(const FusionEnv& env, const std::vector<Instr>& body, size_t i, size_t n,
                         const std::string& fallback, const std::string& pad);

}  // namespace pypto
