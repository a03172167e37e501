#include "passes/build_exec_graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace pypto {

namespace {

class ExecBuilder {
 public:
  explicit ExecBuilder(const BlockGraph& g) : g_(g) {
    out_.fn = g.fn;
    out_.kernels = g.kernels;
    for (auto& k : g.kernels) out_.point_access.push_back(Accesses(k));
  }

  ExecGraph Run() {
    Build(g_.body, out_.body);
    out_.num_launches = n_;
    SingleBufferWorkspaces();
    return std::move(out_);
  }

  // A workspace whose every reader waits for its writer point by point is consumed depth first,
  // point by point, before the writer's next launch overwrites that point: one buffer serves
  // (it stays in cache), where others alternate between two so iterations can overlap.
  void SingleBufferWorkspaces() {
    std::map<int, std::vector<const LaunchNode*>> writers, readers;
    std::function<void(const Region<LaunchNode>&)> scan = [&](const Region<LaunchNode>& r) {
      for (auto& e : r.entries) {
        if (e.loop) {
          scan(*e.loop->body);
          continue;
        }
        for (int v : e.item->writes)
          if (g_.fn.value(v).kind == ValueKind::Temp) writers[v].push_back(e.item.get());
        for (int v : e.item->reads)
          if (g_.fn.value(v).kind == ValueKind::Temp) readers[v].push_back(e.item.get());
      }
    };
    scan(out_.body);
    for (auto& [v, ws] : writers) {
      if (ws.size() != 1 || !readers.count(v)) continue;
      bool linked = true;
      for (const LaunchNode* r : readers[v]) {
        const auto& after = r->pointwise_after;
        linked = linked && r != ws[0] && std::find(after.begin(), after.end(), ws[0]->id) != after.end();
      }
      if (linked) out_.single_buffer.insert(v);
    }
  }

 private:
  int Root(int v) const { return g_.fn.Root(v); }

  static PointAccess& Of(std::vector<PointAccess>& acc, int root) {
    for (auto& a : acc)
      if (a.root == root) return a;
    acc.push_back({});
    acc.back().root = root;
    return acc.back();
  }

  // Collects the TLOAD/TSTORE windows of `body`; `fixed` binds grid vars of extent-1 dims and
  // loop indices of single-trip loops to 0 (they take no other value).
  void Collect(const Kernel& k, const std::vector<Instr>& body, SymEnv fixed, bool in_loop,
               std::vector<PointAccess>& acc) const {
    for (auto& in : body) {
      if (in.opcode == Opcode::LOOP) {
        auto trip = in.trip.as_const();
        SymEnv inner = fixed;
        bool single = trip && *trip == 1;
        if (single) inner[in.var.empty() ? kReduceVar : in.var] = 0;
        Collect(k, in.body, inner, in_loop || !single, acc);
        continue;
      }
      if (in.param < 0) continue;
      if (in.opcode != Opcode::TLOAD && in.opcode != Opcode::TSTORE) {  // addressed by data (a scatter)
        const KernelParam& p = k.params[in.param];
        PointAccess& a = Of(acc, Root(p.value));
        a.write = a.write || p.write;
        a.regular = false;
        continue;
      }
      const KernelParam& p = k.params[in.param];
      const Value& v = g_.fn.value(p.value);
      PointAccess& a = Of(acc, Root(p.value));
      const TileBuf& b = k.bufs[in.opcode == Opcode::TLOAD ? in.dst : in.srcs[0]];
      a.write = a.write || in.opcode == Opcode::TSTORE;
      a.adds = a.adds || (in.opcode == Opcode::TSTORE && in.atomic_add);
      // Several tiles per grid point (a K loop, a split reduction), or memory read in another
      // shape (a reshape): not a window of the root per point.
      if (in_loop || v.kind == ValueKind::Reshape) {
        a.regular = false;
        continue;
      }
      std::vector<Expr> w;
      for (int64_t d = 0; d < g_.fn.value(a.root).rank(); ++d) {
        w.push_back(0);
        w.push_back(1);
      }
      for (size_t d = 0; d < p.dim_map.size(); ++d) {
        int m = p.dim_map[d];
        if (m < 0) continue;
        w[2 * m] = (in.coord[d] + (v.kind == ValueKind::View ? v.offsets[m] : Expr(0))).Substitute(fixed);
        w[2 * m + 1] = b.valid[d].Substitute(fixed);
      }
      std::string key;
      for (auto& e : w) {
        key += e.str() + ";";
        for (auto& var : e.FreeVars())
          if (var.rfind("$c", 0) != 0) {
            a.names_other_vars = true;
            auto at = std::lower_bound(a.other_vars.begin(), a.other_vars.end(), var);
            if (at == a.other_vars.end() || *at != var) a.other_vars.insert(at, var);
          }
      }
      if (std::find(a.keys.begin(), a.keys.end(), key) == a.keys.end()) {
        a.keys.push_back(key);
        a.windows.push_back(w);
      }
    }
  }

