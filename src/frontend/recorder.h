// The one recorder: both the Python tracer and the C++ API (FUNCTION/LOOP macros) call it to
// build the tensor graph. It infers shapes as ops are recorded, so a user error is raised at
// the user's line, and it tracks the loop nesting and the current vec tile shape.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "ir/tensor_graph.h"

namespace pypto {

/// "%name dtype(shape)", how the recorder's errors name a value.
std::string DescribeValue(const Value& v);

class Recorder {
 public:
  explicit Recorder(const std::string& function_name);

  /// A parameter. `is_output` marks a tensor the function writes in place.
  int AddParam(const std::string& name, const std::vector<Expr>& shape, DataType dtype, bool is_output,
               const SourceLoc& loc = {});
  /// A dimension bound from an argument's shape at call time. Returns its symbol, named after
  /// `hint` but unique in the function (see FreshSymbol).
  Expr AddDynamicVar(const std::string& hint);
  int CreateTensor(const std::vector<Expr>& shape, DataType dtype, const std::string& name, const SourceLoc& loc = {});
  /// A created tensor whose zeros are its value (the runtime zero-fills created tensors): reads
  /// before any write are then allowed (hw-native-sys's pl.create_tensor is such a buffer).
  void MarkZeroFilled(int id) { written_.insert(f_.MemoryRoot(id)); }

  int Unary(const std::string& op, int x, const SourceLoc& loc = {});
  int Binary(const std::string& op, int x, int y, const SourceLoc& loc = {});
  /// x op scalar, or scalar op x with `scalar_first` (sub and div; the other ops commute).
  /// `exact`: the scalar when the program gave an integer, exactly (a uint64 above 2^63 as its
  /// bits; `scalar` gives the sign), which integer tensors take.
  int BinaryScalar(const std::string& op, int x, double scalar, const SourceLoc& loc = {}, bool scalar_first = false,
                   std::optional<int64_t> exact = std::nullopt);
  int Reduce(const std::string& op, int x, int64_t dim, bool keepdim, const SourceLoc& loc = {});
  /// Any op of the registry with its attributes (the kinds without an entry of their own:
  /// compare, where, ...). Returns the result value.
  int Op(const std::string& op, const std::vector<int>& inputs, Attrs attrs, const SourceLoc& loc = {});
  /// x converted to `dtype`, rounding with `round` (PyPTO's CastMode, resolved by the caller).
  int Cast(int x, DataType dtype, const SourceLoc& loc = {}, RoundMode round = RoundMode::RINT);
  /// a @ b on the cube unit; `out_dtype` < 0 picks the default (the input dtype; int32 for int8).
  int Matmul(int a, int b, int out_dtype, bool a_trans, bool b_trans, const SourceLoc& loc = {});
  /// A window of `x`: x[offsets[i] : offsets[i] + shape[i]].
  int View(int x, const std::vector<Expr>& offsets, const std::vector<Expr>& shape, const SourceLoc& loc = {});
  /// PyPTO's valid extents of a window of x without a valid shape: per static dim (and, with
  /// `dynamic_dims`, per dynamic one), `shape` where the window lies inside x for every index of
  /// the open loops, else min(max(dim - offset, 0), shape) (a tail tile past the end holds the
  /// part inside; one wholly past it is empty).
  std::vector<Expr> ViewExtents(int x, const std::vector<Expr>& offsets, const std::vector<Expr>& shape,
                                bool dynamic_dims = false) const;
  /// `x` with another shape of as many elements (dense row-major order), no copy. Adding or
  /// dropping dims of size 1 is a Remap; merging or splitting dims a Reshape value over x's
  /// memory (a computed x is kept in global memory for it). `in_memory` makes every reshape a
  /// Reshape value (the destination of an in-place write must alias x's memory, not be a Remap).
  int Reshape(int x, const std::vector<Expr>& shape, const SourceLoc& loc = {}, bool in_memory = false);
  /// A slice whose elements are one contiguous run of its base (unit dims, one dim of any extent,
  /// then whole dims) reshaped to `shape`: a slice of the base reshaped, when the run is whole
  /// rows of `shape`'s trailing dims (static). Writes through it reach the base.
  struct ViewReshape {
    std::vector<Expr> base_shape, offsets;
  };
  std::optional<ViewReshape> PlanViewReshape(int x, const std::vector<Expr>& shape) const;
  /// x's bytes read as `dtype` (PyPTO's view(x, dtype=)): a Reshape value over x's memory whose
  /// last dim holds as many bytes (int8 [n, 16] -> fp32 [n, 4]). x must not be a slice.
  int Bitcast(int x, DataType dtype, const SourceLoc& loc = {});
  /// x with its dims rearranged: result dim d is x's dim perm[d], or a new dim of size 1 where
  /// perm[d] is -1 (transpose, permute, squeeze, unsqueeze). New unit dims take tile 1 when the
  /// vec tile in force is x's (x.reshape([t, h, 1]) under a 2-D tile, as PyPTO allows).
  int Remap(int x, const std::vector<int64_t>& perm, const SourceLoc& loc = {});
  /// dst[offsets...] = src (also `dst[:] = src`).
  /// dst[offsets...] = src; with `atomic_add`, dst[offsets...] += src added atomically (several
  /// ranks may add into one window at once).
  void Assemble(int src, const std::vector<Expr>& offsets, int dst, const SourceLoc& loc = {}, bool atomic_add = false);
  /// A tensor in memory holding the computed `value`, copied right where the value is made (in
  /// its loop body, not in a loop nested in it that writes into it): PyPTO's `t = pypto.full(...)`
  /// filled tile by tile by an inner loop. Returns the new tensor.
  int MaterializeWhereMade(int value, const SourceLoc& loc = {});
  /// Records that `a` == `b` for every call (expressions over dynamic dims only), checked when a
  /// call binds them; `what` says what relies on it. Differing constants are a UserError now.
  void AssumeEqual(const Expr& a, const Expr& b, const std::string& what, const SourceLoc& loc = {});

