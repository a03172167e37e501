#include "codegen/row_fusion.h"

#include <algorithm>
#include <sstream>

#include "codegen/cpp_codegen.h"
#include "codegen/fused_loops.h"

namespace pypto {

namespace {

std::vector<int64_t> LeadingDims(const TileBuf& b) { return {b.shape.begin(), b.shape.end() - 1}; }

bool IsCompute(Opcode op) { return FusableOps().count(op) || RowReduction(op); }

// The root tensor a parameter addresses, and the window an instruction touches there.
int RootOf(const Function& fn, int value) { return fn.Root(value); }
std::string RootWindow(const Function& fn, const Kernel& k, const Instr& in) {
  const KernelParam& p = k.params[in.param];
  const Value& v = fn.value(p.value);
  std::string w;
  for (size_t d = 0; d < p.dim_map.size(); ++d) {
    int m = p.dim_map[d];
    if (m < 0) continue;
    Expr start = in.coord[d] + (v.kind == ValueKind::View ? v.offsets[m] : Expr(0));
    w += std::to_string(m) + ":" + start.str() + ";";
  }
  return w;
}

// Every TLOAD/TSTORE of the kernel, recursively.
void MemoryInstrs(const std::vector<Instr>& body, std::vector<const Instr*>& out) {
  for (auto& in : body) {
    if (in.param >= 0 && (in.opcode == Opcode::TLOAD || in.opcode == Opcode::TSTORE)) out.push_back(&in);
    MemoryInstrs(in.body, out);
  }
}

class RowRegion {
 public:
  RowRegion(const FusionEnv& env, const std::vector<Instr>& body, size_t i, size_t n)
      : env_(env), k_(env.kernel), body_(body), i_(i), n_(n) {
    for (size_t j = i; j < i + n; ++j) {
      const Instr& in = body[j];
      for (int s : in.srcs) ++reads_in_[s];
      if (in.opcode == Opcode::TLOAD)
        loaded_.insert(in.dst);
      else if (in.opcode != Opcode::TSTORE)
        defined_.insert(in.dst);
    }
    // A tile made here and stored once to a tensor the kernel never loads is made right in its
    // place there (when the row is contiguous): no scratch row and no copy.
    std::vector<const Instr*> mem;
    MemoryInstrs(k_.body, mem);
    std::map<int, int> stores;
    for (size_t j = i; j < i + n; ++j)
      if (body[j].opcode == Opcode::TSTORE) ++stores[body[j].srcs[0]];
    for (size_t j = i; j < i + n; ++j) {
      const Instr& st = body[j];
      if (st.opcode != Opcode::TSTORE || !defined_.count(st.srcs[0]) || stores[st.srcs[0]] != 1 ||
          ReadsAfter(st.srcs[0]))
        continue;
      int root = RootOf(env.fn, k_.params[st.param].value);
      bool loaded = false;
      for (const Instr* m : mem)
        loaded = loaded || (m->opcode == Opcode::TLOAD && RootOf(env.fn, k_.params[m->param].value) == root);
      if (!loaded && k_.bufs[st.srcs[0]].dtype == DataType::FP32) direct_[st.srcs[0]] = &st;
    }
    FindConversions();
    FindColumnWork();
    for (size_t j = i; j < i + n; ++j) {  // 1 x C operands of TCOLEXPAND*: the same row for every row
      auto it = FusableOps().find(body[j].opcode);
      if (it != FusableOps().end() && it->second.form == Form::ColExpand) row_consts_.insert(body[j].srcs[1]);
    }
  }

