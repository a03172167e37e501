#include "codegen/cpp_codegen.h"

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "codegen/fused_loops.h"
#include "codegen/row_fusion.h"

namespace pypto {

const char* CppType(DataType t) {
  switch (t) {
    case DataType::FP32:
      return "float";
    case DataType::FP16:
      return "pto::half";
    case DataType::BF16:
      return "pto::bfloat16";
    case DataType::INT8:
      return "int8_t";
    case DataType::INT16:
      return "int16_t";
    case DataType::INT32:
      return "int32_t";
    case DataType::INT64:
      return "int64_t";
    case DataType::UINT8:
      return "uint8_t";
    case DataType::BOOL:
      return "bool";
    case DataType::UINT16:
      return "uint16_t";
    case DataType::UINT32:
      return "uint32_t";
    case DataType::UINT64:
      return "uint64_t";
    case DataType::FP8E4M3:
    case DataType::FP8E5M2:
    case DataType::FP8E8M0:
    case DataType::FP4E2M1X2:
    case DataType::HF8:
    case DataType::FP4E1M2X2:
      return "uint8_t";  // storage only: bytes
  }
  return "float";
}

namespace {

// Column instructions over a tile axis that the kernel runs slab by slab on raw UB pointers.
bool IsColSlabOp(Opcode op) {
  return op == Opcode::TCOLARGMAX || op == Opcode::TCOLARGMIN || op == Opcode::TCOLCUMSUM ||
         op == Opcode::TCOLCUMPROD || op == Opcode::TCOLGATHER;
}

// "<prefix><n>" (built by appending: GCC 12 warns, wrongly, on "v" + std::to_string(n) with -Wrestrict).
std::string Named(const char* prefix, int n) { return std::string(prefix).append(std::to_string(n)); }

// A C++ string literal of `s`.
std::string Quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

class KernelWriter {
 public:
  KernelWriter(const Function& fn, const Kernel& k, const std::string& entry, const std::set<int>& read_roots)
      : fn_(fn), k_(k), entry_(entry), read_roots_(read_roots) {}

  // Bytes of the cube arena this kernel uses (a C++ constant expression).
  const std::string& ArenaBytesExpr() const { return arena_bytes_; }

  std::string Write(std::vector<std::string>& symbols) {
    CollectSymbols();
    symbols = symbols_;
    int G = static_cast<int>(k_.grid.size());
    os_ << "extern \"C\" void " << entry_ << "(const PyptoKernelCall* call) {\n";
    os_ << "  const int64_t* S = call->sym;\n  (void)S;\n";
    os_ << "  const PyptoParamView* P = call->params;\n  (void)P;\n";
    os_ << "  char* ub = call->ub;\n";
    DeclareCubeBuffers();
    os_ << "  for (int64_t p = call->first; p < call->first + call->count; ++p) {\n";
    os_ << "    if (call->stop && call->stop(call->stop_ctx)) return;\n";
    os_ << "    int64_t rest = p;\n";
    for (int d = G - 1; d >= 0; --d)
      os_ << "    const int64_t c" << d << " = rest % call->grid[" << d << "]; rest /= call->grid[" << d << "];\n";
    for (int d = 0; d < G; ++d) os_ << "    (void)c" << d << ";\n";
    FindViews(k_.body);
    CountReads(k_.body, reads_);
    for (int b : views_)
      os_ << "    char* v" << b << " = ub + " << k_.bufs[b].offset << "; int64_t vs" << b << " = " << k_.bufs[b].cols()
          << ";\n";
    DeclareDirectAccumulators();
    Body(k_.body, 2);
    os_ << "  }\n}\n\n";
    return os_.str();
  }

 private:
  void Collect(const Expr& e, std::set<std::string>& out) {
    for (auto& v : e.FreeVars())
      if (v.rfind("$", 0) != 0) out.insert(v);
  }
  void CollectInstrs(const std::vector<Instr>& body, std::set<std::string>& out) {
    for (auto& in : body) {
      for (auto& c : in.coord) Collect(c, out);
      if (in.scalar_expr.defined()) Collect(in.scalar_expr, out);
      if (in.trip.defined()) Collect(in.trip, out);
      CollectInstrs(in.body, out);
    }
  }
  void CollectSymbols() {
    std::set<std::string> s;
    for (auto& b : k_.bufs)
      for (auto& v : b.valid) Collect(v, s);
    CollectInstrs(k_.body, s);
    symbols_.assign(s.begin(), s.end());
    for (size_t i = 0; i < symbols_.size(); ++i) slot_[symbols_[i]] = static_cast<int>(i);
  }