  /// Opens a runtime loop; returns the index variable.
  Expr BeginLoop(const std::string& idx_name, const std::string& loop_name, const Expr& start, const Expr& stop,
                 const Expr& step, const SourceLoc& loc = {});
  /// Opens a runtime branch: the ops recorded until EndLoop run when `cond` is nonzero (or zero,
  /// with `negate`). It is a loop of 0 or 1 iterations over [0, truth(cond)), so every level
  /// handles it as a loop; its index symbol is `if` / `else` (unique). Values computed inside
  /// may not be read outside it (they exist only when it runs).
  Expr BeginBranch(const Expr& cond, bool negate, const SourceLoc& loc = {});
  void EndLoop();

  /// Where recording stands in the open region: Rollback(mark) drops everything recorded since
  /// (the ops and loops after it, the dim assumptions, the tile shapes set). PyPTO's `if
  /// pypto.cond(...)` in a plain Python block is traced once per path of the loop body; the trace
  /// that finds a new condition is dropped and each path is traced again under its guard.
  struct Mark {
    size_t depth = 0, entries = 0, values = 0, assumptions = 0;
    std::vector<int64_t> tile_shape, cube_tile;
    std::string label;
  };
  Mark Checkpoint() const;
  /// Where the next op will go, as a path through the tensor graph's body: the index of each
  /// open loop in its region, then the number of entries recorded in the innermost one (PyPTO's
  /// pass_verify_print runs there when the tensor graph is evaluated).
  std::vector<int64_t> Position() const;
  /// The values made since `mark` stay (Python may hold them) but are dead: any use is a
  /// UserError, and they are no tensors in memory.
  void Rollback(const Mark& mark);
  /// PyPTO's `t[i, j]` of an integer tensor: that element as a symbol. The control program reads
  /// it when it gets there (before the launches after it), so it can bound loops, place windows
  /// and decide branches. `x` must be an input the function never writes, or a view of one. The
  /// symbol is in scope for the rest of the open loop (or function), like the Python name.
  Expr ReadScalar(int x, const std::vector<Expr>& index, const SourceLoc& loc = {});

