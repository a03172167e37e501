// Level 1: the tile graph. ExpandTiles turns every tensor op into a tile op: the same op
// applied to each tile of an iteration space (extents, tile shape). The graph stays one node
// per tensor op (the tile loop is implicit), so its size does not grow with the data and
// dynamic shapes need no unrolling; tails are the tiles whose valid shape is smaller.
#pragma once

#include <string>
#include <vector>

#include "ir/tensor_graph.h"

namespace pypto {

/// How a tile op reads one operand at iteration coordinate c: the operand's tile at c, except
/// along `broadcast` dims (operand extent 1), where it reads tile 0 of extent 1.
struct TileAccess {
  int value = -1;
  std::vector<bool> broadcast;
  // Permute: iteration dim d reads dim perm[d] of the operand (empty: aligned dims). The tile is
  // loaded through the permuted view, so it arrives in the iteration space's order.
  std::vector<int> perm;
  // Gather: along dims where whole[d] > 0 the operand is read whole (its static extent whole[d],
  // from 0) whatever the iteration tile (empty: none).
  std::vector<int64_t> whole;
  // Gather along a dim of run-time size, or too long for UB: no tile; the kernel reads the
  // elements the indices name straight from memory (TGATHERND).
  bool from_memory = false;
};

struct TileOp {
  int id = -1;
  int tensor_op = -1;  // the OpCall it came from
  std::string op;
  Attrs attrs;
  SourceLoc loc;
  std::vector<TileAccess> inputs;
  int output = -1;            // a Temp, or for assemble the View written
  std::vector<Expr> extent;   // iteration space (the output shape; the input shape for reductions)
  std::vector<int64_t> tile;  // tile shape over the iteration space
  std::string tile_reason;    // why this tile shape
  int reduce_axis = -1;       // Reduce: the reduced axis of the iteration space
  bool keepdim = true;
  int64_t axis_out = 1;  // extent of the output tile along reduce_axis (top-k: k)
  // Matmul: the contracted extent K and the cube tile {m0, m1, k0, k1, n0, n1} (L0 and L1 sizes
  // per axis); `tile` is then [1..., m1, n1], the output block of one cube task.
  Expr k_extent;
  std::vector<int64_t> cube;
  bool is_matmul() const { return !cube.empty(); }

  /// Number of tiles along each iteration dim.
  std::vector<Expr> counts() const;
  /// Tile shape of the output value (reduced axis has extent 1; dropped if !keepdim).
  std::vector<int64_t> output_tile() const;
  /// Tile shape of input i (1 along broadcast dims).
  std::vector<int64_t> input_tile(size_t i) const;
  /// A reduction whose axis may span several tiles (its kernel reduces across them in a loop).
  /// A run-time extent within one tile (a view's valid part, min(n - 4 * i, 4)) does not.
  bool splits_reduction() const { return reduce_axis >= 0 && counts()[reduce_axis].UpperBound().value_or(2) > 1; }
};

struct TileGraph {
  Function fn;  // values are shared with the tensor graph; passes may mark them
  Region<TileOp> body;
  std::vector<int> dead_ops;  // ids of the tensor ops not expanded: their results are never read
};

std::string PrintTileGraph(const TileGraph& g);

}  // namespace pypto