  // Why the stretch can not run row by row ("" if it can).
  std::string Blocker() const {
    std::set<int> seen_def;
    int compute = 0;
    for (size_t j = i_; j < i_ + n_; ++j) {
      const Instr& in = body_[j];
      for (int s : in.srcs)
        if (defined_.count(s) && !seen_def.count(s)) return "reads a tile before the stretch defines it";
      if (in.opcode != Opcode::TSTORE) {
        if (seen_def.count(in.dst) || (loaded_.count(in.dst) && defined_.count(in.dst))) return "redefines a tile";
        seen_def.insert(in.dst);
      }
      compute += IsCompute(in.opcode);
      if (in.opcode == Opcode::TSTORE && in.atomic_add) return "adds into memory atomically";
      if (in.opcode == Opcode::TSTORE && !StoreIsSafe(in)) return "stores to a tensor it reads elsewhere";
    }
    bool streams = false;
    for (auto& [b, st] : direct_) streams = streams || Streams(b);
    // One instruction gains only when its result streams into the output from registers.
    if (compute < (streams ? 1 : 2)) return "too short";
    for (size_t j = i_; j < i_ + n_; ++j) {  // a row constant is read only as one
      const Instr& in = body_[j];
      auto it = FusableOps().find(in.opcode);
      bool col_expand = it != FusableOps().end() && it->second.form == Form::ColExpand;
      for (size_t s = 0; s < in.srcs.size(); ++s)
        if (row_consts_.count(in.srcs[s]) && !(col_expand && s == 1)) return "a 1 x C tile is read as a row";
      if (in.opcode == Opcode::TLOAD && k_.bufs[in.dst].rows() == 1 && !row_consts_.count(in.dst) &&
          k_.bufs[in.dst].rows() !=
              k_.bufs[body_[i_].opcode == Opcode::TSTORE ? body_[i_].srcs[0] : body_[i_].dst].rows())
        return "a 1 x C load that no TCOLEXPAND reads";
    }
    for (size_t j = i_; j < i_ + n_; ++j) {  // 16-bit tiles only as converted loads and stores
      const Instr& in = body_[j];
      bool ok = in.opcode == Opcode::TCVT     ? widen_.count(in.dst) || narrow_.count(in.dst)
                : in.opcode == Opcode::TLOAD  ? Fp32(in.dst) || widened_from_.count(in.dst)
                : in.opcode == Opcode::TSTORE ? Fp32(in.srcs[0]) || narrow_.count(in.srcs[0])
                                              : true;
      if (!ok) return "a 16-bit tile is used other than as a converted load or store";
    }
    for (int b : loaded_)
      if (ReadsAfter(b) && !widen_.count(b)) return "a loaded tile is read after it";
    // Tiles that stay in UB: those read after the stretch, and inputs made before it. Rows of
    // one must not land on another's memory (scratch rows and loads do not use UB).
    std::vector<int> ub;
    for (int b : defined_)
      if (ReadsAfter(b)) ub.push_back(b);
    for (auto& [b, ld] : widen_)
      if (ReadsAfter(b)) ub.push_back(b);
    for (auto& [b, n] : reads_in_)
      if (!defined_.count(b) && !loaded_.count(b)) ub.push_back(b);
    for (size_t a = 0; a < ub.size(); ++a)
      for (size_t c = a + 1; c < ub.size(); ++c) {
        const TileBuf &x = k_.bufs[ub[a]], &y = k_.bufs[ub[c]];
        if (x.offset < y.offset + y.bytes() && y.offset < x.offset + x.bytes()) return "UB tiles overlap";
      }
    return "";
  }

