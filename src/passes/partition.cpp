#include "passes/partition.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/op_registry.h"
#include "passes/kernel_body.h"

namespace pypto {

namespace {

bool SameExprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}

int64_t TileBytes(const std::vector<int64_t>& tile, DataType dt) {
  int64_t n = DataTypeBytes(dt);
  for (auto d : tile) n *= d;
  return n;
}

// A kernel under construction: the tile ops it will run.
struct Group {
  std::vector<const TileOp*> ops;
  std::set<int> produced;       // Temp values computed inside
  std::set<int> written_roots;  // global tensors it writes
  std::set<int> read_roots;     // global tensors it reads
  int64_t bytes = 0;            // sum of tile buffer sizes (upper bound before allocation)
  std::string reason;
};

class Partitioner {
 public:
  Partitioner(const TileGraph& tg, PassContext& ctx) : tg_(tg), ctx_(ctx) { g_.fn = tg.fn; }

  BlockGraph Run() {
    GroupRegion(tg_.body, g_.body);
    MarkMaterialized();
    for (size_t k = 0; k < groups_.size(); ++k)
      g_.kernels.push_back(BuildKernelBody(g_.fn, static_cast<int>(k), groups_[k].ops, groups_[k].reason));
    return std::move(g_);
  }

 private:
  // The tensor a value's memory belongs to, or -1 for a workspace (a computed value).
  int Root(int value) const {
    int r = g_.fn.Root(value);
    return g_.fn.value(r).is_storage() ? r : -1;
  }

  int64_t OpBytes(const TileOp& t, const Group* g) const {
    int64_t b = TileBytes(t.tile, g_.fn.value(t.output).dtype);
    for (size_t i = 0; i < t.inputs.size(); ++i)
      if (!t.inputs[i].from_memory && (!g || !g->produced.count(t.inputs[i].value)))
        b += TileBytes(t.input_tile(i), g_.fn.value(t.inputs[i].value).dtype);
    return b;
  }

  // Why `t` cannot join `g`, or "" if it can.
  std::string JoinBlocker(const Group& g, const TileOp& t) const {
    const TileOp& first = *g.ops.front();
    // Cube and vector work never share a kernel: a cube kernel runs one matmul and, at most,
    // the store of its result (the NPU's fixpipe writes L0C to global memory directly).
    if (t.is_matmul()) return "matmul runs on the cube core (AIC), in its own kernel";
    if (first.is_matmul()) {
      bool stores_result =
          t.op == "assemble" && g.ops.size() == 1 && t.inputs[0].value == first.output && t.tile == first.tile;
      if (!stores_result)
        return "the cube kernel holds only the matmul and the store of its result; " + t.op +
               " runs on a vector core (AIV)";
      int root_out = Root(t.output);
      if (root_out >= 0 && g.read_roots.count(root_out)) return "it writes a tensor the kernel reads";
      return "";
    }
    if (first.splits_reduction()) return "the previous kernel reduces across tiles";
    if (t.splits_reduction()) return "reduction over axis " + std::to_string(t.reduce_axis) + " spans several tiles";
    if (!SameExprs(first.counts(), t.counts()))
      return "its tile grid " + ShapeStr(t.counts()) + " differs from the kernel's " + ShapeStr(first.counts());
    for (size_t i = 0; i < t.inputs.size(); ++i) {
      int v = t.inputs[i].value;
      const Value& val = g_.fn.value(v);
      int mem = g_.fn.MemoryRoot(v);
      if (mem != v && g.produced.count(mem))
        return "it reads %" + val.name + ", a " + (val.kind == ValueKind::View ? "slice" : "reshape") + " of %" +
               g_.fn.value(mem).name + " made in the kernel";
      int root = Root(v);
      if (root >= 0 && g.written_roots.count(root))
        return "it reads %" + g_.fn.value(root).name + ", which the kernel writes";
      if (!g.produced.count(v)) continue;
      if (t.inputs[i].from_memory)
        return "it reads %" + val.name + " by index from memory, and the kernel computes %" + val.name;
      if (!t.inputs[i].perm.empty()) return "it reads %" + g_.fn.value(v).name + " with its dims permuted";
      const TileOp* p = producer_.at(v);
      if (p->reduce_axis >= 0 && !p->keepdim) return "it reads a reduction without keepdim";
      if (p->output_tile().size() != t.input_tile(i).size() || p->output_tile() != t.input_tile(i))
        return "it reads %" + g_.fn.value(v).name + " with tile " + IntList(t.input_tile(i)) +
               " but it was computed with tile " + IntList(p->output_tile());
      auto counts = t.counts();
      for (size_t d = 0; d < counts.size(); ++d)
        if (t.inputs[i].broadcast[d] && counts[d].as_const() != 1)
          return "it broadcasts %" + g_.fn.value(v).name + " along dim " + std::to_string(d) +
                 ", which spans several tiles";
    }
    int root_out = Root(t.output);
    if (root_out >= 0 && g.read_roots.count(root_out) && !InPlaceUpdate(g, t, root_out))
      return "it writes a tensor the kernel reads";
    int64_t need = PeakBytes(g, t);
    if (need > ctx_.machine().ub_bytes)
      return "the tiles would need " + std::to_string(need / 1024) + " KiB > UB " +
             std::to_string(ctx_.machine().ub_bytes / 1024) + " KiB";
    return "";
  }

