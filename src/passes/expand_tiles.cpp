#include "passes/expand_tiles.h"

#include <algorithm>
#include <map>

#include "ir/op_registry.h"
#include "runtime/cpu_isa.h"

namespace pypto {

namespace {

class TileExpander {
 public:
  TileExpander(const Function& fn, PassContext& ctx) : ctx_(ctx) { g_.fn = fn; }

  TileGraph Run() {
    live_ = g_.fn.LiveOps();
    ExpandRegion(g_.fn.body, g_.body);
    return std::move(g_);
  }

 private:
  // Dead ops are left out, and so is a loop (or a scalar read's scope) left with nothing in it.
  void ExpandRegion(const Region<OpCall>& in, Region<TileOp>& out) {
    for (auto& e : in.entries) {
      if (e.loop) {
        LoopRegion<TileOp>& l = out.AddLoop(e.loop->info);
        ExpandRegion(*e.loop->body, *l.body);
        if (l.body->entries.empty()) out.entries.pop_back();
      } else if (live_.count(e.item->id)) {
        out.Add(Expand(*e.item));
      } else {
        g_.dead_ops.push_back(e.item->id);
      }
    }
  }

  // Cube tiles: the user's set_cube_tile_shapes, or a default per machine; clipped to static
  // extents and checked against the L1 and L0 buffers.
  void ChooseCubeTile(const OpCall& call, TileOp& t) {
    const Value& a = g_.fn.value(call.inputs[0]);
    int rank = static_cast<int>(t.extent.size());
    if (call.attrs.has("cube_tile")) {
      t.cube = call.attrs.get<std::vector<int64_t>>("cube_tile");
      t.tile_reason = "set_cube_tile_shapes m=[" + std::to_string(t.cube[0]) + ", " + std::to_string(t.cube[1]) +
                      "] k=[" + std::to_string(t.cube[2]) + ", " + std::to_string(t.cube[3]) + "] n=[" +
                      std::to_string(t.cube[4]) + ", " + std::to_string(t.cube[5]) + "]";
    } else if (ctx_.machine().npu) {
      t.cube = {128, 128, 64, 256, 256, 256};
      t.tile_reason = "automatic m=[128, 128] k=[64, 256] n=[256, 256]: fits L0A/L0B/L0C of " + ctx_.machine().name;
    } else {
      // The host: a 256 x 256 output block per task keeps the packed B block (k0 x 256) in L2
      // and amortizes its packing over 256 rows; k0 is 1 KiB of packed elements per row (256
      // fp32, 512 bf16 pairs, 1024 int8 quads: cube_isa.hpp's compute types at the CPU level in
      // force), which keeps a micro-kernel's A rows in L1 and makes the accumulator's round
      // trips per step of K few.
      const int64_t k0 = 1024 / CubeComputeBytes(a.dtype, ChooseCpuIsa().level);
      t.cube = {256, 256, k0, 2 * k0, 256, 256};
      t.tile_reason = "automatic m=[256, 256] k=[" + std::to_string(k0) + ", " + std::to_string(2 * k0) +
                      "] n=[256, 256] for the host's caches";
    }
    // Clip to static extents (a tile larger than the matrix only wastes buffer).
    auto clip = [&](int l0, int l1, const Expr& ext) {
      if (auto e = ext.as_const()) {
        if (*e < t.cube[l1]) t.cube[l1] = *e;
        if (*e < t.cube[l0]) t.cube[l0] = *e;
      }
    };
    clip(0, 1, t.extent[rank - 2]);
    clip(2, 3, t.k_extent);
    clip(4, 5, t.extent[rank - 1]);
    t.tile.assign(rank, 1);
    t.tile[rank - 2] = t.cube[1];
    t.tile[rank - 1] = t.cube[5];
    const MachineModel& m = ctx_.machine();
    int64_t in = DataTypeBytes(a.dtype), acc = 4;
    auto check = [&](const char* what, int64_t bytes, int64_t cap) {
      if (bytes > cap)
        throw UserError("pypto.matmul: the " + std::string(what) + " needs " + std::to_string(bytes / 1024) +
                            " KiB, more than the " + std::to_string(cap / 1024) + " KiB of " + m.name +
                            " (cube tile m=[" + std::to_string(t.cube[0]) + ", " + std::to_string(t.cube[1]) + "] k=[" +
                            std::to_string(t.cube[2]) + ", " + std::to_string(t.cube[3]) + "] n=[" +
                            std::to_string(t.cube[4]) + ", " + std::to_string(t.cube[5]) + "], " +
                            DataTypeName(a.dtype) + ")",
                        call.loc, "use smaller sizes in pypto.set_cube_tile_shapes");
    };
    check("L1 tiles of A and B (m1*k1 + k1*n1)", (t.cube[1] * t.cube[3] + t.cube[3] * t.cube[5]) * in, m.l1_bytes);
    check("L0A tile (m0*k0)", t.cube[0] * t.cube[2] * in, m.l0a_bytes);
    check("L0B tile (k0*n0)", t.cube[2] * t.cube[4] * in, m.l0b_bytes);
    check("L0C accumulator (m0*n0)", t.cube[0] * t.cube[4] * acc, m.l0c_bytes);
  }

