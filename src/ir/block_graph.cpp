#include "ir/block_graph.h"

#include <set>
#include <sstream>

namespace pypto {

const char* const kReduceVar = "$r";
const char* const kInnerKVar = "$s";

std::string GridVar(int dim) { return "$c" + std::to_string(dim); }

int64_t TileBuf::bytes() const {
  int64_t n = DataTypeBytes(dtype);
  for (auto d : shape) n *= d;
  return n;
}

int64_t TileBuf::rows() const {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}

std::string Instr::ScalarText() const {
  if (!scalar_int) {
    std::ostringstream os;
    os << scalar;
    return os.str();
  }
  // The double carries the sign: bits of a uint64 above 2^63 read as a negative int64.
  return scalar >= 0 && *scalar_int < 0 ? std::to_string(static_cast<uint64_t>(*scalar_int))
                                        : std::to_string(*scalar_int);
}

void CountReads(const std::vector<Instr>& body, std::map<int, int>& reads) {
  for (auto& in : body) {
    for (int s : in.srcs) ++reads[s];
    CountReads(in.body, reads);
  }
}

static void PrintInstrs(const Kernel& k, const std::vector<Instr>& body, int indent, std::ostringstream& os) {
  std::string pad(indent * 2, ' ');
  auto buf = [&](int id) { return "%" + k.bufs[id].name + "#" + std::to_string(id); };
  for (auto& in : body) {
    os << pad;
    if (in.opcode == Opcode::LOOP) {
      os << "for " << (in.var.empty() ? kReduceVar : in.var) << " in range(" << in.trip.str() << ") {\n";
      PrintInstrs(k, in.body, indent + 1, os);
      os << pad << "}\n";
      continue;
    }
    if (in.dst >= 0) os << buf(in.dst) << " = ";
    os << in.opcode << "(";
    bool first = true;
    if (in.scalar_first) {
      os << in.ScalarText();
      first = false;
    }
    for (int s : in.srcs) {
      os << (first ? "" : ", ") << buf(s);
      first = false;
    }
    if (in.param >= 0) os << (first ? "" : ", ") << "param" << in.param << ShapeStr(in.coord);
    if (in.atomic_add) os << ", atomic add";
    if (in.opcode == Opcode::TEXTRACT) os << ", at=" << ShapeStr(in.coord) << (in.transpose ? ", transpose" : "");
    if (in.opcode == Opcode::TNOTIFY || in.opcode == Opcode::TWAIT) {
      os << ", " << (in.opcode == Opcode::TWAIT ? CmpModeName(in.cmp) : NotifyOpName(in.notify)) << " "
         << in.ScalarText() << (in.opcode == Opcode::TWAIT && in.notify == NotifyOp::AtomicAdd ? ", consume" : "")
         << ")\n";
      continue;
    }
    if (in.opcode == Opcode::TSCATTERND) {
      const char* how[] = {"assign", "add", "multiply"};
      os << ", axis=" << in.axis << ", " << how[static_cast<int>(in.scalar)] << ")\n";
      continue;
    }
    if (in.scalar_expr.defined())
      os << (first ? "" : ", ") << in.scalar_expr.str();
    else if (in.has_scalar && !in.scalar_first)
      os << (first && in.param < 0 ? "" : ", ") << in.ScalarText();
    if (in.opcode == Opcode::TCVT) os << ", " << DataTypeName(in.dtype);
    if (in.opcode == Opcode::TCVT && in.round != RoundMode::RINT) os << ", " << RoundModeName(in.round);
    if (in.opcode == Opcode::TCMP || in.opcode == Opcode::TCMPS) os << ", " << CmpModeName(in.cmp);
    if (in.axis >= 0 && (IsColReduction(in.opcode) || FormOf(in.opcode) == InstrForm::ColExpandBinary ||
                         in.opcode == Opcode::TGATHERND))
      os << ", axis=" << in.axis;
    os << ")\n";
  }
}

std::string PrintKernel(const Function& fn, const Kernel& k) {
  std::ostringstream os;
  os << "kernel " << k.name << " [" << k.core << "] grid=" << ShapeStr(k.grid) << " ub=" << k.ub_bytes << "B {\n";
  os << "  # " << k.reason << "\n";
  if (k.l0_blocks_m * k.l0_blocks_n > 1)
    os << "  # L0 tiles: " << k.l0_blocks_m << " x " << k.l0_blocks_n
       << " per L1 block (the NPU runs them in turn; the host at once)\n";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const auto& p = k.params[i];
    const Value& v = fn.value(p.value);
    os << "  param" << i << " " << (p.read ? "r" : "") << (p.write ? "w" : "") << " %" << v.name << ": "
       << DataTypeName(v.dtype) << ShapeStr(v.shape);
    if (v.kind == ValueKind::View) os << " = %" << fn.value(v.base).name << ShapeStr(v.offsets);
    if (v.kind == ValueKind::Reshape) os << " = reshape %" << fn.value(v.base).name;
    if (v.kind == ValueKind::Temp) os << " (workspace)";
    os << "\n";
  }
  for (auto& b : k.bufs) {
    os << "  tile %" << b.name << "#" << b.id << ": " << b.space << " " << DataTypeName(b.dtype)
       << IntList(b.shape, "[", "]") << " valid=" << ShapeStr(b.valid);
    if (b.offset >= 0) os << " @" << (b.space == MemSpace::Vec ? "ub" : MemSpaceName(b.space)) << "+" << b.offset;
    os << "\n";
  }
  PrintInstrs(k, k.body, 1, os);
  os << "}\n";
  return os.str();
}

