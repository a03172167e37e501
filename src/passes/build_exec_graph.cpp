#include "passes/build_exec_graph.h"

#include <set>

namespace pypto {

namespace {

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

  void Build(const Region<Launch>& in, Region<LaunchNode>& out) {
    std::vector<const LaunchNode*> seen;
    for (auto& e : in.entries) {
      if (e.loop) {
        Build(*e.loop->body, *out.AddLoop(e.loop->info).body);
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
      out.Add(n);
      seen.push_back(out.entries.back().item.get());
    }
  }

  const BlockGraph& g_;
  ExecGraph out_;
  int n_ = 0;
};

}  // namespace

ExecGraph BuildExecGraph(const BlockGraph& g, PassContext& ctx) { return ExecBuilder(g).Run(); }

}  // namespace pypto