  std::string Emit(const std::string& fallback, const std::string& pad) const {
    std::ostringstream os;
    os << "#if defined(__AVX2__) && defined(__FMA__)\n" << pad << "{  // row-fused:";
    for (size_t j = i_; j < i_ + n_; ++j) os << " " << body_[j].opcode;
    os << "\n";
    std::string p2 = pad + "  ", p3 = p2 + "  ";
    for (size_t j = i_; j < i_ + n_; ++j) {  // scratch rows: tiles made and used here, loads that copy
      const Instr& in = body_[j];
      if (in.opcode == Opcode::TSTORE || (!loaded_.count(in.dst) && ReadsAfter(in.dst)) || column_.count(&in) ||
          !Fp32(in.dst))
        continue;
      os << p2 << "alignas(64) float rb" << in.dst << "[" << (k_.bufs[in.dst].cols() + 7) / 8 * 8 << "];\n";
    }
    const TileBuf& first = k_.bufs[body_[i_].opcode == Opcode::TSTORE ? body_[i_].srcs[0] : body_[i_].dst];
    os << ColumnPrologue(first.rows(), p2);
    for (size_t j = i_; j < i_ + n_; ++j) {  // row constants loaded in the stretch, once
      const Instr& in = body_[j];
      if (in.opcode != Opcode::TLOAD || !row_consts_.count(in.dst)) continue;
      const TileBuf& b = k_.bufs[in.dst];
      os << p2 << "alignas(64) float rcs" << in.dst << "[" << (b.cols() + 7) / 8 * 8 << "];\n";
      os << p2 << "const float* rc" << in.dst << " = LoadRow<float, " << b.shape.size() << ">(rcs" << in.dst << ", "
         << Dims(b.shape) << ", " << Valid(b) << ", " << Coord(in) << ", P[" << in.param << "], 0);\n";
    }
    os << p2 << "for (int64_t fr = 0; fr < " << first.rows() << "; ++fr) {\n";
    for (auto& [b, st] : direct_) {
      os << p3 << "float* w" << b << " = RowTarget<float, " << k_.bufs[b].shape.size() << ">(rb" << b << ", "
         << Dims(k_.bufs[b].shape) << ", " << Valid(k_.bufs[b]) << ", " << Coord(*st) << ", P[" << st->param
         << "], fr);\n";
      if (Streams(b)) {
        // A misaligned output row (numpy's arrays start 16 bytes into a page) is made in the
        // scratch row and streamed in at its store (StreamRowTo), not stored with a read of
        // every destination line.
        os << p3 << "float* d" << b << " = nullptr;\n";
        os << p3 << "if (w" << b << " != rb" << b << " && !VAligned(w" << b << ")) {\n";
        os << p3 << "  d" << b << " = w" << b << ";\n";
        os << p3 << "  w" << b << " = rb" << b << ";\n";
        os << p3 << "}\n";
        os << p3 << "const bool sw" << b << " = w" << b << " != rb" << b << " && VAligned(w" << b << ");\n";
      }
    }
    for (size_t j = i_; j < i_ + n_;) {
      const Instr& in = body_[j];
      if (column_.count(&in)) {  // done before or after the row loop
        ++j;
        continue;
      }
      if (in.opcode == Opcode::TCVT) {  // a widening load (its TLOAD emitted nothing) or a narrowing store
        if (auto w = widen_.find(in.dst); w != widen_.end()) {
          const Instr& ld = *w->second;
          const TileBuf& b = k_.bufs[ld.dst];
          // Widened into its UB row when read after the stretch, into the tensor row its store
          // writes when made in place there (the store is skipped then), else into a scratch row.
          std::string to = ReadsAfter(in.dst)      ? "(reinterpret_cast<float*>(" + env_.ptr(in.dst) + ") + fr * " +
                                                         env_.stride(in.dst) + ")"
                           : direct_.count(in.dst) ? "w" + std::to_string(in.dst)
                                                   : "rb" + std::to_string(in.dst);
          os << p3 << "const float* r" << in.dst << " = LoadRowWiden<" << CppType(b.dtype) << ", " << b.shape.size()
             << ">(" << to << ", " << Dims(b.shape) << ", " << Valid(b) << ", " << Coord(ld) << ", P[" << ld.param
             << "], fr);\n";
        }
        ++j;
        continue;
      }
      if (in.opcode == Opcode::TLOAD && (widened_from_.count(in.dst) || row_consts_.count(in.dst))) {
        ++j;
        continue;
      }
      if (in.opcode == Opcode::TSTORE && narrow_.count(in.srcs[0])) {
        const TileBuf& b = k_.bufs[in.srcs[0]];
        os << p3 << "StoreRowNarrow<" << CppType(b.dtype) << ", " << b.shape.size() << ">("
           << Row(narrow_.at(in.srcs[0])) << ", " << Dims(b.shape) << ", " << Valid(b) << ", " << Coord(in) << ", P["
           << in.param << "], fr);\n";
        ++j;
        continue;
      }
      if (in.opcode == Opcode::TLOAD) {
        const TileBuf& b = k_.bufs[in.dst];
        os << p3 << "const float* r" << in.dst << " = LoadRow<float, " << b.shape.size() << ">(rb" << in.dst << ", "
           << Dims(b.shape) << ", " << Valid(b) << ", " << Coord(in) << ", P[" << in.param << "], fr);\n";
        ++j;
        continue;
      }
      if (in.opcode == Opcode::TSTORE) {
        const TileBuf& b = k_.bufs[in.srcs[0]];
        os << p3;
        if (direct_.count(in.srcs[0]) && Streams(in.srcs[0]))
          os << "if (d" << in.srcs[0] << ") StreamRowTo<" << b.shape.size() << ">(d" << in.srcs[0] << ", rb"
             << in.srcs[0] << ", " << Valid(b) << ");\n"
             << p3 << "else ";
        if (direct_.count(in.srcs[0])) os << "if (w" << in.srcs[0] << " == rb" << in.srcs[0] << ") ";
        os << "StoreRow<float, " << b.shape.size() << ">(" << Row(in.srcs[0]) << ", " << Dims(b.shape) << ", "
           << Valid(b) << ", " << Coord(in) << ", P[" << in.param << "], fr);\n";
        ++j;
        continue;
      }
      size_t g = GroupEnd(j);
      os << Group(j, g, p3);
      j = g;
    }
    os << p2 << "}\n";
    bool streams = false;
    for (auto& [b, st] : direct_) streams = streams || Streams(b);
    if (streams) os << p2 << "_mm_sfence();  // order the streamed rows before the task is reported done\n";
    for (size_t j = i_; j < i_ + n_; ++j) {  // stores of R x 1 results, after the rows
      const Instr& in = body_[j];
      if (in.opcode != Opcode::TSTORE || !column_.count(&in)) continue;
      const TileBuf& b = k_.bufs[in.srcs[0]];
      os << p2 << "StoreColumn<float, " << b.shape.size() << ">(" << ColumnOf(in.srcs[0]) << ", " << Dims(b.shape)
         << ", " << Valid(b) << ", " << Coord(in) << ", P[" << in.param << "], " << b.rows() << ");\n";
    }
    os << pad << "}\n#else\n" << fallback << "#endif\n";
    return os.str();
  }