  // Picks the tile shape for an iteration space and says why.
  void ChooseTile(const OpCall& call, TileOp& t) {
    int rank = static_cast<int>(t.extent.size());
    const Value& elem = g_.fn.value(call.inputs.empty() ? call.output : call.inputs[0]);
    int64_t bytes = DataTypeBytes(elem.dtype);
    // A tensor made from nothing (pypto.full, arange) of another rank than the tile shape in
    // force takes the automatic tile: it has no input whose tiles it must match. So does an
    // assemble under a tile of lower rank (PyPTO's DeepSeek indexer assembles a 3-D result under
    // a 2-D tile): a copy's result does not depend on its tile.
    const int given = static_cast<int>(call.tile_shape.size());
    bool user_tile = given != 0 && !(call.inputs.empty() && given != rank) && !(call.op == "assemble" && given < rank);
    if (!user_tile) {
      // No user tile: the whole last dim if static and at most 4096 elements, then rows up to
      // 16 KiB per tile, which fits UB with room for a fused chain.
      t.tile.assign(rank, 1);
      auto last = t.extent[rank - 1].as_const();
      t.tile[rank - 1] = last ? std::min<int64_t>(*last, 4096) : 256;
      if (rank >= 2) {
        int64_t rows = std::max<int64_t>(1, (16 * 1024) / (t.tile[rank - 1] * bytes));
        if (auto r = t.extent[rank - 2].as_const()) rows = std::min(rows, *r);
        t.tile[rank - 2] = rows;
      }
      t.tile_reason = "automatic " + IntList(t.tile) +
                      ": no set_vec_tile_shapes in force; whole last dim up to 4096, rows up to 16 KiB";
    } else {
      // As in PyPTO, a tile shape of higher rank than the tensor tiles dim d by its entry d (the
      // leading entries); one of lower rank cannot say how to cut the remaining dims.
      if (static_cast<int>(call.tile_shape.size()) < rank)
        throw UserError("pypto." + call.op + " on a rank-" + std::to_string(rank) + " tensor " + ShapeStr(t.extent) +
                            ", but the vec tile shape " + IntList(call.tile_shape) + " has rank " +
                            std::to_string(call.tile_shape.size()),
                        call.loc,
                        "call pypto.set_vec_tile_shapes with (at least) one entry per tensor dim before this op");
      t.tile.assign(call.tile_shape.begin(), call.tile_shape.begin() + rank);
      t.tile_reason = "set_vec_tile_shapes" + IntList(call.tile_shape);
      if (static_cast<int>(call.tile_shape.size()) > rank)
        t.tile_reason += " (its leading " + std::to_string(rank) + ")";
      // The vector unit moves 32-byte blocks: a tile row must be a whole number of them.
      int64_t row_bytes =
          call.tile_shape.back() * DataTypeBytes(g_.fn.value(call.output >= 0 ? call.output : call.inputs[0]).dtype);
      int64_t align = 32;
      if (ctx_.machine().npu && row_bytes % align != 0)
        throw UserError("pypto." + call.op + ": the innermost tile dim " + std::to_string(call.tile_shape.back()) +
                            " of tile " + IntList(call.tile_shape) + " is " + std::to_string(row_bytes) +
                            " bytes, not a multiple of the " + std::to_string(align) + "-byte block of " +
                            ctx_.machine().name,
                        call.loc,
                        "make the last tile dim a multiple of " + std::to_string(align / DataTypeBytes(elem.dtype)) +
                            " elements (the tile may be larger than the tensor)");
    }
    // A tile larger than a static extent only wastes buffer: clip it.
    bool clipped = false;
    for (int d = 0; d < rank; ++d) {
      auto ext = t.extent[d].as_const();
      if (ext && *ext < t.tile[d]) {
        t.tile[d] = *ext;
        clipped = true;
      }
    }
    if (clipped) t.tile_reason += ", clipped to the extent -> " + IntList(t.tile);
  }