  void SetVecTileShapes(const std::vector<int64_t>& dims, const SourceLoc& loc = {});
  /// Back to automatic vec tile shapes (the state before any SetVecTileShapes).
  void ClearVecTileShapes() { tile_shape_.clear(); }
  /// PyPTO's semantic label: attached to the ops recorded after it (shown in the dumps).
  void SetLabel(const std::string& label) { label_ = label; }
  const std::vector<int64_t>& vec_tile_shapes() const { return tile_shape_; }
  /// Cube tile shapes for the following matmuls: {L0, L1} sizes along m, k and n.
  void SetCubeTileShapes(const std::vector<int64_t>& m, const std::vector<int64_t>& k, const std::vector<int64_t>& n,
                         const SourceLoc& loc = {});
  /// {m0, m1, k0, k1, n0, n1}, or empty when not set.
  const std::vector<int64_t>& cube_tile_shapes() const { return cube_tile_; }

  /// Declares the returned tensors, in order.
  void Return(const std::vector<int>& values, const SourceLoc& loc = {});
  /// Ends recording and hands over the function.
  Function Finish();

  const Value& value(int id) const { return f_.value(id); }
  const Function& function() const { return f_; }
  /// The symbols in scope here that a region binds (loop indices, branch guards, scalar reads),
  /// outermost first: a symbol opened inside a branch leaves scope when the branch ends.
  const std::vector<std::string>& OpenSymbols() const { return open_vars_; }

 private:
  int Record(OpCall call, const std::string& result_name = "");
  std::string FreshName(const std::string& hint);
  /// A symbol name no other symbol of the function has: `hint`, else hint_1, hint_2, ...
  /// Loop indices and dynamic dims are told apart by name at every level below (the
  /// runtime's bindings, the generated kernels' slots), so the name is the symbol's identity.
  std::string FreshSymbol(const std::string& hint, const SourceLoc& loc);
  void CheckLive(int id, const std::string& op, const SourceLoc& loc) const;
  /// The parameter `dst` writes into becomes an in-place output.
  void MakeOutput(int dst);
  /// UserError when value `id` was made in a runtime branch that is not open here.
  void CheckBranchScope(int id, const std::string& what, const SourceLoc& loc) const;
  /// UserError when a static shape's byte count overflows (no such tensor can exist).
  void CheckCanExist(const std::string& what, const std::vector<Expr>& shape, DataType dtype,
                     const SourceLoc& loc) const;
  /// `shape` simplified with the ranges of the open loops' indices.
  std::vector<Expr> Simplified(const std::vector<Expr>& shape) const;

  Function f_;
  std::vector<Region<OpCall>*> stack_;
  std::vector<int64_t> tile_shape_;
  std::vector<int64_t> cube_tile_;
  std::string label_;
  std::set<int> written_;  // created tensors something was assembled into
  int next_op_ = 0;
  int next_tmp_ = 0;
  std::set<std::string> symbols_;  // every symbol minted for this function
  enum class Scope : uint8_t { Loop, Branch, Read };
  /// Closes the innermost scope (of any kind) of stack_.
  void CloseScope();
  std::vector<Scope> scopes_;                      // per open region of stack_ past the body
  std::vector<std::string> open_vars_;             // per open region of stack_ past the body: its index
  std::map<std::string, SourceLoc> read_symbols_;  // symbol of each scalar read -> its line
  // Reads of an input's element made before any loop or branch: one value per call, which the
  // runtime reads when the call starts (CallState::Build), so created tensors may take their
  // shape from them (hw-native-sys's `pl.create_tensor([16, head_dim_cfg])`).
  std::set<std::string> call_start_reads_;
  /// UserError when `shape` depends on a scalar read: tensors in memory (created, returned) are
  /// allocated when the call starts, before any element is read (but those of
  /// call_start_reads_ when `call_start_ok`).
  void CheckNotDataDependent(const std::string& what, const std::vector<Expr>& shape, const SourceLoc& loc,
                             bool call_start_ok = false) const;
  VarRanges ranges_;                                // the open loops' indices with a known range
  std::vector<int> branches_;                       // the open branches, outermost first
  std::map<int, std::vector<int>> value_branches_;  // op result -> the branches open when it was made
  std::map<int, SourceLoc> branch_loc_;             // branch -> its `if`
  int next_branch_ = 0;
  int last_if_ = -1;  // the `if` an `else` belongs to (its number names both)
  int next_loop_ = 0;
  bool finished_ = false;
  std::vector<std::pair<int, int>> dead_;  // [first, last) value ids of traces rolled back
};

}  // namespace pypto
