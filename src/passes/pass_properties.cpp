#include "passes/pass_properties.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ir/op_registry.h"

namespace pypto {

namespace {

// Fails naming the pass and the property.
struct Check {
  const std::string& pass;
  IRProperty prop;
  template <class... A>
  [[noreturn]] void Fail(A&&... what) const {
    throw InternalError(detail::Concat("after pass ", pass, ": property ", IRPropertyName(prop),
                                       " does not hold: ", std::forward<A>(what)...));
  }
};
// The details are formatted only on failure, so a passing check costs the comparison.
#define CHECK_PROP(cond, ...)             \
  do {                                    \
    if (!(cond)) check.Fail(__VA_ARGS__); \
  } while (0)

bool ValidValue(const Function& f, int id) { return id >= 0 && id < static_cast<int>(f.values.size()); }

void CheckShapesInferred(const Function& f, const Check& check) {
  auto value = [&](int id, const OpCall& c) {
    CHECK_PROP(ValidValue(f, id), "op#", c.id, " (", c.op, ") names value ", id, " of ", f.values.size());
    const Value& v = f.value(id);
    CHECK_PROP(v.id == id, "value %", v.name, " has id ", v.id, " at index ", id);
    for (size_t d = 0; d < v.shape.size(); ++d) {
      CHECK_PROP(v.shape[d].defined(), "dim ", d, " of %", v.name, " is not inferred");
      CHECK_PROP(v.shape[d].as_const().value_or(0) >= 0, "dim ", d, " of %", v.name, " is negative");
    }
  };
  f.body.ForEach([&](const OpCall& c) {
    for (int in : c.inputs) value(in, c);
    if (c.output >= 0) value(c.output, c);
  });
}

void CheckTilesExpanded(const TileGraph& g, const Check& check) {
  const Function& f = g.fn;
  size_t calls = 0;
  f.body.ForEach([&](const OpCall&) { ++calls; });
  std::set<int> ids, tensor_ops;
  g.body.ForEach([&](const TileOp& t) {
    CHECK_PROP(ids.insert(t.id).second, "tile_op#", t.id, " appears twice");
    CHECK_PROP(tensor_ops.insert(t.tensor_op).second, "tensor op#", t.tensor_op, " is expanded twice");
    const size_t rank = t.extent.size();
    CHECK_PROP(rank >= 1 && t.tile.size() == rank, "tile_op#", t.id, " (", t.op, ") has tile ", IntList(t.tile),
               " over ", ShapeStr(t.extent));
    for (int64_t d : t.tile) CHECK_PROP(d >= 1, "tile_op#", t.id, " has tile ", IntList(t.tile));
    CHECK_PROP(!t.tile_reason.empty(), "tile_op#", t.id, " does not say why its tile was chosen");
    CHECK_PROP(ValidValue(f, t.output), "tile_op#", t.id, " writes value ", t.output);
    CHECK_PROP(t.reduce_axis < static_cast<int>(rank), "tile_op#", t.id, " reduces axis ", t.reduce_axis);
    for (const TileAccess& a : t.inputs) {
      CHECK_PROP(ValidValue(f, a.value), "tile_op#", t.id, " reads value ", a.value);
      CHECK_PROP(a.broadcast.size() == rank, "tile_op#", t.id, " has ", a.broadcast.size(),
                 " broadcast flags for rank ", rank);
      CHECK_PROP(a.perm.empty() || a.perm.size() == rank, "tile_op#", t.id, " permutes ", a.perm.size(), " dims");
    }
    if (GetOpDef(t.op).kind == OpKind::Matmul) {
      CHECK_PROP(t.cube.size() == 6 && t.k_extent.defined(), "matmul tile_op#", t.id, " has no cube tile");
      for (int64_t d : t.cube) CHECK_PROP(d >= 1, "matmul tile_op#", t.id, " has cube tile ", IntList(t.cube));
    }
  });
  CHECK_PROP(ids.size() + g.dead_ops.size() == calls, ids.size(), " tile ops and ", g.dead_ops.size(), " dead ops for ",
             calls, " tensor ops");
}

// Calls f(instr) on every instruction of `body`, loop bodies included.
template <class F>
void ForEachInstr(const std::vector<Instr>& body, F&& f) {
  for (const Instr& in : body) {
    f(in);
    if (in.opcode == Opcode::LOOP) ForEachInstr(in.body, f);
  }
}

void CheckKernelsPartitioned(const CompiledProgram& p, const Check& check) {
  const BlockGraph& g = p.block_graph;
  const int nk = static_cast<int>(g.kernels.size());
  std::map<int, int> kernel_of_op;  // tile op -> its kernel
  for (int i = 0; i < nk; ++i) {
    const Kernel& k = g.kernels[i];
    CHECK_PROP(k.id == i, "kernel ", k.name, " has id ", k.id, " at index ", i);
    CHECK_PROP(!k.grid.empty() && !k.tile_ops.empty() && !k.body.empty(), "kernel ", k.name, " is empty");
    for (int t : k.tile_ops) {
      auto [it, fresh] = kernel_of_op.emplace(t, i);
      CHECK_PROP(fresh, "tile_op#", t, " runs in kernels ", it->second, " and ", i);
    }
    const int nb = static_cast<int>(k.bufs.size()), np = static_cast<int>(k.params.size());
    for (int b = 0; b < nb; ++b)
      CHECK_PROP(k.bufs[b].id == b && k.bufs[b].valid.size() == k.bufs[b].shape.size(), "buffer ", b, " (",
                 k.bufs[b].name, ") of kernel ", k.name, " is malformed");
    for (const KernelParam& prm : k.params) {
      CHECK_PROP(ValidValue(g.fn, prm.value), "a parameter of kernel ", k.name, " is value ", prm.value);
      CHECK_PROP(prm.dim_map.size() == k.grid.size(), "parameter %", g.fn.value(prm.value).name, " of kernel ", k.name,
                 " maps ", prm.dim_map.size(), " dims of a rank-", k.grid.size(), " grid");
    }
    ForEachInstr(k.body, [&](const Instr& in) {
      CHECK_PROP(in.dst >= -1 && in.dst < nb, "an instruction of kernel ", k.name, " writes buffer ", in.dst, " of ",
                 nb);
      for (int s : in.srcs)
        CHECK_PROP(s >= 0 && s < nb, "an instruction of kernel ", k.name, " reads buffer ", s, " of ", nb);
      CHECK_PROP(in.param >= -1 && in.param < np, "an instruction of kernel ", k.name, " names param ", in.param,
                 " of ", np);
      if (in.opcode == Opcode::TLOAD || in.opcode == Opcode::TSTORE)
        CHECK_PROP(in.param >= 0, "a load or store of kernel ", k.name, " has no parameter");
    });
  }
  size_t ops = 0;
  p.tile_graph.body.ForEach([&](const TileOp& t) {
    ++ops;
    CHECK_PROP(kernel_of_op.count(t.id), "tile_op#", t.id, " (", t.op, ") runs in no kernel");
  });
  CHECK_PROP(ops == kernel_of_op.size(), "the kernels run ", kernel_of_op.size(), " tile ops of ", ops);
  std::vector<int> launches(nk, 0);
  std::set<int> ids;
  g.body.ForEach([&](const Launch& l) {
    CHECK_PROP(l.kernel >= 0 && l.kernel < nk, "launch#", l.id, " names kernel ", l.kernel, " of ", nk);
    CHECK_PROP(ids.insert(l.id).second, "launch#", l.id, " appears twice");
    ++launches[l.kernel];
  });
  for (int i = 0; i < nk; ++i)
    CHECK_PROP(launches[i] == 1, "kernel ", g.kernels[i].name, " is launched ", launches[i], " times");
}

void CheckBuffersAllocated(const BlockGraph& g, const MachineModel& m, const Check& check) {
  for (const Kernel& k : g.kernels) {
    std::set<int> used;
    ForEachInstr(k.body, [&](const Instr& in) {
      if (in.dst >= 0) used.insert(in.dst);
      used.insert(in.srcs.begin(), in.srcs.end());
    });
    std::map<MemSpace, std::pair<int64_t, int64_t>> span;  // [lowest offset, highest end) per space
    for (int b : used) {
      const TileBuf& t = k.bufs[b];
      const int64_t end = t.offset + t.bytes();
      CHECK_PROP(t.offset >= 0 && t.offset % m.ub_align == 0 && end <= k.ub_bytes, "buffer %", t.name, "#", b,
                 " of kernel ", k.name, " is at offset ", t.offset, " (", t.bytes(), " bytes, scratch ", k.ub_bytes,
                 " bytes, alignment ", m.ub_align, ")");
      CHECK_PROP(t.space != MemSpace::Vec || end <= m.ub_bytes, "buffer %", t.name, "#", b, " of kernel ", k.name,
                 " ends at ", end, ", past the ", m.ub_bytes, " bytes of UB");
      auto [it, fresh] = span.emplace(t.space, std::make_pair(t.offset, end));
      if (!fresh) it->second = {std::min(it->second.first, t.offset), std::max(it->second.second, end)};
    }
    for (auto a = span.begin(); a != span.end(); ++a)
      for (auto b = std::next(a); b != span.end(); ++b)
        CHECK_PROP(a->second.second <= b->second.first || b->second.second <= a->second.first, "memory spaces ",
                   MemSpaceName(a->first), " and ", MemSpaceName(b->first), " of kernel ", k.name, " overlap");
    // The operands of one instruction are live together, so they never share bytes.
    auto overlap = [&](int x, int y) {
      const TileBuf &a = k.bufs[x], &b = k.bufs[y];
      return x != y && a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
    };
    ForEachInstr(k.body, [&](const Instr& in) {
      std::vector<int> ops = in.srcs;
      if (in.dst >= 0) ops.push_back(in.dst);
      for (size_t i = 0; i < ops.size(); ++i)
        for (size_t j = i + 1; j < ops.size(); ++j)
          CHECK_PROP(!overlap(ops[i], ops[j]), "buffers %", k.bufs[ops[i]].name, " and %", k.bufs[ops[j]].name,
                     " of one instruction of kernel ", k.name, " overlap");
    });
  }
}

void CheckExecGraphBuilt(const CompiledProgram& p, const Check& check) {
  const ExecGraph& g = p.exec_graph;
  const int nk = static_cast<int>(g.kernels.size());
  CHECK_PROP(g.point_access.size() == g.kernels.size() && g.kernels.size() == p.block_graph.kernels.size(),
             g.kernels.size(), " kernels, ", g.point_access.size(), " access lists, ", p.block_graph.kernels.size(),
             " kernels in the block graph");
  std::set<int> ids;
  auto walk = [&](auto&& self, const Region<LaunchNode>& r) -> void {
    std::set<int> earlier;  // the launches before this one in its region
    for (auto& e : r.entries) {
      if (e.loop) {
        self(self, *e.loop->body);
        continue;
      }
      const LaunchNode& n = *e.item;
      CHECK_PROP(n.kernel >= 0 && n.kernel < nk, "task_group#", n.id, " names kernel ", n.kernel, " of ", nk);
      CHECK_PROP(ids.insert(n.id).second, "task_group#", n.id, " appears twice");
      for (int d : n.deps)
        CHECK_PROP(earlier.count(d), "task_group#", n.id, " depends on #", d, ", not earlier in its region");
      for (int d : n.pointwise_after)
        CHECK_PROP(std::find(n.deps.begin(), n.deps.end(), d) != n.deps.end(), "task_group#", n.id,
                   " is point-wise after #", d, " without depending on it");
      for (int v : n.reads) CHECK_PROP(ValidValue(g.fn, v), "task_group#", n.id, " reads value ", v);
      for (int v : n.writes) CHECK_PROP(ValidValue(g.fn, v), "task_group#", n.id, " writes value ", v);
      earlier.insert(n.id);
    }
  };
  walk(walk, g.body);
  size_t launches = 0;
  p.block_graph.body.ForEach([&](const Launch&) { ++launches; });
  CHECK_PROP(static_cast<int>(ids.size()) == g.num_launches && ids.size() == launches, ids.size(), " task groups, ",
             g.num_launches, " counted, ", launches, " launches in the block graph");
}

#undef CHECK_PROP

}  // namespace

const char* IRPropertyName(IRProperty p) {
  switch (p) {
    case IRProperty::ShapesInferred:
      return "shapes_inferred";
    case IRProperty::TilesExpanded:
      return "tiles_expanded";
    case IRProperty::KernelsPartitioned:
      return "kernels_partitioned";
    case IRProperty::BuffersAllocated:
      return "buffers_allocated";
    case IRProperty::ExecGraphBuilt:
      return "exec_graph_built";
  }
  return "?";
}

void CheckProperty(IRProperty p, const CompiledProgram& prog, const MachineModel& m, const std::string& pass) {
  const Check check{pass, p};
  switch (p) {
    case IRProperty::ShapesInferred:
      return CheckShapesInferred(prog.tensor_graph, check);
    case IRProperty::TilesExpanded:
      return CheckTilesExpanded(prog.tile_graph, check);
    case IRProperty::KernelsPartitioned:
      return CheckKernelsPartitioned(prog, check);
    case IRProperty::BuffersAllocated:
      return CheckBuffersAllocated(prog.block_graph, m, check);
    case IRProperty::ExecGraphBuilt:
      return CheckExecGraphBuilt(prog, check);
  }
}

}  // namespace pypto