  // An assemble only moves data (on the chip a copy between global memories, with no UB tile):
  // a tile the program set for its computation that does not fit UB twice is halved, outer
  // dims first, until it does; the copy's result does not depend on its tile.
  void FitCopyTile(const OpCall& call, TileOp& t) {
    const int64_t bytes = DataTypeBytes(g_.fn.value(call.inputs[0]).dtype);
    const int64_t cap = ctx_.machine().ub_bytes / 2;  // operand and result
    auto size = [&] {
      int64_t n = bytes;
      for (auto d : t.tile) n *= d;
      return n;
    };
    if (size() <= cap) return;
    const std::vector<int64_t> before = t.tile;
    const int rank = static_cast<int>(t.tile.size());
    for (int d = 0; d < rank && size() > cap; ++d)
      while (size() > cap && t.tile[d] > 1 && (d < rank - 1 || t.tile[d] * bytes > 32)) t.tile[d] = (t.tile[d] + 1) / 2;
    t.tile_reason += "; halved to fit UB as a copy " + IntList(before) + " -> " + IntList(t.tile);
  }

  // An index or a scan along an axis needs the whole axis in one tile: a static extent, or a
  // run-time one with a static bound (a view's valid part, min(n - 8 * i, 8): one tile of the
  // bound whose valid part is the extent), and the tile must still fit UB.
  void WholeAxisTile(const OpCall& call, TileOp& t) {
    int axis = t.reduce_axis >= 0 ? t.reduce_axis : static_cast<int>(call.attrs.get<int64_t>("dim"));
    auto ext = t.extent[axis].as_const();
    if (!ext) ext = t.extent[axis].UpperBound();
    if (!ext)
      throw UserError("pypto." + call.op + " along dim " + std::to_string(axis) + " of " + ShapeStr(t.extent) +
                          ": the dim has a dynamic size, but the op needs the whole dim in one tile",
                      call.loc, "use a dim with a static size, or loop over views of a static size");
    if (t.tile[axis] != *ext) {
      t.tile[axis] = *ext;
      t.tile_reason += "; whole dim " + std::to_string(axis) + " in one tile for " + call.op + " -> " + IntList(t.tile);
    }
    int64_t bytes = DataTypeBytes(g_.fn.value(call.inputs[0]).dtype);
    for (auto d : t.tile) bytes *= d;
    if (2 * bytes > ctx_.machine().ub_bytes) {
      std::vector<int64_t> hint = t.tile;
      for (size_t d = 0; d < hint.size(); ++d)
        if (static_cast<int>(d) != axis) hint[d] = 1;
      throw UserError("pypto." + call.op + " needs the whole dim " + std::to_string(axis) + " (" +
                          std::to_string(*ext) + " elements) in one tile: tile " + IntList(t.tile) + " of " +
                          DataTypeName(g_.fn.value(call.inputs[0]).dtype) + " does not fit twice in the " +
                          std::to_string(ctx_.machine().ub_bytes / 1024) + " KiB UB of " + ctx_.machine().name,
                      call.loc,
                      "set a smaller tile along the other dims, e.g. pypto.set_vec_tile_shapes" + IntList(hint));
    }
  }

  // gather reads its input whole along `dim` (any index may point anywhere there): as one tile
  // when the dim has a static size and the tile fits UB twice, else straight from memory.
  void GatherWhole(const OpCall& call, TileOp& t) {
    const Value& x = g_.fn.value(call.inputs[0]);
    int axis = static_cast<int>(call.attrs.get<int64_t>("dim"));
    TileAccess& a = t.inputs[0];
    if (auto ext = x.shape[axis].as_const()) {
      std::vector<bool> broadcast = a.broadcast;
      a.whole.assign(t.extent.size(), 0);
      a.whole[axis] = *ext;
      a.broadcast[axis] = false;
      int64_t bytes = DataTypeBytes(x.dtype);
      for (auto d : t.input_tile(0)) bytes *= d;
      if (2 * bytes <= ctx_.machine().ub_bytes) return;
      a.whole.clear();
      a.broadcast = broadcast;
      t.tile_reason += "; reads %" + x.name + " from memory by index (dim " + std::to_string(axis) + ", " +
                       std::to_string(*ext) + " long, does not fit UB in one tile)";
    } else {
      t.tile_reason += "; reads %" + x.name + " from memory by index (dim " + std::to_string(axis) + " of size " +
                       x.shape[axis].str() + ", known at run time)";
    }
    a.from_memory = true;
  }

  TileAccess Access(int value, const std::vector<Expr>& extent) {
    const Value& v = g_.fn.value(value);
    int rank = static_cast<int>(extent.size());
    TileAccess a;
    a.value = value;
    a.broadcast.assign(rank, false);
    int shift = rank - v.rank();
    for (int d = 0; d < rank; ++d) {
      Expr dim = d >= shift ? v.shape[d - shift] : Expr(1);
      a.broadcast[d] = dim.as_const() == 1 && extent[d].as_const() != 1;
    }
    return a;
  }

