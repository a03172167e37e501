// Small recorded programs and helpers for the per-pass tests (tests/cpp/passes/test_<pass>.cpp):
// each test takes the pipeline's output up to the step before a pass (CompileThrough), runs that
// one pass through its own entry, and compares the result with the expected IR.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/recorder.h"
#include "passes/pipeline.h"

namespace pypto::pass_test {

/// out = (x + y).exp() * 2 over fp32 [16, 64] with tile [8, 64]: one kernel of a 2 x 1 grid.
inline Function Chain() {
  Recorder r("chain");
  int x = r.AddParam("x", {16, 64}, DataType::FP32, false);
  int y = r.AddParam("y", {16, 64}, DataType::FP32, false);
  int out = r.CreateTensor({16, 64}, DataType::FP32, "out");
  r.SetVecTileShapes({8, 64});
  int e = r.Unary("exp", r.Binary("add", x, y));
  r.Assemble(r.BinaryScalar("mul", e, 2.0), {0, 0}, out);
  r.Return({out});
  return r.Finish();
}

/// Row softmax of fp32 [16, cols] with tile [8, tile_cols]: a reduction (amax, sum) whose axis
/// spans cols / tile_cols tiles.
inline Function Softmax(int64_t cols = 64, int64_t tile_cols = 64) {
  Recorder r("softmax");
  int x = r.AddParam("x", {16, cols}, DataType::FP32, false);
  int out = r.CreateTensor({16, cols}, DataType::FP32, "out");
  r.SetVecTileShapes({8, tile_cols});
  int e = r.Unary("exp", r.Binary("sub", x, r.Reduce("amax", x, -1, true)));
  r.Assemble(r.Binary("div", e, r.Reduce("sum", e, -1, true)), {0, 0}, out);
  r.Return({out});
  return r.Finish();
}

/// relu(a @ b), a fp32 [64, 32], b [32, 48], cube tile m=[32, 32] k=[16, 32] n=[16, 48].
inline Function MatmulRelu(bool relu = true) {
  Recorder r("mm");
  int a = r.AddParam("a", {64, 32}, DataType::FP32, false);
  int b = r.AddParam("b", {32, 48}, DataType::FP32, false);
  int out = r.CreateTensor({64, 48}, DataType::FP32, "out");
  r.SetCubeTileShapes({32, 32}, {16, 32}, {16, 48});
  r.SetVecTileShapes({32, 48});
  int c = r.Matmul(a, b, -1, false, false);
  r.Assemble(relu ? r.Unary("relu", c) : c, {0, 0}, out);
  r.Return({out});
  return r.Finish();
}

/// for i in range(0, 4): out[i] = x[i] * 2 + 1, rows of fp32 [4, 32] (a runtime loop of views
/// and assembles).
inline Function RowLoop() {
  Recorder r("rows");
  int x = r.AddParam("x", {4, 32}, DataType::FP32, false);
  int out = r.CreateTensor({4, 32}, DataType::FP32, "out");
  r.SetVecTileShapes({1, 32});
  Expr i = r.BeginLoop("i", "L0", 0, 4, 1);
  int v = r.View(x, {i, 0}, {1, 32});
  r.Assemble(r.BinaryScalar("add", r.BinaryScalar("mul", v, 2.0), 1.0), {i, 0}, out);
  r.EndLoop();
  r.Return({out});
  return r.Finish();
}

/// out[0:8] = x[8:16] + 1; out[8:16] = x[0:8] (two views of fp32 [16, 32] written into two
/// windows of one result).
inline Function SwapHalves() {
  Recorder r("swap");
  int x = r.AddParam("x", {16, 32}, DataType::FP32, false);
  int out = r.CreateTensor({16, 32}, DataType::FP32, "out");
  r.SetVecTileShapes({8, 32});
  r.Assemble(r.BinaryScalar("add", r.View(x, {8, 0}, {8, 32}), 1.0), {0, 0}, out);
  r.Assemble(r.View(x, {0, 0}, {8, 32}), {8, 0}, out);
  r.Return({out});
  return r.Finish();
}

/// for i in range(0, 4): if i < 2: y[i] = exp(x[i]) else: y[i] = x[i] * 3 (a runtime branch in a
/// loop over the rows of fp32 [4, 16], y written in place).
inline Function Branch() {
  Recorder r("branch");
  int x = r.AddParam("x", {4, 16}, DataType::FP32, false);
  int y = r.AddParam("y", {4, 16}, DataType::FP32, true);
  r.SetVecTileShapes({1, 16});
  Expr i = r.BeginLoop("i", "L0", 0, 4, 1);
  Expr first = Compare(i, 2, CmpOp::LT);
  r.BeginBranch(first, false);
  r.Assemble(r.Unary("exp", r.View(x, {i, 0}, {1, 16})), {i, 0}, y);
  r.EndLoop();
  r.BeginBranch(first, true);
  r.Assemble(r.BinaryScalar("mul", r.View(x, {i, 0}, {1, 16}), 3.0), {i, 0}, y);
  r.EndLoop();
  r.EndLoop();
  return r.Finish();
}

/// The program as it stands after pipeline step `last` (no dumps written).
inline CompiledProgram Through(Function fn, const std::string& last, CompileOptions o = {}) {
  return CompileThrough(std::move(fn), o, last);
}

/// The opcodes of `body` in order as text, loops as "LOOP{...}": "TLOAD TADD LOOP{TLOAD TMAX}".
inline std::string Opcodes(const std::vector<Instr>& body) {
  std::string s;
  for (const Instr& in : body) {
    if (!s.empty()) s += " ";
    s += in.opcode == Opcode::LOOP ? "LOOP{" + Opcodes(in.body) + "}" : std::string(OpcodeName(in.opcode));
  }
  return s;
}

/// The tile ops in program order as "op:tile" text, e.g. {"add:[8, 64]", "exp:[8, 64]"}.
inline std::vector<std::string> TileShapes(const TileGraph& g) {
  std::vector<std::string> v;
  g.body.ForEach([&](const TileOp& t) { v.push_back(t.op + ":" + IntList(t.tile, "[", "]")); });
  return v;
}

/// The op names each kernel runs, in kernel order: {"add exp mul_scalar assemble", ...}.
inline std::vector<std::string> KernelOps(const BlockGraph& g, const TileGraph& tiles) {
  std::vector<std::string> names;
  tiles.body.ForEach([&](const TileOp& t) {
    if (static_cast<size_t>(t.id) >= names.size()) names.resize(t.id + 1);
    names[t.id] = t.op;
  });
  std::vector<std::string> v;
  for (const Kernel& k : g.kernels) {
    std::string s;
    for (int t : k.tile_ops) s += (s.empty() ? "" : " ") + names.at(t);
    v.push_back(s);
  }
  return v;
}

}  // namespace pypto::pass_test