 private:
  bool Fp32(int b) const { return k_.bufs[b].dtype == DataType::FP32; }
  // A tile made in place in an output no kernel reads (written once): its rows stream past the
  // cache (no read-for-ownership of the destination lines: a third of a streaming kernel's traffic).
  bool Streams(int b) const {
    auto d = direct_.find(b);
    return d != direct_.end() && env_.stream_params.count(d->second->param);
  }
  int TotalReads(int b) const {
    auto t = env_.reads.find(b);
    return t == env_.reads.end() ? 0 : t->second;
  }

  // 16-bit tiles that only convert: TLOAD(h) read only by TCVT(f <- h) becomes one widening
  // row load of f (LoadRowWiden), and TCVT(h <- f) read only by TSTORE(h) one narrowing row
  // store (StoreRowNarrow). The 16-bit tiles never exist then, nor the passes over them.
  void FindConversions() {
    std::map<int, const Instr*> loads;
    for (size_t j = i_; j < i_ + n_; ++j) {
      const Instr& in = body_[j];
      if (in.opcode == Opcode::TLOAD) loads[in.dst] = &in;
      if (in.opcode != Opcode::TCVT || in.srcs.size() != 1) continue;
      const int h = in.srcs[0], f = in.dst;
      const DataType hd = k_.bufs[h].dtype, fd = k_.bufs[f].dtype;
      if (Is16BitFloat(hd) && fd == DataType::FP32 && loads.count(h) && TotalReads(h) == 1 &&
          k_.bufs[h].shape == k_.bufs[f].shape) {
        widen_[f] = loads[h];
        widened_from_.insert(h);
        defined_.erase(f);
        loaded_.insert(f);
      }
      if (fd == DataType::FP32 || !Is16BitFloat(fd) || hd != DataType::FP32 || TotalReads(f) != 1 ||
          k_.bufs[h].shape != k_.bufs[f].shape)
        continue;
      for (size_t x = j + 1; x < i_ + n_; ++x)
        if (body_[x].opcode == Opcode::TSTORE && body_[x].srcs[0] == f) narrow_[f] = h;
    }
  }

  bool ReadsAfter(int b) const {
    auto t = env_.reads.find(b);
    auto r = reads_in_.find(b);
    return (t == env_.reads.end() ? 0 : t->second) > (r == reads_in_.end() ? 0 : r->second);
  }