  TileOp Expand(const OpCall& call) {
    const OpDef& def = GetOpDef(call.op);
    TileOp t;
    t.id = next_id_++;
    t.tensor_op = call.id;
    t.op = call.op;
    t.attrs = call.attrs;
    t.loc = call.loc;
    const Value& x = g_.fn.value(call.inputs.empty() ? call.output : call.inputs[0]);
    switch (def.kind) {
      case OpKind::ArgReduce:
      case OpKind::Reduce:
        t.extent = x.shape;
        t.reduce_axis = static_cast<int>(call.attrs.get<int64_t>("dim"));
        t.keepdim = call.attrs.get<int64_t>("keepdim") != 0;
        t.output = call.output;
        break;
      case OpKind::TopK:  // a reduction of the last dim to k values
        t.extent = x.shape;
        t.reduce_axis = x.rank() - 1;
        t.axis_out = call.attrs.get<int64_t>("k");
        t.output = call.output;
        break;
      case OpKind::Assemble: {
        t.extent = x.shape;
        // The destination window becomes a view value of the root tensor.
        const Value& dst = g_.fn.value(call.inputs[1]);
        const auto& offs = call.attrs.get<std::vector<Expr>>("offsets");
        Value w;
        w.kind = ValueKind::View;
        w.dtype = dst.dtype;
        w.shape = x.shape;
        w.loc = call.loc;
        w.base = dst.kind == ValueKind::View ? dst.base : dst.id;
        for (size_t i = 0; i < offs.size(); ++i)
          w.offsets.push_back(dst.kind == ValueKind::View ? dst.offsets[i] + offs[i] : offs[i]);
        w.name = g_.fn.value(w.base).name + "_win" + std::to_string(t.id);
        t.output = g_.fn.AddValue(w);
        break;
      }
      case OpKind::Scatter:  // over the values; it writes the destination (the last input)
        t.extent = x.shape;
        t.output = call.inputs.back();
        break;
      case OpKind::Signal:  // one cell: one tile of one element
        t.extent = x.shape;
        t.output = call.inputs.back();
        break;
      case OpKind::Matmul: {
        t.extent = g_.fn.value(call.output).shape;
        t.output = call.output;
        bool at = call.attrs.get<int64_t>("a_trans") != 0;
        t.k_extent = x.shape[at ? x.rank() - 2 : x.rank() - 1];
        ChooseCubeTile(call, t);
        break;
      }
      default:
        t.extent = g_.fn.value(call.output).shape;
        t.output = call.output;
        break;
    }
    // A 0-d value (sum of a 1-D tensor, a rank-0 output) is tiled as one element of rank 1: the
    // accesses put the missing leading dim in, as for any lower-rank operand.
    if (t.extent.empty()) t.extent = {Expr(1)};
    auto producer = def.kind == OpKind::Assemble ? matmul_tile_.find(call.inputs[0]) : matmul_tile_.end();
    if (producer != matmul_tile_.end()) {
      // Storing a matmul result: take the matmul's output block, so the store joins the cube
      // kernel instead of copying the result through a workspace.
      t.tile = producer->second;
      t.tile_reason = "the output block " + IntList(t.tile) + " of the matmul it stores";
    } else if (def.kind == OpKind::Signal) {
      t.tile.assign(t.extent.size(), 1);
      t.tile_reason = "one signal cell";
    } else if (def.kind != OpKind::Matmul) {
      ChooseTile(call, t);
      if (def.kind == OpKind::Assemble) FitCopyTile(call, t);
    }
    // A scatter that adds or multiplies: positions along `dim` can repeat, so one task takes the
    // whole dim (tasks then write disjoint parts of the destination).
    if (WholeAxis(def.kind) || (def.kind == OpKind::Scatter && call.attrs.get<int64_t>("reduce") != 0))
      WholeAxisTile(call, t);
    if (def.kind == OpKind::Matmul) matmul_tile_[t.output] = t.tile;
    // Assemble and scatter write their last input; every other op reads all its inputs.
    size_t n_in = WritesInPlace(def.kind) ? call.inputs.size() - 1 : call.inputs.size();
    for (size_t i = 0; i < n_in; ++i) t.inputs.push_back(Access(call.inputs[i], t.extent));
    if (def.kind == OpKind::Gather) GatherWhole(call, t);
    if (def.kind == OpKind::Permute) {
      for (auto d : call.attrs.get<std::vector<int64_t>>("perm")) t.inputs[0].perm.push_back(static_cast<int>(d));
      t.inputs[0].broadcast.assign(t.extent.size(), false);
    }
    return t;
  }

  PassContext& ctx_;
  std::set<int> live_;  // the tensor ops to expand (Function::LiveOps)
  TileGraph g_;
  std::map<int, std::vector<int64_t>> matmul_tile_;  // matmul result -> its output block
  int next_id_ = 0;
};

}  // namespace

TileGraph ExpandTiles(const Function& fn, PassContext& ctx) { return TileExpander(fn, ctx).Run(); }

}  // namespace pypto