  std::string E(const Expr& e) {
    const ExprNode* n = e.node();
    switch (n->kind) {
      case ExprKind::Const:
        return "int64_t(" + std::to_string(n->value) + ")";
      case ExprKind::Var:
        if (n->name == kReduceVar) return "r";
        if (n->name == kInnerKVar) return "s";
        if (n->name.rfind("$c", 0) == 0) return "c" + n->name.substr(2);
        return "S[" + std::to_string(slot_.at(n->name)) + "]";
      case ExprKind::Sum: {
        std::string s = "(int64_t(" + std::to_string(n->value) + ")";
        for (size_t i = 0; i < n->operands.size(); ++i)
          s += " + int64_t(" + std::to_string(n->coefs[i]) + ") * " + E(n->operands[i]);
        return s + ")";
      }
      case ExprKind::Mul:
        return "(" + E(n->operands[0]) + " * " + E(n->operands[1]) + ")";
      case ExprKind::FloorDiv:
        return "FloorDiv(" + E(n->operands[0]) + ", " + E(n->operands[1]) + ")";
      case ExprKind::Mod:
        return "FloorMod(" + E(n->operands[0]) + ", " + E(n->operands[1]) + ")";
      case ExprKind::Min:
        return "std::min<int64_t>(" + E(n->operands[0]) + ", " + E(n->operands[1]) + ")";
      case ExprKind::Max:
        return "std::max<int64_t>(" + E(n->operands[0]) + ", " + E(n->operands[1]) + ")";
    }
    return "0";
  }

  std::string Array(const std::vector<int64_t>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "}";
  }
  std::string Array(const std::vector<Expr>& v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + E(v[i]);
    return s + "}";
  }

  // Loaded tiles that only instructions taking a TileRef read may be views of global memory
  // (no copy) when the tile is whole and its rows are evenly spaced there; see LoadView.
  void FindViews(const std::vector<Instr>& body) {
    std::set<int> loaded, raw;
    std::function<void(const std::vector<Instr>&)> scan = [&](const std::vector<Instr>& b) {
      for (auto& in : b) {
        if (in.opcode == Opcode::TLOAD) loaded.insert(in.dst);
        bool raw_use = in.opcode == Opcode::TSTORE || in.opcode == Opcode::TBROADCAST || IsColReduction(in.opcode) ||
                       IsColSlabOp(in.opcode) || in.opcode == Opcode::TSCATTERND || in.opcode == Opcode::TGATHERND;
        if (raw_use)
          for (int s : in.srcs) raw.insert(s);
        if (in.dst >= 0 && in.opcode != Opcode::TLOAD) raw.insert(in.dst);  // written: must be UB
        scan(in.body);
      }
    };
    scan(body);
    for (int b : loaded)
      if (!raw.count(b) && k_.bufs[b].space == MemSpace::Vec) views_.insert(b);
  }

  std::string Ptr(int buf) { return "(ub + " + std::to_string(k_.bufs[buf].offset) + ")"; }
  std::string Ref(int buf) {
    const TileBuf& b = k_.bufs[buf];
    std::string ptr = views_.count(buf) ? Named("v", buf) : Ptr(buf);
    std::string stride = views_.count(buf) ? "vs" + std::to_string(buf) : std::to_string(b.cols());
    return std::string("Ref<") + CppType(b.dtype) + ">(" + ptr + ", " + std::to_string(b.rows()) + ", " +
           std::to_string(b.cols()) + ", " + stride + ", " + E(b.valid.back()) + ")";
  }