  // The window a value denotes in its root: "root|offsets|shape".
  std::string Window(int value) const {
    const Value& v = g_.fn.value(value);
    if (v.kind == ValueKind::View) return std::to_string(v.base) + "|" + ShapeStr(v.offsets) + "|" + ShapeStr(v.shape);
    if (v.kind == ValueKind::Reshape) return "reshape " + std::to_string(value);  // equal to no window
    return std::to_string(value) + "|" + ShapeStr(std::vector<Expr>(v.shape.size(), Expr(0))) + "|" + ShapeStr(v.shape);
  }

  // `t` writes `root`, which the group reads: an in-place update (l[:] = l * a + b) is safe in
  // one kernel when every read of `root` there is the window `t` writes, with `t`'s tile and no
  // broadcast: then each grid point reads its own tile before writing it, and no other point
  // touches that tile. (Reads after the write stay in a later kernel: see "it reads ...".)
  bool InPlaceUpdate(const Group& g, const TileOp& t, int root) const {
    std::string w = Window(t.output);
    for (const TileOp* o : g.ops)
      for (size_t i = 0; i < o->inputs.size(); ++i) {
        if (Root(o->inputs[i].value) != root) continue;
        if (o->inputs[i].from_memory) return false;  // read at any index
        if (Window(o->inputs[i].value) != w || o->input_tile(i) != t.tile) return false;
        for (bool b : o->inputs[i].broadcast)
          if (b) return false;
      }
    return true;
  }

  // Peak UB bytes of the group's tiles if `t` joins: a tile is live from the op that makes (or
  // first loads) it to its last reader in the region, or to the end when read later.
  int64_t PeakBytes(const Group& g, const TileOp& t) const {
    std::vector<const TileOp*> ops = g.ops;
    ops.push_back(&t);
    int n = static_cast<int>(ops.size());
    struct Live {
      int64_t bytes;
      int from, to;
    };
    std::vector<Live> tiles;
    std::map<int, size_t> loaded;  // value -> index in tiles
    std::set<int> made;
    for (int i = 0; i < n; ++i) {
      const TileOp& o = *ops[i];
      for (size_t k = 0; k < o.inputs.size(); ++k) {
        int v = o.inputs[k].value;
        if (made.count(v) || o.inputs[k].from_memory) continue;
        auto it = loaded.find(v);
        if (it == loaded.end()) {
          loaded[v] = tiles.size();
          tiles.push_back({TileBytes(o.input_tile(k), g_.fn.value(v).dtype), i, i});
        } else {
          tiles[it->second].to = i;
        }
      }
      int64_t out_bytes = TileBytes(o.tile, g_.fn.value(o.output).dtype);
      int last = n - 1;  // read after the group: live to its end
      auto lu = last_use_.find(o.output);
      if (lu == last_use_.end() || lu->second <= pos_.at(ops[n - 1]->id)) {
        last = i;
        for (int j = i + 1; j < n; ++j)
          for (auto& in : ops[j]->inputs)
            if (in.value == o.output) last = j;
      }
      tiles.push_back({out_bytes, i, last});
      made.insert(o.output);
    }
    int64_t peak = 0;
    for (int i = 0; i < n; ++i) {
      int64_t live = 0;
      for (auto& l : tiles)
        if (l.from <= i && i <= l.to) live += l.bytes;
      peak = std::max(peak, live);
    }
    return peak;
  }