  std::vector<PointAccess> Accesses(const Kernel& k) const {
    SymEnv fixed;
    for (size_t d = 0; d < k.grid.size(); ++d)
      if (k.grid[d].as_const() == 1) fixed[GridVar(static_cast<int>(d))] = 0;
    std::vector<PointAccess> acc;
    Collect(k, k.body, fixed, false, acc);
    return acc;
  }

  // "" when point p of `b` needs only point p of `a` (see PointwiseBlocker); else why not.
  std::string Blocker(const Kernel& a, const Kernel& b) const {
    if (a.grid.size() != b.grid.size()) return "grids differ";
    std::vector<int64_t> grid;  // extents as far as known: 1, or -1 for any other
    for (size_t d = 0; d < a.grid.size(); ++d) {
      if (!a.grid[d].same_as(b.grid[d])) return "grids " + ShapeStr(a.grid) + " and " + ShapeStr(b.grid) + " differ";
      grid.push_back(a.grid[d].as_const() == 1 ? 1 : -1);
    }
    return PointwiseBlocker(g_.fn, out_.point_access[a.id], out_.point_access[b.id], &grid, nullptr, nullptr);
  }

  void Build(const Region<Launch>& in, Region<LaunchNode>& out) {
    std::vector<const LaunchNode*> seen;
    std::map<int, const LaunchNode*> run;  // the launches since the last loop, by id
    for (auto& e : in.entries) {
      if (e.loop) {
        Build(*e.loop->body, *out.AddLoop(e.loop->info).body);
        run.clear();  // point-wise links stay within a run of launches
        continue;
      }
      LaunchNode n;
      n.id = e.item->id;
      n.kernel = e.item->kernel;
      ++n_;
      const Kernel& k = g_.kernels[n.kernel];
      for (auto& p : k.params) {
        if (p.read) n.reads.push_back(p.value);
        if (p.write) n.writes.push_back(p.value);
      }
      std::set<int> r, w;
      for (int v : n.reads) r.insert(Root(v));
      for (int v : n.writes) w.insert(Root(v));
      for (auto* prev : seen) {
        bool dep = false;
        for (int v : prev->writes) dep = dep || r.count(Root(v)) || w.count(Root(v));
        for (int v : prev->reads) dep = dep || w.count(Root(v));
        if (dep) n.deps.push_back(prev->id);
      }
      for (int d : n.deps) {
        if (!run.count(d)) {
          n.pointwise_reason = "a loop comes between it and #" + std::to_string(d);
          continue;
        }
        std::string why = Blocker(g_.kernels[run.at(d)->kernel], k);
        if (why.empty())
          n.pointwise_after.push_back(d);
        else  // appends: operator+ chains draw a false -Wrestrict from GCC 12
          (n.pointwise_reason = "#").append(std::to_string(d)).append(": ").append(why);
      }
      out.Add(n);
      seen.push_back(out.entries.back().item.get());
      run[n.id] = seen.back();
    }
  }

  const BlockGraph& g_;
  ExecGraph out_;
  int n_ = 0;
};

}  // namespace

ExecGraph BuildExecGraph(const BlockGraph& g, PassContext& ctx) { return ExecBuilder(g).Run(); }

}  // namespace pypto