  void Body(const std::vector<Instr>& body, int indent) {
    std::string pad(indent * 2, ' ');
    FusionEnv env{fn_,
                  k_,
                  [this](const Expr& e) { return E(e); },
                  [this](int b) { return views_.count(b) ? Named("v", b) : Ptr(b); },
                  [this](int b) { return views_.count(b) ? Named("vs", b) : std::to_string(k_.bufs[b].cols()); },
                  reads_,
                  views_,
                  StreamParams()};
    for (size_t i = 0; i < body.size(); ++i) {
      if (size_t rn = RowFusedRegion(env, body, i)) {
        std::string fallback;
        for (size_t j = i; j < i + rn; ++j) fallback += pad + Instruction(body[j]) + ";\n";
        os_ << EmitRowFusedRegion(env, body, i, rn, fallback, pad);
        i += rn - 1;
        continue;
      }
      size_t n = FusableRun(env, body, i);
      if (n >= 2) {  // (a run may be one elementwise instruction and the row reduction of it)
        std::string fallback;
        for (size_t j = i; j < i + n; ++j) fallback += pad + Instruction(body[j]) + ";\n";
        os_ << EmitFusedRun(env, body, i, n, fallback, pad);
        i += n - 1;
        continue;
      }
      const Instr& in = body[i];
      if (FoldsZero(body, i) && k_.bufs[in.dst].space == MemSpace::Acc) {
        zero_acc_.insert(in.dst);
        os_ << pad << "// " << Ptr(in.dst) << " = 0: folded into the first TMATMUL_ACC\n";
        continue;
      }
      if (in.opcode == Opcode::LOOP) {
        std::string v = in.var == kInnerKVar ? "s" : "r";
        os_ << pad << "for (int64_t " << v << " = 0; " << v << " < " << E(in.trip) << "; ++" << v << ") {\n";
        bool inner = in.var == kInnerKVar, was = in_inner_;
        if (!inner) os_ << pad << "  if (call->stop && call->stop(call->stop_ctx)) return;\n";
        in_inner_ = in_inner_ || inner;
        Body(in.body, indent + 1);
        in_inner_ = was;
        os_ << pad << "}\n";
        continue;
      }
      if (i + 1 < body.size() && FusesCvtStore(in, body[i + 1])) {  // converted straight into the output
        const Instr& st = body[i + 1];
        const TileBuf& d = k_.bufs[in.dst];
        os_ << pad << "CvtStoreNDStream<" << CppType(d.dtype) << ", " << d.shape.size() << ">(" << Ptr(in.srcs[0])
            << ", " << Array(d.shape) << ", " << Array(d.valid) << ", " << Array(st.coord) << ", P[" << st.param
            << "]);\n";
        ++i;
        continue;
      }
      if (in.opcode == Opcode::TSTORE && direct_acc_.count(in.srcs[0])) {  // stored unless it lived there
        os_ << pad << "if (a" << in.srcs[0] << " == reinterpret_cast<" << CppType(k_.bufs[in.srcs[0]].dtype) << "*>"
            << Ptr(in.srcs[0]) << ") " << Instruction(in) << ";\n";
        continue;
      }
      os_ << pad << Instruction(in) << ";\n";
    }
  }