  // A store's rows may be written as they are made if every other access of the tensor in the
  // kernel is in this stretch at the very same window (then row r is read before it is written,
  // or after, exactly as in the instruction order).
  bool StoreIsSafe(const Instr& st) const {
    int root = RootOf(env_.fn, k_.params[st.param].value);
    std::string w = RootWindow(env_.fn, k_, st);
    std::vector<const Instr*> mem;
    MemoryInstrs(k_.body, mem);
    for (const Instr* m : mem) {
      if (m == &st || RootOf(env_.fn, k_.params[m->param].value) != root) continue;
      bool inside = m >= &body_[i_] && m < &body_[i_] + n_;
      if (!inside || RootWindow(env_.fn, k_, *m) != w) return false;
    }
    return true;
  }

  // The TLOAD of tile b when its rows are read in place from memory (LoadRow), else null.
  const Instr* DirectLoad(int b) const {
    if (!loaded_.count(b) || widen_.count(b) || row_consts_.count(b) || column_tiles_.count(b)) return nullptr;
    for (size_t j = i_; j < i_ + n_; ++j)
      if (body_[j].opcode == Opcode::TLOAD && body_[j].dst == b) return &body_[j];
    return nullptr;
  }
  // Where row fr of a tile is: scratch, a loaded row, or its UB row.
  std::string Row(int b) const {
    if (row_consts_.count(b))
      return loaded_.count(b) ? "rc" + std::to_string(b) : "reinterpret_cast<const float*>(" + env_.ptr(b) + ")";
    if (column_tiles_.count(b)) return "(" + ColumnOf(b) + " + fr)";
    if (loaded_.count(b)) return "r" + std::to_string(b);
    if (direct_.count(b)) return "w" + std::to_string(b);
    if (defined_.count(b) && !ReadsAfter(b)) return "rb" + std::to_string(b);
    return "(reinterpret_cast<float*>(" + env_.ptr(b) + ") + fr * " + env_.stride(b) + ")";
  }

  std::string Dims(const std::vector<int64_t>& v) const {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::string("int64_t(") + std::to_string(v[i]) + ")";
    return s + "}";
  }
  std::string Exprs(const std::vector<Expr>& v) const {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + env_.expr(v[i]);
    return s + "}";
  }
  std::string Valid(const TileBuf& b) const { return Exprs(b.valid); }
  std::string Coord(const Instr& in) const { return Exprs(in.coord); }

  // A group: consecutive instructions over rows of the same width, in one column loop.
  size_t GroupEnd(size_t j) const {
    auto width = [&](const Instr& in) {
      const TileBuf& b = k_.bufs[RowReduction(in.opcode) ? in.srcs[0] : in.dst];
      return std::to_string(b.cols()) + "/" + env_.expr(b.valid.back());
    };
    std::string w = width(body_[j]);
    size_t g = j;
    bool reduced = false;      // a reduction's result is whole only after the loop: reductions close a group
    std::set<int> reductions;  // results of the group's reductions: no instruction of it may read one
    for (;;) {
      // A row constant's load emits nothing here (its row is read before the row loop): it
      // does not end the group when the instruction after it joins (rmsnorm's gamma).
      size_t h = g;
      while (h < i_ + n_ && RowConstLoad(body_[h])) ++h;
      if (h == i_ + n_ || !IsCompute(body_[h].opcode) || width(body_[h]) != w || column_.count(&body_[h])) break;
      bool red = RowReduction(body_[h].opcode) != nullptr;
      if (reduced && !red) break;
      bool reads_reduction = false;
      for (int s : body_[h].srcs) reads_reduction = reads_reduction || reductions.count(s);
      if (reads_reduction) break;  // e.g. the sum of a min of a 1-wide row: a new group
      if (red) reductions.insert(body_[h].dst);
      reduced = reduced || red;
      g = h + 1;
    }
    return g;
  }

  bool RowConstLoad(const Instr& in) const { return in.opcode == Opcode::TLOAD && row_consts_.count(in.dst); }