  void Add(Group& g, const TileOp& t) {
    g.bytes += OpBytes(t, g.ops.empty() ? nullptr : &g);
    g.ops.push_back(&t);
    if (g_.fn.value(t.output).kind == ValueKind::Temp) g.produced.insert(t.output);
    int ro = Root(t.output);
    if (ro >= 0) g.written_roots.insert(ro);
    for (auto& in : t.inputs)
      if (Root(in.value) >= 0) g.read_roots.insert(Root(in.value));
  }

  void CheckFits(const TileOp& t) const {
    if (t.is_matmul()) return;  // ExpandTiles checked the cube buffers
    if (t.op == "assemble" && !t.inputs.empty()) {
      // The store of a matmul's result joins its cube kernel: L0C to global memory through the
      // fixpipe, never through UB (see JoinBlocker).
      auto it = producer_.find(t.inputs[0].value);
      if (it != producer_.end() && it->second->is_matmul() && it->second->tile == t.tile) return;
    }
    int64_t need = OpBytes(t, nullptr);
    int64_t cap = ctx_.machine().ub_bytes;
    if (need > cap)
      throw UserError("pypto." + t.op + ": tile " + IntList(t.tile) + " " + DataTypeName(g_.fn.value(t.output).dtype) +
                          " needs " + std::to_string(need / 1024) +
                          " KiB of on-chip buffer for its operand and result tiles, more than UB " +
                          std::to_string(cap / 1024) + " KiB on " + ctx_.machine().name,
                      t.loc, "reduce the tile with pypto.set_vec_tile_shapes");
  }

  void GroupRegion(const Region<TileOp>& in, Region<Launch>& out) {
    // Positions of this region's ops and the last position reading each value.
    int position = 0;
    for (auto& e : in.entries) {
      if (!e.item) continue;
      pos_[e.item->id] = position;
      for (auto& inp : e.item->inputs) last_use_[inp.value] = std::max(last_use_[inp.value], position);
      ++position;
    }
    int open = -1;  // index of the open group, or -1
    auto close = [&]() { open = -1; };
    for (auto& e : in.entries) {
      if (e.loop) {
        close();
        LoopRegion<Launch>& l = out.AddLoop(e.loop->info);
        GroupRegion(*e.loop->body, *l.body);
        continue;
      }
      const TileOp& t = *e.item;
      producer_[t.output] = &t;
      CheckFits(t);
      // A signal runs alone, in program order with every other launch (Kernel::fence).
      bool signal = GetOpDef(t.op).kind == OpKind::Signal;
      if (signal) close();
      std::string blocker = signal      ? "a signal runs alone, ordered with every launch before and after it"
                            : open >= 0 ? JoinBlocker(groups_[open], t)
                                        : "first op of the region";
      if (open >= 0 && blocker.empty()) {
        Add(groups_[open], t);
        continue;
      }
      groups_.emplace_back();
      open = static_cast<int>(groups_.size()) - 1;
      groups_[open].reason = "new kernel at " + t.op + "#" + std::to_string(t.id) + ": " + blocker;
      Add(groups_[open], t);
      Launch l;
      l.id = next_launch_++;
      l.kernel = open;
      out.Add(l);
      if (signal) close();
    }
  }

  // A Temp read by a kernel other than its producer's lives in global memory.
  void MarkMaterialized() {
    std::map<int, int> kernel_of;
    for (size_t k = 0; k < groups_.size(); ++k)
      for (auto* t : groups_[k].ops) kernel_of[t->output] = static_cast<int>(k);
    for (size_t k = 0; k < groups_.size(); ++k)
      for (auto* t : groups_[k].ops)
        for (auto& in : t->inputs) {
          Value& v = g_.fn.value(in.value);
          if (v.kind == ValueKind::Temp && kernel_of.at(in.value) != static_cast<int>(k)) v.materialized = true;
          // A reshape or a slice reads its base from global memory (in another kernel: see the
          // fusion rule).
          Value& mem = g_.fn.value(g_.fn.MemoryRoot(in.value));
          if (mem.id != in.value && mem.kind == ValueKind::Temp) mem.materialized = true;
        }
  }

  const TileGraph& tg_;
  PassContext& ctx_;
  BlockGraph g_;
  std::vector<Group> groups_;
  std::map<int, const TileOp*> producer_;
  std::map<int, int> pos_;       // tile op id -> position in its region
  std::map<int, int> last_use_;  // value -> last position reading it (in its region)
  int next_launch_ = 0;
};

}  // namespace

BlockGraph Partition(const TileGraph& g, PassContext& ctx) { return Partitioner(g, ctx).Run(); }

}  // namespace pypto