  // Left and Right tiles hold the CPU's cube layouts (see cube_support.hpp), which differ in size
  // from the tile, so they live outside the UB scratch: in one per-thread arena that all kernels
  // of the module share (a task runs to its end before its thread runs another), so the packed
  // operands of consecutive kernels take the same cache lines instead of separate ones.
  void DeclareCubeBuffers() {
    std::string offset = "0";
    for (auto& b : k_.bufs) {
      if (b.space != MemSpace::Left && b.space != MemSpace::Right) continue;
      int64_t rows = b.shape[b.shape.size() - 2], cols = b.cols();
      std::string T = CppType(b.dtype);
      std::string bytes = "ArenaBytes<CubeT<" + T + ">>(" + (b.space == MemSpace::Left ? "LeftElems<" : "RightElems<") +
                          T + ">(" + std::to_string(rows) + ", " + std::to_string(cols) + "))";
      os_ << "  CubeT<" << T << ">* const " << CubeBuf(b.id) << " = reinterpret_cast<CubeT<" << T << ">*>(cube_arena + "
          << offset << ");\n";
      offset += " + " + bytes;
      // Left is read through a pointer and a row stride (its own copy, the Mat tile in place, or a
      // packing shared by the launch's tasks), Right through a pointer (its own copy or a shared one).
      if (b.space == MemSpace::Left)
        os_ << "  const CubeT<" << T << ">* " << CubeBuf(b.id) << "p = " << CubeBuf(b.id) << "; int64_t "
            << CubeBuf(b.id) << "ld = LeftLd<" << T << ">(" << cols << ");\n";
      else
        os_ << "  const CubeT<" << T << ">* " << CubeBuf(b.id) << "p = " << CubeBuf(b.id) << ";\n";
      if (PackReusable(b.id)) {
        reusable_.insert(b.id);
        os_ << "  PackedWindow " << CubeBuf(b.id) << "w;\n";
        // Shared by the launch's tasks when the grid has points that read the same windows.
        std::string cond = SharedPackCondition(b.id);
        if (!cond.empty()) {
          shared_.insert(b.id);
          os_ << "  const bool " << CubeBuf(b.id) << "s = call->shared != nullptr && (" << cond << ");\n";
        }
      }
    }
    arena_bytes_ = offset;
  }
  // The grid dims a Left/Right buffer's windows do not depend on, as "call->grid[d] > 1 || ...":
  // the points along them read the same windows ("" when there is none).
  std::string SharedPackCondition(int buf) {
    std::set<std::string> vars;
    auto add = [&](const Instr* in) {
      for (auto& e : in->coord)
        for (auto& v : e.FreeVars()) vars.insert(v);
    };
    std::vector<const Instr*> extracts = FindAll(Opcode::TEXTRACT, buf);
    for (const Instr* x : extracts) {
      add(x);
      for (const Instr* l : FindAll(Opcode::TLOAD, x->srcs[0])) add(l);
    }
    std::string cond;
    if (extracts.empty()) return cond;
    for (size_t d = 0; d < k_.grid.size(); ++d) {
      auto c = k_.grid[d].as_const();
      if ((c && *c == 1) || vars.count(GridVar(static_cast<int>(d)))) continue;
      cond += (cond.empty() ? "" : " || ") + std::string("call->grid[") + std::to_string(d) + "] > 1";
    }
    return cond;
  }
  // A Left/Right buffer may keep its packing from one point to the next when the tensor it is
  // extracted from is only read by this kernel (nothing this kernel stores can change it).
  bool PackReusable(int buf) {
    int param = -1;
    for (const Instr* x : FindAll(Opcode::TEXTRACT, buf))
      for (const Instr* l : FindAll(Opcode::TLOAD, x->srcs[0])) param = l->param;
    if (param < 0) return false;
    int src = Root(k_.params[param].value);
    for (auto& q : k_.params)
      if (q.write && Root(q.value) == src) return false;
    return true;
  }
  // The instructions `op` writing buffer `dst`, at any loop depth.
  std::vector<const Instr*> FindAll(Opcode op, int dst) const {
    std::vector<const Instr*> found;
    std::function<void(const std::vector<Instr>&)> find = [&](const std::vector<Instr>& body) {
      for (auto& in : body) {
        if (in.opcode == op && in.dst == dst) found.push_back(&in);
        find(in.body);
      }
    };
    find(k_.body);
    return found;
  }
  // The tensor a value is, or is a view of.
  int Root(int value) const { return fn_.Root(value); }
  // An accumulator whose only use is the store of it to a tensor of its dtype accumulates in
  // that tensor directly (when its rows are contiguous there): the store, a pass over the
  // whole tile, goes away. Its zeroing must fold into the first TMATMUL_ACC (see Body).
  // Not when the rows are a multiple of 4 KiB apart: the micro-kernel's six C rows would then
  // fall in one L1 set (measured: 86 vs 95 GFLOP/s for a 256 x 256 x 256 step with C rows 8 KiB
  // apart), so it accumulates in the Acc tile and stores once.
  void DeclareDirectAccumulators() {
    for (size_t i = 0; i < k_.body.size(); ++i) {
      const Instr& in = k_.body[i];
      if (in.opcode != Opcode::TSTORE) continue;
      int b = in.srcs[0];
      const TileBuf& t = k_.bufs[b];
      const Value& v = fn_.value(k_.params[in.param].value);
      if (t.space != MemSpace::Acc || t.dtype != v.dtype || reads_[b] != 1 || t.shape.size() < 2) continue;
      bool reads_target = false;  // (the operands are read in place while C is written)
      for (auto& q : k_.params) reads_target = reads_target || (q.read && Root(q.value) == Root(v.id));
      if (reads_target) continue;
      bool folded = false;
      for (size_t j = 0; j + 1 < k_.body.size(); ++j) folded = folded || (FoldsZero(k_.body, j) && k_.body[j].dst == b);
      if (!folded) continue;
      std::string T = CppType(t.dtype), R = std::to_string(t.shape.size()), P = "P[" + std::to_string(in.param) + "]";
      std::string n = "a" + std::to_string(b);
      os_ << "    " << T << "* " << n << " = reinterpret_cast<" << T << "*>" << Ptr(b) << "; int64_t " << n
          << "ld = " << t.cols() << ";\n";
      os_ << "    if (" << P << ".stride[" << R << " - 1] == 1 && " << P << ".stride[" << R << " - 2] * int64_t(sizeof("
          << T << ")) % 4096 != 0) { const auto d = MatLoad<" << T << ", " << R << ">(" << Array(in.coord) << ", " << P
          << "); " << n << " = const_cast<" << T << "*>(d.p); " << n << "ld = d.rs; }\n";
      direct_acc_.insert(b);
    }
  }
  // TCVT of an fp32 tile to fp16 / bf16 (round to nearest even) whose result only the next
  // instruction reads, storing it whole to an output no kernel reads back: one pass that
  // converts into the output with streaming stores, instead of a converted tile then a copy.
  // Params whose stores may stream past the cache: outputs no kernel of the program reads back.
  std::set<int> StreamParams() const {
    std::set<int> out;
    for (size_t p = 0; p < k_.params.size(); ++p) {
      const Value& v = fn_.value(k_.params[p].value);
      if (k_.params[p].write && v.kind != ValueKind::Temp && !read_roots_.count(fn_.Root(v.id)))
        out.insert(static_cast<int>(p));
    }
    return out;
  }
  bool FusesCvtStore(const Instr& cvt, const Instr& st) {
    if (cvt.opcode != Opcode::TCVT || st.opcode != Opcode::TSTORE || st.srcs.empty() || st.srcs[0] != cvt.dst)
      return false;
    const TileBuf& d = k_.bufs[cvt.dst];
    const TileBuf& s = k_.bufs[cvt.srcs[0]];
    if (s.dtype != DataType::FP32 || (d.dtype != DataType::BF16 && d.dtype != DataType::FP16) ||
        cvt.round != RoundMode::RINT || reads_[cvt.dst] != 1 || views_.count(cvt.dst) || views_.count(cvt.srcs[0]) ||
        d.shape != s.shape || d.shape.size() < 1)
      return false;
    const Value& v = fn_.value(k_.params[st.param].value);
    return v.kind != ValueKind::Temp && !read_roots_.count(fn_.Root(v.id)) && v.dtype == d.dtype;
  }
  // acc = 0 followed by the K loop: the loop's first TMATMUL_ACC writes instead of adding
  // (every step covers the whole valid block), which saves a pass over the accumulator.
  static bool FoldsZero(const std::vector<Instr>& body, size_t i) {
    const Instr& in = body[i];
    return in.opcode == Opcode::TEXPANDS && !in.scalar_expr.defined() && in.scalar == 0 && i + 1 < body.size() &&
           body[i + 1].opcode == Opcode::LOOP && body[i + 1].trip.as_const() && *body[i + 1].trip.as_const() >= 1;
  }
  std::string AccPtr(int b) {
    if (direct_acc_.count(b)) return "a" + std::to_string(b) + ", a" + std::to_string(b) + "ld";
    const TileBuf& c = k_.bufs[b];
    return "reinterpret_cast<" + std::string(CppType(c.dtype)) + "*>" + Ptr(b) + ", " + std::to_string(c.cols());
  }
  std::string CubeBuf(int b) {
    std::string name(1, k_.bufs[b].space == MemSpace::Left ? 'L' : 'R');
    return name.append(std::to_string(b));
  }
  std::string ValidAt(int b, int from_end) {
    const TileBuf& t = k_.bufs[b];
    return E(t.valid[t.valid.size() - from_end]);
  }

