#include "codegen/fused_loops.h"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

namespace pypto {

const std::map<Opcode, OpInfo>& FusableOps() {
  static const std::map<Opcode, OpInfo> ops = [] {
    using O = Opcode;
    std::map<Opcode, OpInfo> m;
    struct Bin {
      O tile, scalar, row, col;
      const char* expr;
    };
    const Bin bin[] = {{O::TADD, O::TADDS, O::TROWEXPANDADD, O::TCOLEXPANDADD, "VAdd($A, $B)"},
                       {O::TSUB, O::TSUBS, O::TROWEXPANDSUB, O::TCOLEXPANDSUB, "VSub($A, $B)"},
                       {O::TMUL, O::TMULS, O::TROWEXPANDMUL, O::TCOLEXPANDMUL, "VMul($A, $B)"},
                       {O::TDIV, O::TDIVS, O::TROWEXPANDDIV, O::TCOLEXPANDDIV, "VDiv($A, $B)"},
                       {O::TMAX, O::TMAXS, O::TROWEXPANDMAX, O::TCOLEXPANDMAX, "MaxNan($A, $B)"},
                       {O::TMIN, O::TMINS, O::TROWEXPANDMIN, O::TCOLEXPANDMIN, "MinNan($A, $B)"}};
    for (const Bin& b : bin) {
      m[b.tile] = {Form::Binary, b.expr};
      m[b.scalar] = {Form::Scalar, b.expr};
      m[b.row] = {Form::RowExpand, b.expr};
      m[b.col] = {Form::ColExpand, b.expr};
    }
    m[O::TROWEXPANDEXPDIF] = {Form::RowExpand, "VSub($A, $B)", true};
    m[O::TEXP] = {Form::Unary, "$A", true};
    m[O::TABS] = {Form::Unary, "VAbs($A)"};
    m[O::TNEG] = {Form::Unary, "VNeg($A)"};
    // max(0, x) returns x when x is NaN and keeps -0 as the reference does.
    m[O::TRELU] = {Form::Unary, "VRelu($A)"};
    m[O::TSQRT] = {Form::Unary, "VSqrt($A)"};
    m[O::TRECIP] = {Form::Unary, "VDiv(VSet1(1.0f), $A)"};
    m[O::TRSQRT] = {Form::Unary, "RsqrtExact($A)"};
    // The math instructions with a vector form call it: the same code as the instruction.
#define PYPTO_FUSE_UNARY_Vec(NAME, FN) m[O::NAME] = {Form::Unary, "PYPTO_VMATH1(" #FN ", $A)"};
#define PYPTO_FUSE_UNARY_Elem(NAME, FN)
#define PYPTO_FUSE_UNARY(X, NAME, DTYPES, FN, IMPL) PYPTO_FUSE_UNARY_##IMPL(NAME, FN)
    PTO_MATH_UNARY(PYPTO_FUSE_UNARY, _)
#define PYPTO_FUSE_BINARY_Vec(NAME, SNAME, FN)                  \
  m[O::NAME] = {Form::Binary, "PYPTO_VMATH2(" #FN ", $A, $B)"}; \
  m[O::SNAME] = {Form::Scalar, "PYPTO_VMATH2(" #FN ", $A, $B)"};
#define PYPTO_FUSE_BINARY_Elem(NAME, SNAME, FN)
#define PYPTO_FUSE_BINARY(X, NAME, SNAME, DTYPES, FN, IMPL) PYPTO_FUSE_BINARY_##IMPL(NAME, SNAME, FN)
    PTO_MATH_BINARY(PYPTO_FUSE_BINARY, _)
    m[O::TTANH] = {Form::Unary, "VTanh($A)"};  // 16 lanes at once with AVX-512 (kernel_vec.hpp)
#undef PYPTO_FUSE_UNARY_Vec
#undef PYPTO_FUSE_UNARY_Elem
#undef PYPTO_FUSE_UNARY
#undef PYPTO_FUSE_BINARY_Vec
#undef PYPTO_FUSE_BINARY_Elem
#undef PYPTO_FUSE_BINARY
    return m;
  }();
  return ops;
}

const Reduction* RowReduction(Opcode op) {
  static const Reduction sum{"Add8", "0.0f", "+"};
  // acc = MaxNan8(acc, v): a NaN element, once in acc, stays there.
  static const Reduction max{"MaxNan8", "-__builtin_inff()", "pto::elem::max"};
  static const Reduction min{"MinNan8", "__builtin_inff()", "pto::elem::min"};
  if (op == Opcode::TROWSUM) return &sum;
  if (op == Opcode::TROWMAX) return &max;
  if (op == Opcode::TROWMIN) return &min;
  return nullptr;
}

std::string EmitLaneFold(const Reduction& red, const std::string& acc, const std::string& dst, const std::string& pad) {
  std::string fold = std::string(red.scalar) == "+" ? "h += l[q]" : std::string("h = ") + red.scalar + "(h, l[q])";
  return pad + "{\n" + pad + "  alignas(32) float l[8];\n" + pad + "  _mm256_store_ps(l, " + acc + ");\n" + pad +
         "  float h = l[0];\n" + pad + "  for (int q = 1; q < 8; ++q) " + fold + ";\n" + pad + "  " + dst + " = h;\n" +
         pad + "}\n";
}

std::string FloatLiteral(double v) {
  if (std::isnan(v)) return "__builtin_nanf(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inff()" : "-__builtin_inff()";
  if (v == 0) return std::signbit(v) ? "(-0.0f)" : "0.0f";  // "-0" would be the integer 0
  std::ostringstream lit;                                   // 17 digits: the double itself, then rounded to float once
  lit.precision(17);
  lit << v;
  return "static_cast<float>(" + lit.str() + ")";
}

std::string DoubleLiteral(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "-__builtin_inf()";
  if (v == 0) return std::signbit(v) ? "(-0.0)" : "0.0";
  std::ostringstream lit;
  lit.precision(17);
  lit << v;
  std::string s = lit.str();
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";  // a double, not an int
  return s;
}

std::string Int64Literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return "int64_t(" + std::to_string(v) + "LL)";
}

std::string ScalarLiteral(double v) { return "VSet1(" + FloatLiteral(v) + ")"; }

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string EmitColumnLoop(const ColumnLoop& loop, const std::string& pad) {
  std::map<int, size_t> def;  // buffer -> position of the op making it
  for (size_t x = 0; x < loop.ops.size(); ++x)
    if (!RowReduction(loop.ops[x]->opcode)) def[loop.ops[x]->dst] = x;
  // One step over `U` vectors (U = 1 when `masked`).
  auto step = [&](int U, bool masked) {
    std::ostringstream s;
    std::string p = pad + "  ";
    auto at = [&](const std::string& name, int u) { return name + "[" + std::to_string(u) + "]"; };
    auto lane = [&](int u) { return u ? " + " + std::to_string(u) + " * kVecLanes" : std::string(); };
    if (masked) s << p << "const VecMask m = VTail(vc - c);\n";
    for (int b : loop.rows_in) {
      std::string x = "x" + std::to_string(b), in = "in" + std::to_string(b) + " + c";
      if (auto pf = loop.prefetch.find(b); pf != loop.prefetch.end() && U > 1)
        s << p << "PrefetchAhead(" << in << ", " << pf->second << ", " << U << " * kVecLanes);\n";
      s << p << "VecF " << x << "[" << U << "];\n";
      for (int u = 0; u < U; ++u)
        s << p << at(x, u) << " = " << (masked ? "VMaskLoad(" + in + ", m)" : "VLoad(" + in + lane(u) + ")") << ";\n";
    }
    for (size_t x = 0; x < loop.ops.size(); ++x) {
      const Instr& in = *loop.ops[x];
      const OpInfo* op = RowReduction(in.opcode) ? nullptr : &FusableOps().at(in.opcode);
      auto operand = [&](size_t idx, int u) -> std::string {
        int b = in.srcs[idx];
        if (op && op->form == Form::RowExpand && idx == 1 && loop.values.count(b)) return "rv" + std::to_string(b);
        auto d = def.find(b);
        return at((d != def.end() && d->second < x ? "t" : "x") + std::to_string(b), u);
      };
      if (const Reduction* red = RowReduction(in.opcode)) {
        const std::string& acc = loop.acc.at(&in);
        for (int u = 0; u < U; ++u) {  // in column order, as one vector at a time would
          std::string v = operand(0, u);
          if (masked)
            s << p << "RowAccTail(" << acc << ", VSelect(m, " << v << ", VSet1(" << red->init << ")), vc - c, "
              << red->vec << ");\n";
          else if (U > 1)
            s << p << "RowAccStep<" << u << ">(" << acc << ", " << v << ", " << red->vec << ");\n";
          else
            s << p << "RowAccRest(" << acc << ", " << v << ", c, vc, " << red->vec << ");\n";
        }
        continue;
      }
      std::string t = "t" + std::to_string(in.dst);
      s << p << "VecF " << t << "[" << U << "];\n";
      for (int u = 0; u < U; ++u) {
        std::string e = op->expr;
        if (in.scalar_first)  // scalar/tile form: the scalar is A, the tile B
          e = ReplaceAll(ReplaceAll(ReplaceAll(e, "$A", "@S"), "$B", operand(0, u)), "@S", ScalarLiteral(in.scalar));
        else
          e = ReplaceAll(e, "$A", operand(0, u));
        if (op->form == Form::Scalar && !in.scalar_first)
          e = ReplaceAll(e, "$B", ScalarLiteral(in.scalar));
        else if (in.srcs.size() > 1)
          e = ReplaceAll(e, "$B", operand(1, u));
        s << p << at(t, u) << " = " << e << ";\n";
      }
      if (op->exp) s << p << "ExpN<" << U << ">(" << t << ");\n";
    }
    for (int b : loop.rows_out) {
      std::string t = "t" + std::to_string(b), out = "out" + std::to_string(b) + " + c";
      auto flag = loop.stream.find(b);
      if (!masked && flag != loop.stream.end()) {  // c is a multiple of the lanes: aligned when the row is
        s << p << "if (" << flag->second << ") {\n";
        for (int u = 0; u < U; ++u) s << p << "  VStream(" << out << lane(u) << ", " << at(t, u) << ");\n";
        s << p << "} else {\n";
        for (int u = 0; u < U; ++u) s << p << "  VStore(" << out << lane(u) << ", " << at(t, u) << ");\n";
        s << p << "}\n";
        continue;
      }
      for (int u = 0; u < U; ++u)
        s << p
          << (masked ? "VMaskStore(" + out + ", m, " + at(t, u) + ")"
                     : "VStore(" + out + lane(u) + ", " + at(t, u) + ")")
          << ";\n";
    }
    return s.str();
  };
  std::ostringstream os;
  os << pad << "int64_t c = 0;\n";
  os << pad << "for (; c + " << kUnroll << " * kVecLanes <= vc; c += " << kUnroll << " * kVecLanes) {\n"
     << step(kUnroll, false) << pad << "}\n";
  os << pad << "for (; c + kVecLanes <= vc; c += kVecLanes) {\n" << step(1, false) << pad << "}\n";
  os << pad << "if (c < vc) {\n" << step(1, true) << pad << "}\n";
  return os.str();
}

namespace {

bool Fp32(const Kernel& k, int b) { return k.bufs[b].dtype == DataType::FP32; }

// The tiles a run reads from memory and the tiles it must store (read after the run).
void RunMemory(const FusionEnv& env, const std::vector<Instr>& body, size_t i, size_t n, std::set<int>& in_mem,
               std::set<int>& out_mem, std::set<int>& row_values) {
  std::map<int, int> reads_in_run, def;
  for (size_t j = i; j < i + n; ++j) {
    for (int s : body[j].srcs) ++reads_in_run[s];
    def[body[j].dst] = static_cast<int>(j);
  }
  for (size_t j = i; j < i + n; ++j) {
    const Instr& in = body[j];
    if (RowReduction(in.opcode)) continue;  // its operand is computed in the run; its result is per row
    Form form = FusableOps().at(in.opcode).form;
    for (size_t s = 0; s < in.srcs.size(); ++s) {
      int b = in.srcs[s];
      if (def.count(b) && def[b] < static_cast<int>(j)) continue;  // computed earlier in the run
      if (form == Form::RowExpand && s == 1)
        row_values.insert(b);
      else
        in_mem.insert(b);
    }
    auto it = env.reads.find(in.dst);
    int total = it == env.reads.end() ? 0 : it->second;
    if (total > reads_in_run[in.dst] || total == 0) out_mem.insert(in.dst);
  }
}

}  // namespace

size_t FusableRun(const FusionEnv& env, const std::vector<Instr>& body, size_t i) {
  const Kernel& k = env.kernel;
  size_t n = 0;
  std::string valid_cols;
  std::vector<int64_t> shape;
  std::set<int> written;
  for (size_t j = i; j < body.size(); ++j) {
    const Instr& in = body[j];
    auto it = FusableOps().find(in.opcode);
    if (it == FusableOps().end() || in.dst < 0 || !Fp32(k, in.dst) || written.count(in.dst)) break;
    bool in_place = false;
    for (int src : in.srcs) in_place = in_place || src == in.dst;
    if (in_place) break;
    const TileBuf& d = k.bufs[in.dst];
    std::string vc = env.expr(d.valid.back());
    if (n == 0) {
      shape = d.shape;
      valid_cols = vc;
    } else if (d.shape != shape || vc != valid_cols) {
      break;
    }
    bool ok = true;
    for (size_t s = 0; s < in.srcs.size(); ++s) {
      int b = in.srcs[s];
      bool row = it->second.form == Form::RowExpand && s == 1;
      const TileBuf& src = k.bufs[b];
      ok = ok && Fp32(k, b) && (row ? src.cols() == 1 && src.rows() == d.rows() : src.shape == shape);
    }
    if (!ok) break;
    written.insert(in.dst);
    ++n;
  }
  // Intermediates live in registers; the stored tiles must not share UB with the tiles the
  // run reads (elements are read and written at different times), so shrink until they don't.
  auto ub_overlap = [&](int a, int b) {
    if (env.views.count(a) || env.views.count(b)) return false;  // global-memory views
    const TileBuf &x = k.bufs[a], &y = k.bufs[b];
    return x.offset < y.offset + y.bytes() && y.offset < x.offset + x.bytes();
  };
  for (; n >= 2; --n) {
    std::set<int> in_mem, out_mem, rows;
    RunMemory(env, body, i, n, in_mem, out_mem, rows);
    bool clash = false;
    for (int o : out_mem) {
      for (int r : in_mem) clash = clash || (r != o && ub_overlap(r, o));
      for (int r : rows) clash = clash || (r != o && ub_overlap(r, o));
      for (int p : out_mem) clash = clash || (p != o && ub_overlap(p, o));
    }
    if (!clash) break;
  }
  // A row reduction of the run's last result closes the run: it accumulates in registers as
  // the elements are made, saving a pass over the tile.
  if (n >= 1 && i + n < body.size()) {
    const Instr& red = body[i + n];
    const Instr& last = body[i + n - 1];
    if (RowReduction(red.opcode) && red.srcs.size() == 1 && red.srcs[0] == last.dst && Fp32(k, red.dst) &&
        k.bufs[red.dst].cols() == 1 && k.bufs[red.dst].rows() == k.bufs[last.dst].rows() &&
        env.expr(k.bufs[last.dst].valid.back()) == valid_cols) {
      std::set<int> in_mem, out_mem, rows;
      RunMemory(env, body, i, n + 1, in_mem, out_mem, rows);
      bool clash = false;
      for (int b : in_mem) clash = clash || ub_overlap(b, red.dst);
      for (int b : out_mem) clash = clash || ub_overlap(b, red.dst);
      for (int b : rows) clash = clash || ub_overlap(b, red.dst);
      if (!clash) return n + 1;
    }
  }
  return n;
}

std::string EmitFusedRun(const FusionEnv& env, const std::vector<Instr>& body, size_t i, size_t n,
                         const std::string& fallback, const std::string& pad) {
  const Kernel& k = env.kernel;
  // A closing row reduction accumulates the last result; the rest are elementwise.
  const Reduction* red = RowReduction(body[i + n - 1].opcode);
  const Instr* red_in = red ? &body[i + n - 1] : nullptr;
  if (red) --n;
  const TileBuf& first = k.bufs[body[i].dst];
  std::ostringstream os;
  os << "#if defined(__AVX2__) && defined(__FMA__)\n";
  os << pad << "{  // fused:";
  for (size_t j = i; j < i + n; ++j) os << " " << body[j].opcode;
  if (red) os << " " << red_in->opcode;
  os << "\n";
  std::string p2 = pad + "  ";
  os << p2 << "const int64_t vc = " << env.expr(first.valid.back()) << ";\n";
  os << p2 << "for (int64_t fr = 0; fr < " << first.rows() << "; ++fr) {\n";
  std::string p3 = p2 + "  ";
  // Row pointers of the tiles the run reads from memory, and the row values of R x 1 operands.
  std::set<int> row_values, tiles_in, tiles_out;
  RunMemory(env, body, i, red ? n + 1 : n, tiles_in, tiles_out, row_values);
  for (int b : tiles_in)
    os << p3 << "const float* in" << b << " = reinterpret_cast<const float*>(" << env.ptr(b) << ") + fr * "
       << env.stride(b) << ";\n";
  for (int b : row_values)
    os << p3 << "const VecF rv" << b << " = VSet1(reinterpret_cast<const float*>(" << env.ptr(b) << ")[fr * "
       << env.stride(b) << "]);\n";
  for (int b : tiles_out)
    os << p3 << "float* out" << b << " = reinterpret_cast<float*>(" << env.ptr(b) << ") + fr * " << env.stride(b)
       << ";\n";
  ColumnLoop loop;
  for (size_t j = i; j < i + n; ++j) loop.ops.push_back(&body[j]);
  if (red) {
    loop.ops.push_back(red_in);
    loop.acc[red_in] = "acc";
    os << p3 << "RowAcc acc = RowAccInit(" << red->init << ", vc);\n";
  }
  loop.rows_in = tiles_in;
  loop.values = row_values;
  loop.rows_out = tiles_out;
  os << EmitColumnLoop(loop, p3);
  if (red) {
    os << EmitLaneFold(*red, std::string("RowAccFinish(acc, ") + red->vec + ")",
                       "reinterpret_cast<float*>(" + env.ptr(red_in->dst) + ")[fr * " + env.stride(red_in->dst) + "]",
                       p3);
  }
  os << p2 << "}\n" << pad << "}\n#else\n" << fallback << "#endif\n";
  return os.str();
}

}  // namespace pypto