  std::string Group(size_t j, size_t g, const std::string& pad) const {
    std::ostringstream os;
    std::map<int, int> def, reads_in_group;  // buffer -> defining instruction in the group
    for (size_t x = j; x < g; ++x) {
      if (RowConstLoad(body_[x])) continue;
      if (!RowReduction(body_[x].opcode)) def[body_[x].dst] = static_cast<int>(x);
      for (int s : body_[x].srcs) ++reads_in_group[s];
    }
    const Instr& lead = body_[j];
    const TileBuf& wb = k_.bufs[RowReduction(lead.opcode) ? lead.srcs[0] : lead.dst];
    std::string p2 = pad + "  ";
    os << pad << "{\n" << p2 << "const int64_t vc = " << env_.expr(wb.valid.back()) << ";\n";
    // Operands from outside the group: rows read from memory, or row values broadcast.
    std::set<int> rows_in, values;
    for (size_t x = j; x < g; ++x) {
      const Instr& in = body_[x];
      if (RowConstLoad(in)) continue;
      const OpInfo* op = RowReduction(in.opcode) ? nullptr : &FusableOps().at(in.opcode);
      for (size_t s = 0; s < in.srcs.size(); ++s) {
        int b = in.srcs[s];
        if (def.count(b) && def[b] < static_cast<int>(x)) continue;
        if (op && op->form == Form::RowExpand && s == 1)
          values.insert(b);
        else
          rows_in.insert(b);
      }
    }
    for (int b : rows_in) os << p2 << "const float* in" << b << " = " << Row(b) << ";\n";
    for (int b : values) os << p2 << "const VecF rv" << b << " = VSet1(" << Row(b) << "[0]);\n";
    // Results stored to their rows: those read outside the group.
    std::set<int> rows_out;
    for (auto& [b, x] : def) {
      auto t = env_.reads.find(b);
      int total = t == env_.reads.end() ? 0 : t->second;
      if (total > reads_in_group[b] || total == 0) rows_out.insert(b);
    }
    for (int b : rows_out) os << p2 << "float* out" << b << " = " << Row(b) << ";\n";
    std::vector<size_t> reds;
    for (size_t x = j; x < g; ++x)
      if (RowReduction(body_[x].opcode)) {
        reds.push_back(x);
        os << p2 << "RowAcc acc" << x << " = RowAccInit(" << RowReduction(body_[x].opcode)->init << ", vc);\n";
      }
    ColumnLoop loop;
    for (size_t x = j; x < g; ++x) {
      if (RowConstLoad(body_[x])) continue;
      loop.ops.push_back(&body_[x]);
      if (RowReduction(body_[x].opcode)) loop.acc[&body_[x]] = "acc" + std::to_string(x);
    }
    loop.rows_in = rows_in;
    loop.values = values;
    loop.rows_out = rows_out;
    for (int b : rows_out)
      if (Row(b) == "w" + std::to_string(b) && Streams(b)) loop.stream[b] = "sw" + std::to_string(b);
    for (int b : rows_in)  // the first pass over a row read from memory prefetches a later one
      if (const Instr* ld = DirectLoad(b); ld && prefetched_.insert(b).second)
        loop.prefetch[b] = std::to_string(kPrefetchRows) + " * P[" + std::to_string(ld->param) + "].stride[" +
                           std::to_string(k_.bufs[b].shape.size() - 2) + "]";
    os << EmitColumnLoop(loop, p2);
    for (size_t x : reds) {
      const Reduction& red = *RowReduction(body_[x].opcode);
      os << EmitLaneFold(red, "RowAccFinish(acc" + std::to_string(x) + ", " + red.vec + ")", Row(body_[x].dst) + "[0]",
                         p2);
    }
    os << pad << "}\n";
    return os.str();
  }