  // The condition under which a reusable Left/Right is packed again ("" if always packed).
  std::string KeptPacking(int buf, const std::string& base) {
    if (!reusable_.count(buf)) return "";
    return "if (" + CubeBuf(buf) + "w.Changes(" + base + ", " + ValidAt(buf, 2) + ", " + ValidAt(buf, 1) + ")) ";
  }

  std::string CubeInstruction(const Instr& in) {
    const Opcode op = in.opcode;
    if (op == Opcode::TLOAD) {
      const TileBuf& b = k_.bufs[in.dst];
      return "const auto m" + std::to_string(in.dst) + " = MatLoad<" + CppType(b.dtype) + ", " +
             std::to_string(b.shape.size()) + ">(" + Array(in.coord) + ", P[" + std::to_string(in.param) + "])";
    }
    if (op == Opcode::TEXTRACT) {
      const TileBuf& d = k_.bufs[in.dst];
      std::string m = "m" + std::to_string(in.srcs[0]);
      std::string base = m + ".p + " + E(in.coord[0]) + " * " + m + ".rs + " + E(in.coord[1]) + " * " + m + ".cs";
      // Element (i, j) of the window is base[i * rs + j * cs]; transposed, base[j * rs + i * cs].
      std::string first = in.transpose ? m + ".cs" : m + ".rs", second = in.transpose ? m + ".rs" : m + ".cs";
      if (d.space == MemSpace::Left) {
        std::string L = CubeBuf(in.dst),
                    ld = "LeftLd<" + std::string(CppType(d.dtype)) + ">(" + std::to_string(d.cols()) + ")";
        std::string args = ld + ", " + base + ", " + first + ", " + second + ", " + ValidAt(in.dst, 2) + ", " +
                           ValidAt(in.dst, 1) + ")";
        std::string T = CppType(d.dtype);
        std::string call = "PackLeft<" + T + ">(" + L + ", " + args;
        std::string pack = KeptPacking(in.dst, base) + call + "; " + L + "p = " + L + "; " + L + "ld = " + ld;
        if (shared_.count(in.dst))
          pack = KeptPacking(in.dst, base) + L + "p = " + L + "s ? PackLeftShared<" + T + ">(call->shared, " + L +
                 ", " + args + " : (" + call + ", " + L + "); " + L + "ld = " + ld;
        if (d.dtype != DataType::FP32 || in.transpose) return pack;
        // fp32 rows already contiguous: read A in place unless its rows are a multiple of 4 KiB
        // apart (then the micro-kernel's six rows would share L1 sets, so copy them).
        return "if (" + m + ".cs == 1 && " + m + ".rs % 1024 != 0) { " + L + "p = " + base + "; " + L + "ld = " + m +
               ".rs; } else { " + pack + "; }";
      }
      std::string R = CubeBuf(in.dst), T = CppType(d.dtype);
      std::string args =
          base + ", " + first + ", " + second + ", " + ValidAt(in.dst, 2) + ", " + ValidAt(in.dst, 1) + ")";
      if (shared_.count(in.dst))
        return KeptPacking(in.dst, base) + R + "p = " + R + "s ? PackRightShared<" + T + ">(call->shared, " + R + ", " +
               args + " : (PackRight<" + T + ">(" + R + ", " + args + ", " + R + ")";
      return KeptPacking(in.dst, base) + "PackRight<" + T + ">(" + R + ", " + args;
    }
    // TMATMUL_ACC
    const TileBuf& c = k_.bufs[in.dst];
    std::string init = !zero_acc_.count(in.dst) ? ", false" : in_inner_ ? ", r == 0 && s == 0" : ", r == 0";
    return "CubeMatmulAcc<" + std::string(CppType(c.dtype)) + ">(" + AccPtr(in.dst) + ", " + CubeBuf(in.srcs[0]) +
           "p, " + CubeBuf(in.srcs[0]) + "ld, " + CubeBuf(in.srcs[1]) + "p, " + ValidAt(in.srcs[0], 2) + ", " +
           ValidAt(in.srcs[1], 1) + ", " + ValidAt(in.srcs[0], 1) + init + ")";
  }