std::string PrintBlockGraph(const BlockGraph& g) {
  std::ostringstream os;
  os << "block_graph @" << g.fn.name << " {\n";
  for (auto& k : g.kernels) os << PrintKernel(g.fn, k);
  os << "program {\n";
  PrintRegionText(g.body, 1, os, [&](const Launch& l, int indent, std::ostream& o) {
    o << std::string(indent * 2, ' ') << "launch#" << l.id << " " << g.kernels[l.kernel].name << "\n";
  });
  os << "}\n}\n";
  return os.str();
}

static std::string WindowKey(const PointAccess& a, const SymEnv* env) {
  if (!env || !a.names_other_vars) return a.keys[0];
  std::string key;
  for (auto& e : a.windows[0]) key += e.Substitute(*env).str() + ";";
  return key;
}

// Whether the two (one-window) accesses touch the same window per point. The runtime asks this
// for every dependency between launches of different loop iterations, so the common case is
// answered without building expressions: the same window as written, with the symbols it names
// bound to the same values in both launches.
static bool SameWindow(const PointAccess& a, const SymEnv* env_a, const PointAccess& b, const SymEnv* env_b) {
  if (a.keys[0] == b.keys[0]) {
    if ((!env_a && !env_b) || !a.names_other_vars) return true;
    bool same = env_a && env_b;
    for (auto& v : a.other_vars) {
      if (!same) break;
      auto ia = env_a->find(v), ib = env_b->find(v);
      same = same && ia != env_a->end() && ib != env_b->end() && ia->second == ib->second;
    }
    if (same) return true;
  }
  return WindowKey(a, env_a) == WindowKey(b, env_b);
}

std::string PointwiseBlocker(const Function& fn, const std::vector<PointAccess>& a, const std::vector<PointAccess>& b,
                             const std::vector<int64_t>* grid, const SymEnv* env_a, const SymEnv* env_b) {
  for (auto& pa : a) {
    const PointAccess* pb = nullptr;
    for (auto& x : b)
      if (x.root == pa.root) pb = &x;
    if (!pb || (!pa.write && !pb->write)) continue;  // not shared, or read by both
    const std::string& name = fn.value(pa.root).name;
    if (!pa.regular || !pb->regular) return "%" + name + " is touched at several tiles per point";
    if (pa.windows.size() != 1 || pb->windows.size() != 1 || !SameWindow(pa, env_a, *pb, env_b))
      return "%" + name + " is touched at different windows per point";
    // Points must touch disjoint windows, or point p would need the other points too.
    std::set<std::string> vars;
    for (size_t i = 0; i < pa.windows[0].size(); i += 2)
      for (auto& v : pa.windows[0][i].FreeVars()) vars.insert(v);
    for (size_t d = 0; grid && d < grid->size(); ++d)
      if ((*grid)[d] != 1 && !vars.count(GridVar(static_cast<int>(d))))
        return "%" + name + " is touched at the same window by every point along grid dim " + std::to_string(d);
  }
  return "";
}

static void PrintTaskGroup(const ExecGraph& g, const LaunchNode& n, int indent, std::ostream& os) {
  auto names = [&](const std::vector<int>& vs) {
    std::string s;
    for (int v : vs) s += (s.empty() ? "%" : ", %") + g.fn.value(v).name;
    return s;
  };
  const Kernel& k = g.kernels[n.kernel];
  os << std::string(indent * 2, ' ') << "task_group#" << n.id << " " << k.name << " on " << k.core << " x grid"
     << ShapeStr(k.grid) << " reads(" << names(n.reads) << ") writes(" << names(n.writes) << ")";
  if (!n.deps.empty()) {
    os << " after(";
    for (size_t i = 0; i < n.deps.size(); ++i) os << (i ? ", #" : "#") << n.deps[i];
    os << ")";
  }
  if (!n.pointwise_after.empty()) {
    os << " pointwise(";
    for (size_t i = 0; i < n.pointwise_after.size(); ++i) os << (i ? ", #" : "#") << n.pointwise_after[i];
    os << ")";
  }
  if (!n.pointwise_reason.empty()) os << "  # not point-wise: " << n.pointwise_reason;
  os << "\n";
}

std::string PrintExecGraph(const ExecGraph& g) {
  std::ostringstream os;
  os << "execution_graph @" << g.fn.name << " {\n";
  PrintRegionText(
      g.body, 1, os, [&](const LaunchNode& n, int indent, std::ostream& o) { PrintTaskGroup(g, n, indent, o); },
      "  # iterations are independent tasks unless their regions overlap");
  if (!g.single_buffer.empty()) {
    os << "  # one buffer (consumed point-wise):";
    for (int v : g.single_buffer) os << " %" << g.fn.value(v).name;
    os << "; other workspaces alternate between two\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace pypto