  // Work on R x 1 tiles (one value per row: a running max, a row sum, a rescale factor) that
  // depends only on such tiles loaded in the stretch does not need the row loop: it runs
  // before it as one column loop over all rows (a row at a time it would be a masked one-lane
  // step per row, its exp latency on every row's critical path), and its stores run after it.
  // A load moves first only if no store to its tensor precedes it; a store moves last only if
  // no load of its tensor follows it.
  void FindColumnWork() {
    const int64_t rows = k_.bufs[body_[i_].opcode == Opcode::TSTORE ? body_[i_].srcs[0] : body_[i_].dst].rows();
    auto column = [&](int b) { return k_.bufs[b].cols() == 1 && k_.bufs[b].rows() == rows && rows <= 4096 && Fp32(b); };
    auto root = [&](const Instr& in) { return RootOf(env_.fn, k_.params[in.param].value); };
    bool computes = false;
    for (size_t j = i_; j < i_ + n_; ++j) {
      const Instr& in = body_[j];
      if (in.opcode == Opcode::TLOAD) {
        bool stored_before = false;
        for (size_t x = i_; x < j; ++x)
          stored_before = stored_before || (body_[x].opcode == Opcode::TSTORE && root(body_[x]) == root(in));
        if (column(in.dst) && !stored_before) Hoist(in, in.dst);
      } else if (in.opcode == Opcode::TSTORE) {
        bool loaded_after = false;
        for (size_t x = j + 1; x < i_ + n_; ++x)
          loaded_after = loaded_after || (body_[x].opcode == Opcode::TLOAD && root(body_[x]) == root(in));
        if (column_tiles_.count(in.srcs[0]) && !loaded_after) column_.insert(&in);
      } else if (FusableOps().count(in.opcode) && column(in.dst) && !ReadsAfter(in.dst)) {
        bool inputs = true;
        for (int b : in.srcs) inputs = inputs && column_tiles_.count(b);
        if (inputs) {
          Hoist(in, in.dst);
          computes = true;
        }
      }
    }
    if (!computes) {  // only loads and stores: nothing gained
      column_.clear();
      column_tiles_.clear();
      return;
    }
    for (int b : column_tiles_) direct_.erase(b);
  }
  void Hoist(const Instr& in, int b) {
    column_.insert(&in);
    column_tiles_.insert(b);
  }
  // The column holding tile b's values of every row (see FindColumnWork).
  std::string ColumnOf(int b) const { return (loaded_.count(b) ? "cl" : "cb") + std::to_string(b); }

  // Declares the columns and computes them, before the row loop.
  std::string ColumnPrologue(int64_t rows, const std::string& pad) const {
    if (column_.empty()) return "";
    std::ostringstream os;
    const int64_t padded = (rows + 7) / 8 * 8;
    ColumnLoop loop;
    for (size_t j = i_; j < i_ + n_; ++j) {
      const Instr& in = body_[j];
      if (!column_.count(&in) || in.opcode == Opcode::TSTORE) continue;
      const TileBuf& b = k_.bufs[in.dst];
      if (in.opcode == Opcode::TLOAD) {
        os << pad << "alignas(64) float cs" << in.dst << "[" << padded << "];\n";
        os << pad << "const float* cl" << in.dst << " = LoadColumn<float, " << b.shape.size() << ">(cs" << in.dst
           << ", " << Dims(b.shape) << ", " << Valid(b) << ", " << Coord(in) << ", P[" << in.param << "], " << rows
           << ");\n";
        loop.rows_in.insert(in.dst);
      } else {
        os << pad << "alignas(64) float cb" << in.dst << "[" << padded << "];\n";
        loop.ops.push_back(&in);
        loop.rows_out.insert(in.dst);
      }
    }
    std::string p2 = pad + "  ";
    os << pad << "{  // R x 1 values of all rows\n" << p2 << "const int64_t vc = " << rows << ";\n";
    for (int b : loop.rows_in) os << p2 << "const float* in" << b << " = cl" << b << ";\n";
    for (int b : loop.rows_out) os << p2 << "float* out" << b << " = cb" << b << ";\n";
    os << EmitColumnLoop(loop, p2) << pad << "}\n";
    return os.str();
  }