  std::string Instruction(const Instr& in) {
    const Opcode op = in.opcode;
    if ((op == Opcode::TLOAD && k_.bufs[in.dst].space == MemSpace::Mat) || op == Opcode::TEXTRACT ||
        op == Opcode::TMATMUL_ACC)
      return CubeInstruction(in);
    if (op == Opcode::TLOAD || op == Opcode::TSTORE) {
      int buf = op == Opcode::TLOAD ? in.dst : in.srcs[0];
      const TileBuf& b = k_.bufs[buf];
      std::string R = std::to_string(b.shape.size());
      // Stores to tensors no kernel reads back (outputs written once) stream past the cache;
      // workspaces and state such as a running max or accumulator are stored normally.
      const Value& v = fn_.value(k_.params[in.param].value);
      int root = fn_.Root(v.id);
      bool stream = op == Opcode::TSTORE && v.kind != ValueKind::Temp && !read_roots_.count(root);
      if (op == Opcode::TLOAD && views_.count(buf))
        return "v" + std::to_string(buf) + " = LoadView<" + CppType(b.dtype) + ", " + R + ">(" + Ptr(buf) + ", " +
               Array(b.shape) + ", " + Array(b.valid) + ", " + Array(in.coord) + ", P[" + std::to_string(in.param) +
               "], vs" + std::to_string(buf) + ")";
      std::string fn = op == Opcode::TLOAD ? "LoadND<"
                       : in.atomic_add     ? "StoreNDAdd<"
                                           : (stream ? "StoreNDStream<" : "StoreND<");
      return fn + CppType(b.dtype) + ", " + R + ">(" + Ptr(buf) + ", " + Array(b.shape) + ", " + Array(b.valid) + ", " +
             Array(in.coord) + ", P[" + std::to_string(in.param) + "])";
    }
    if (op == Opcode::TNOTIFY || op == Opcode::TWAIT) {  // one int32 cell of a window (pypto/dist_signal.hpp)
      std::ostringstream c;
      c << "{ const int64_t at[] = " << Array(in.coord) << "; int32_t* cell = SignalCell(P[" << in.param << "], "
        << in.coord.size() << ", at); ";
      if (op == Opcode::TNOTIFY)
        c << "Notify(cell, " << in.IntScalar() << ", " << static_cast<int>(in.notify) << "); }";
      else
        c << "if (Wait(cell, " << in.IntScalar() << ", " << static_cast<int>(in.cmp) << ", "
          << (in.notify == NotifyOp::AtomicAdd ? 1 : 0) << ", call->stop, call->stop_ctx, \"a signal wait\", "
          << Quoted(FormatLocation(in.loc)) << ")) return; }";
      return c.str();
    }
    if (op == Opcode::TSCATTERND) {  // (no destination tile: before `d`)
      const TileBuf& s = k_.bufs[in.srcs[0]];
      const int R = static_cast<int>(s.shape.size());
      std::ostringstream c;
      c << "{ const int64_t tile[] = " << Array(s.shape) << ", valid[] = " << Array(s.valid)
        << ", start[] = " << Array(in.coord) << "; ScatterND<" << CppType(s.dtype) << ", "
        << CppType(k_.bufs[in.srcs[1]].dtype) << ">(P[" << in.param << "].data, P[" << in.param << "].shape, P["
        << in.param << "].stride, " << R << ", " << Ptr(in.srcs[0]) << ", " << Ptr(in.srcs[1])
        << ", tile, valid, start, " << in.axis << ", " << static_cast<int>(in.scalar) << ", "
        << Quoted(in.what.empty() ? "pypto.scatter" : in.what) << ", " << Quoted(FormatLocation(in.loc)) << "); }";
      return c.str();
    }
    const TileBuf& d = k_.bufs[in.dst];
    std::string T = CppType(d.dtype);
    if (op == Opcode::TPHILOX) {  // key and offset are uint64 bit patterns
      auto u64 = [](const Expr& e) { return "int64_t(" + std::to_string(uint64_t(e.as_const().value())) + "ULL)"; };
      return "PhiloxUniform<" + T + ">(" + Ptr(in.dst) + ", " + E(d.valid.back()) + ", " + E(in.coord[0]) + ", " +
             u64(in.coord[1]) + ", " + u64(in.coord[2]) + ")";
    }
    if (op == Opcode::TGATHERND) {
      const int R = static_cast<int>(d.shape.size());
      std::ostringstream c;
      c << "{ const int64_t tile[] = " << Array(d.shape) << ", valid[] = " << Array(d.valid)
        << ", start[] = " << Array(in.coord) << "; GatherND<" << T << ", " << CppType(k_.bufs[in.srcs[0]].dtype) << ">("
        << Ptr(in.dst) << ", P[" << in.param << "].data, P[" << in.param << "].shape, P[" << in.param << "].stride, "
        << R << ", " << Ptr(in.srcs[0]) << ", tile, valid, start, " << in.axis << ", \"pypto.gather along dim "
        << in.axis << "\", " << Quoted(FormatLocation(in.loc)) << "); }";
      return c.str();
    }
    if (op == Opcode::TBROADCAST) {
      const TileBuf& s = k_.bufs[in.srcs[0]];
      return "BroadcastND<" + T + ", " + std::to_string(d.shape.size()) + ">(" + Ptr(in.dst) + ", " + Array(d.shape) +
             ", " + Ptr(in.srcs[0]) + ", " + Array(s.shape) + ")";
    }
    if (IsColReduction(op)) {  // column reduction over tile axis
      const TileBuf& s = k_.bufs[in.srcs[0]];
      int64_t A = 1, B = 1;
      for (int i = 0; i < in.axis; ++i) A *= s.shape[i];
      for (size_t i = in.axis + 1; i < s.shape.size(); ++i) B *= s.shape[i];
      return "ColReduce<" + T + ">(" + Ptr(in.dst) + ", " + Ptr(in.srcs[0]) + ", " + std::to_string(A) + ", " +
             std::to_string(s.shape[in.axis]) + ", " + std::to_string(B) + ", " + E(s.valid[in.axis]) +
             ", [](auto dd, auto ss) { pto::" + OpcodeName(op) + "(dd, ss); })";
    }
    if (op == Opcode::TCOLGATHER) {
      const TileBuf& s = k_.bufs[in.srcs[0]];
      int64_t A = 1, B = 1;
      for (int i = 0; i < in.axis; ++i) A *= d.shape[i];
      for (size_t i = in.axis + 1; i < d.shape.size(); ++i) B *= d.shape[i];
      std::string what = "pypto.gather along dim " + std::to_string(in.axis);
      std::ostringstream c;
      c << "GatherSlabs<" << T << ", " << CppType(k_.bufs[in.srcs[1]].dtype) << ">(" << Ptr(in.dst) << ", "
        << Ptr(in.srcs[0]) << ", " << Ptr(in.srcs[1]) << ", " << A << ", " << d.shape[in.axis] << ", "
        << s.shape[in.axis] << ", " << B << ", " << E(d.valid[in.axis]) << ", " << E(s.valid[in.axis]) << ", "
        << Quoted(what) << ", " << Quoted(FormatLocation(in.loc)) << ")";
      return c.str();
    }
    if (IsColSlabOp(op)) {
      const TileBuf& s = k_.bufs[in.srcs[0]];
      int64_t A = 1, B = 1;
      for (int i = 0; i < in.axis; ++i) A *= s.shape[i];
      for (size_t i = in.axis + 1; i < s.shape.size(); ++i) B *= s.shape[i];
      bool arg = op == Opcode::TCOLARGMAX || op == Opcode::TCOLARGMIN;
      std::ostringstream c;
      c << "ColSlabs<" << T << ", " << CppType(s.dtype) << ">(" << Ptr(in.dst) << ", " << Ptr(in.srcs[0]) << ", " << A
        << ", " << s.shape[in.axis] << ", " << B << ", " << E(s.valid[in.axis]) << ", "
        << (arg ? int64_t{1} : s.shape[in.axis]) << ", [](auto dd, auto ss) { pto::" << OpcodeName(op)
        << "(dd, ss); })";
      return c.str();
    }
    if (op == Opcode::TCI) return "pto::TCI(" + Ref(in.dst) + ", static_cast<" + T + ">(" + E(in.coord[0]) + "))";
    if (op == Opcode::TCVT) {
      const TileBuf& s = k_.bufs[in.srcs[0]];
      (void)s;
      std::string round =
          in.round == RoundMode::RINT ? "" : std::string(", pto::RoundMode::") + RoundModeName(in.round);
      return "pto::TCVT(" + Ref(in.dst) + ", " + Ref(in.srcs[0]) + round + ")";
    }
    std::string srcs;
    for (int s : in.srcs) srcs += ", " + Ref(s);
    std::string scalar;
    if (op == Opcode::TCMPS) {
      // A comparison takes the scalar in the tile's dtype (numpy and torch round it to it first).
      const TileBuf& s = k_.bufs[in.srcs[0]];
      std::ostringstream lit;
      if (IsFloat(s.dtype))
        lit << ", pto::elem::from_double<" << CppType(s.dtype) << ">(" << DoubleLiteral(in.scalar) << ")";
      else
        lit << ", static_cast<" << CppType(s.dtype) << ">(" << Int64Literal(in.IntScalar()) << ")";
      scalar = lit.str();
    } else if (in.scalar_expr.defined()) {  // a run-time integer of the program's symbols
      scalar = ", static_cast<pto::scalar_t<" + T + ">>(" + E(in.scalar_expr) + ")";
    } else if (in.has_scalar) {
      // Floating tiles take the scalar as a float (pto::scalar_t: 16-bit tiles compute in float,
      // so the scalar is not rounded to 16 bits first); integer scalars are exact.
      if (IsFloat(d.dtype))
        scalar = ", " + FloatLiteral(in.scalar);
      else
        scalar = ", static_cast<" + T + ">(" + Int64Literal(in.IntScalar()) + ")";
    }
    if (op == Opcode::TCMP || op == Opcode::TCMPS || op == Opcode::TROWTOPK || op == Opcode::TROWTOPKIDX)
      scalar.append(", pto::CmpMode::").append(CmpModeName(in.cmp));
    std::string args = Ref(in.dst) + (in.scalar_first ? scalar + srcs : srcs + scalar);
    return "pto::" + std::string(OpcodeName(op)) + "(" + args + ")";
  }

