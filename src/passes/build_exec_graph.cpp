#include "passes/build_exec_graph.h"

#include <map>
#include <set>

namespace pypto {

namespace {

// The windows a kernel touches in each root tensor per grid point, in the root's coordinates.
struct PointAccesses {
  std::map<int, std::set<std::string>> windows;  // root -> windows ("start+extent" per dim)
  std::map<int, bool> writes;                    // root -> written
  std::set<int> irregular;                       // roots touched at several tiles per point
};

class ExecBuilder {
 public:
  explicit ExecBuilder(const BlockGraph& g) : g_(g) {
    out_.fn = g.fn;
    out_.kernels = g.kernels;
  }

  ExecGraph Run() {
    Build(g_.body, out_.body);
    out_.num_launches = n_;
    return std::move(out_);
  }

 private:
  int Root(int v) const {
    const Value& val = g_.fn.value(v);
    return val.kind == ValueKind::View ? val.base : v;
  }

  // Collects the TLOAD/TSTORE windows of `body`; `fixed` binds grid vars of extent-1 dims and
  // loop indices of single-trip loops to 0 (they take no other value).
  void Collect(const Kernel& k, const std::vector<Instr>& body, SymEnv fixed, bool in_loop, PointAccesses& acc) const {
    for (auto& in : body) {
      if (in.opcode == "LOOP") {
        auto trip = in.trip.as_const();
        SymEnv inner = fixed;
        bool single = trip && *trip == 1;
        if (single) inner[in.var.empty() ? kReduceVar : in.var] = 0;
        Collect(k, in.body, inner, in_loop || !single, acc);
        continue;
      }
      if (in.param < 0 || (in.opcode != "TLOAD" && in.opcode != "TSTORE")) continue;
      const KernelParam& p = k.params[in.param];
      const Value& v = g_.fn.value(p.value);
      int root = Root(p.value);
      const TileBuf& b = k.bufs[in.opcode == "TLOAD" ? in.dst : in.srcs[0]];
      acc.writes[root] = acc.writes[root] || in.opcode == "TSTORE";
      if (in_loop) {  // several tiles per grid point (a K loop, a split reduction)
        acc.irregular.insert(root);
        continue;
      }
      const Value& r = g_.fn.value(root);
      std::vector<std::string> dims(r.rank(), "0+1");
      for (size_t d = 0; d < p.dim_map.size(); ++d) {
        int m = p.dim_map[d];
        if (m < 0) continue;
        Expr start = in.coord[d] + (v.kind == ValueKind::View ? v.offsets[m] : Expr(0));
        dims[m] = start.Substitute(fixed).str() + "+" + b.valid[d].Substitute(fixed).str();
      }
      std::string w;
      for (auto& d : dims) w += d + ";";
      acc.windows[root].insert(w);
    }
  }

  PointAccesses Accesses(const Kernel& k) const {
    SymEnv fixed;
    for (size_t d = 0; d < k.grid.size(); ++d)
      if (k.grid[d].as_const() == 1) fixed[GridVar(static_cast<int>(d))] = 0;
    PointAccesses acc;
    Collect(k, k.body, fixed, false, acc);
    return acc;
  }

  // "" when every tensor `a` and `b` share with a writer is touched at one window per grid
  // point, the same in both (so point p of b needs only point p of a); else why not.
  std::string PointwiseBlocker(const Kernel& a, const Kernel& b) const {
    if (a.grid.size() != b.grid.size()) return "grids differ";
    for (size_t d = 0; d < a.grid.size(); ++d)
      if (!a.grid[d].same_as(b.grid[d])) return "grids " + ShapeStr(a.grid) + " and " + ShapeStr(b.grid) + " differ";
    PointAccesses pa = Accesses(a), pb = Accesses(b);
    std::set<int> roots;
    for (auto& [r, w] : pa.writes) roots.insert(r);
    for (int root : roots) {
      if (!pb.writes.count(root) || (!pa.writes[root] && !pb.writes[root])) continue;  // not shared, or read-only
      const std::string& name = g_.fn.value(root).name;
      if (pa.irregular.count(root) || pb.irregular.count(root)) return "%" + name + " is touched at several tiles per point";
      if (pa.windows[root].size() != 1 || pa.windows[root] != pb.windows[root])
        return "%" + name + " is touched at different windows per point";
    }
    return "";
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
        std::string why = PointwiseBlocker(g_.kernels[run.at(d)->kernel], k);
        if (why.empty()) n.pointwise_after.push_back(d);
        else n.pointwise_reason = "#" + std::to_string(d) + ": " + why;
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