  const FusionEnv& env_;
  const Kernel& k_;
  const std::vector<Instr>& body_;
  size_t i_, n_;
  std::map<int, int> reads_in_;
  std::set<int> loaded_, defined_;
  std::map<int, const Instr*> direct_;  // tiles made in place in the tensor their store writes
  std::set<const Instr*> column_;       // instructions done outside the row loop (FindColumnWork)
  std::set<int> column_tiles_;          // the R x 1 tiles they load or make
  std::map<int, const Instr*> widen_;   // fp32 tile -> the TLOAD of the 16-bit tile it widens
  std::set<int> widened_from_;          // those 16-bit tiles
  std::map<int, int> narrow_;           // 16-bit tile stored -> the fp32 tile it narrows
  std::set<int> row_consts_;            // 1 x C tiles read by TCOLEXPAND* (Row gives their one row)
  mutable std::set<int> prefetched_;    // loaded rows whose first pass prefetches (Emit)
  static constexpr int kPrefetchRows = 2;
};

// Whether body[j] can take part in a row loop over tiles whose leading dims are `lead`.
bool RowLocal(const Kernel& k, const Instr& in, std::vector<int64_t>& lead) {
  // 16-bit tiles take part only as loads, stores and conversions, which RowRegion fuses into
  // widening loads and narrowing stores (or refuses).
  auto fits = [&](int b, bool sixteen_ok = false) {
    const TileBuf& t = k.bufs[b];
    bool dtype_ok = t.dtype == DataType::FP32 || (sixteen_ok && Is16BitFloat(t.dtype));
    if (!dtype_ok || t.space != MemSpace::Vec || t.shape.size() < 2) return false;
    if (lead.empty()) lead = LeadingDims(t);
    return LeadingDims(t) == lead;
  };
  // A 1 x C tile (every leading dim 1) is loaded once before the row loop (a row constant,
  // read by TCOLEXPAND* of every row); RowRegion checks that nothing else reads it.
  auto row_constant = [&](int b) {
    const TileBuf& t = k.bufs[b];
    return t.dtype == DataType::FP32 && t.space == MemSpace::Vec && t.shape.size() >= 2 && t.rows() == 1;
  };
  if (in.opcode == Opcode::TLOAD && in.param >= 0 && row_constant(in.dst) && !lead.empty() &&
      std::any_of(lead.begin(), lead.end(), [](int64_t d) { return d != 1; }))
    return true;
  if (in.opcode == Opcode::TLOAD) return in.param >= 0 && fits(in.dst, true);
  if (in.opcode == Opcode::TSTORE) return in.param >= 0 && fits(in.srcs[0], true);
  if (in.opcode == Opcode::TCVT)  // the fused row conversions round to nearest even
    return in.round == RoundMode::RINT && in.dst >= 0 && in.srcs.size() == 1 && fits(in.dst, true) &&
           fits(in.srcs[0], true) &&
           (k.bufs[in.dst].dtype == DataType::FP32) != (k.bufs[in.srcs[0]].dtype == DataType::FP32);
  if (in.dst < 0 || !fits(in.dst)) return false;
  auto it = FusableOps().find(in.opcode);
  const bool col_expand = it != FusableOps().end() && it->second.form == Form::ColExpand;
  for (size_t s = 0; s < in.srcs.size(); ++s) {
    if (in.srcs[s] == in.dst) return false;
    if (col_expand && s == 1 ? !row_constant(in.srcs[s]) : !fits(in.srcs[s])) return false;
  }
  const TileBuf& d = k.bufs[in.dst];
  if (RowReduction(in.opcode)) return d.cols() == 1 && in.srcs.size() == 1;
  if (it == FusableOps().end()) return false;
  for (size_t s = 0; s < in.srcs.size(); ++s) {
    const TileBuf& b = k.bufs[in.srcs[s]];
    bool row_value = it->second.form == Form::RowExpand && s == 1;
    bool row_const = col_expand && s == 1;
    if (row_value ? b.cols() != 1 : row_const ? b.cols() != d.cols() : b.shape != d.shape) return false;
  }
  return true;
}

}  // namespace

size_t RowFusedRegion(const FusionEnv& env, const std::vector<Instr>& body, size_t i) {
  std::vector<int64_t> lead;
  size_t n = 0;
  while (i + n < body.size() && RowLocal(env.kernel, body[i + n], lead)) ++n;
  // The longest prefix that can run row by row (a stretch ending in loads is no better).
  for (; n >= 2; --n) {
    if (body[i + n - 1].opcode == Opcode::TLOAD) continue;
    if (RowRegion(env, body, i, n).Blocker().empty()) return n;
  }
  return 0;
}

std::string EmitRowFusedRegion(const FusionEnv& env, const std::vector<Instr>& body, size_t i, size_t n,
                               const std::string& fallback, const std::string& pad) {
  return RowRegion(env, body, i, n).Emit(fallback, pad);
}

}  // namespace pypto