  const Function& fn_;
  const Kernel& k_;
  std::string entry_;
  const std::set<int>& read_roots_;  // tensors some kernel of the program reads
  std::vector<std::string> symbols_;
  std::set<int> views_;    // loaded buffers that may view global memory
  bool in_inner_ = false;  // emitting the body of the L0 loop over K
  std::string arena_bytes_ = "0";
  std::set<int> reusable_;    // Left/Right buffers whose packing may be kept (PackReusable)
  std::set<int> shared_;      // reusable buffers packed into the launch's shared table (SharedPackCondition)
  std::set<int> zero_acc_;    // (see FoldsZero)
  std::set<int> direct_acc_;  // accumulators living in the stored tensor (DeclareDirectAccumulators)
  std::map<int, int> reads_;  // instructions reading each buffer
  std::map<std::string, int> slot_;
  std::ostringstream os_;
};

}  // namespace

GeneratedModule GenerateCpp(const Function& fn, const std::vector<Kernel>& kernels) {
  GeneratedModule m;
  std::ostringstream os;
  os << "// Generated by PyPTO for @" << fn.name << ". Do not edit.\n";
  os << "#include <pypto/kernel_support.hpp>\n\nusing namespace pypto_kernel;\n\n";
  // The cube micro-kernels this library compiles (cube_isa.hpp): the runtime checks them against
  // the CPU level it compiled for.
  os << "extern \"C\" const char* pypto_cube_paths() { return PYPTO_CUBE_PATHS; }\n\n";
  std::set<int> read_roots;
  for (auto& k : kernels)
    for (auto& p : k.params) {
      const Value& v = fn.value(p.value);
      if (p.read) read_roots.insert(fn.Root(v.id));
    }
  std::ostringstream body;
  std::string arena = "0";
  for (auto& k : kernels) {
    std::string entry = "pypto_" + k.name;
    std::vector<std::string> syms;
    body << "// " << k.reason << "\n";
    KernelWriter w(fn, k, entry, read_roots);
    body << w.Write(syms);
    if (w.ArenaBytesExpr() != "0") arena += ", " + w.ArenaBytesExpr();
    m.entry_points.push_back(entry);
    m.symbols.push_back(syms);
  }
  if (arena != "0")
    os << "// The Left and Right tiles of the cube kernels, per thread (see DeclareCubeBuffers).\n"
       << "alignas(64) static thread_local unsigned char cube_arena[std::max<int64_t>({" << arena << "})];\n\n";
  os << body.str();
  m.source = os.str();
  return m;
}

}  // namespace pypto
