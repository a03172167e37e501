// PTO assembly (.pto): the in-memory form of a kernel file and its canonical printer.
// The text format is specified in docs/isa.md ("PTO assembly").
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "pto/dyn/call.hpp"
#include "pto/tile.hpp"

namespace pto::as {

// !pto.tile<loc, dtype, RxC[, valid=VRxVC][, layout=...][, pad=...]>; DYNAMIC valid dims print '?'.
struct TileType {
  Loc loc = Loc::Vec;
  DType dtype = DType::FP32;
  int rows = 0, cols = 0;
  int valid_rows = 0, valid_cols = 0;
  Layout layout = Layout::RowMajor;
  PadValue pad = PadValue::None;
  bool operator==(const TileType&) const = default;
};

// !pto.gm<dtype, D0xD1x...>; a dim of -1 ('?') is bound at run time.
struct GmType {
  DType dtype = DType::FP32;
  std::vector<int64_t> dims;
  bool operator==(const GmType&) const = default;
};

// `index` (an integer) or an element dtype.
struct ScalarType {
  bool is_index = true;
  DType dtype = DType::INT64;
  bool operator==(const ScalarType&) const = default;
};

struct Decl {
  enum Kind { GM_ARG, SCALAR_ARG, TILE, CONST } kind = TILE;
  std::string name;  // with the leading '%'
  TileType tile;
  GmType gm;
  ScalarType scalar;
  std::string value;  // CONST literal
  int line = 0;
  bool operator==(const Decl& o) const {
    return kind == o.kind && name == o.name && tile == o.tile && gm == o.gm &&
           scalar == o.scalar && value == o.value;
  }
};

// %name, %name[i, j, ...] (a global-tensor window) or a number literal.
struct Operand {
  std::string text;                // name (with '%') or literal
  bool indexed = false;
  std::vector<std::string> index;  // names or integer literals
  bool is_name() const { return !text.empty() && text[0] == '%'; }
  bool operator==(const Operand&) const = default;
};

struct Stmt {
  // INSTR: op operands {attrs}; SCALAR: result = op a, b; FOR: for var = lo to hi step s { body }
  // VALID: set_valid tile, rows, cols; FLAG: set_flag / wait_flag / pipe_barrier.
  enum Kind { INSTR, SCALAR, FOR, VALID, FLAG } kind = INSTR;
  std::string op;
  std::string result;  // SCALAR: assigned name; FOR: loop variable
  std::vector<Operand> operands;
  std::vector<std::pair<std::string, std::string>> attrs;  // sorted by key
  std::vector<Stmt> body;
  int line = 0;
  bool operator==(const Stmt& o) const {
    return kind == o.kind && op == o.op && result == o.result && operands == o.operands &&
           attrs == o.attrs && body == o.body;
  }
};

struct Kernel {
  std::string name;
  std::string core;  // "", "aic" (cube) or "aiv" (vector)
  std::vector<Decl> decls;
  std::vector<Stmt> body;
  bool operator==(const Kernel& o) const {
    return name == o.name && core == o.core && decls == o.decls && body == o.body;
  }
};

struct FifoDecl {
  std::string name;
  DType dtype = DType::FP32;
  int rows = 0, cols = 0, depth = 1;
  bool operator==(const FifoDecl&) const = default;
};

struct Module {
  std::vector<FifoDecl> fifos;
  std::vector<Kernel> kernels;
  bool operator==(const Module&) const = default;
};

// ---- spellings ---------------------------------------------------------------------------------

inline const char* loc_name(Loc l) {
  switch (l) {
    case Loc::Vec: return "vec";
    case Loc::Mat: return "mat";
    case Loc::Left: return "left";
    case Loc::Right: return "right";
    case Loc::Acc: return "acc";
    case Loc::Bias: return "bias";
    case Loc::Scaling: return "scaling";
  }
  return "?";
}
inline const char* layout_name(Layout l) {
  return l == Layout::RowMajor ? "row_major" : l == Layout::ColMajor ? "col_major" : "nz";
}
inline const char* pad_name(PadValue p) {
  return p == PadValue::None   ? "none"
         : p == PadValue::Zero ? "zero"
         : p == PadValue::Max  ? "max"
                               : "min";
}

inline std::string dim_str(int64_t d) { return d < 0 ? "?" : std::to_string(d); }

inline std::string print_type(const TileType& t) {
  std::string s = std::string("!pto.tile<") + loc_name(t.loc) + ", " + dyn::short_name(t.dtype) +
                  ", " + std::to_string(t.rows) + "x" + std::to_string(t.cols);
  if (t.valid_rows != t.rows || t.valid_cols != t.cols)
    s += ", valid=" + dim_str(t.valid_rows) + "x" + dim_str(t.valid_cols);
  if (t.layout != Layout::RowMajor) s += std::string(", layout=") + layout_name(t.layout);
  if (t.pad != PadValue::None) s += std::string(", pad=") + pad_name(t.pad);
  return s + ">";
}
inline std::string print_type(const GmType& g) {
  std::string s = std::string("!pto.gm<") + dyn::short_name(g.dtype) + ", ";
  for (size_t i = 0; i < g.dims.size(); ++i) s += (i ? "x" : "") + dim_str(g.dims[i]);
  return s + ">";
}
inline std::string print_type(const ScalarType& t) {
  return t.is_index ? "index" : dyn::short_name(t.dtype);
}

inline std::string print_operand(const Operand& o) {
  std::string s = o.text;
  if (o.indexed) {
    s += "[";
    for (size_t i = 0; i < o.index.size(); ++i) s += (i ? ", " : "") + o.index[i];
    s += "]";
  }
  return s;
}

inline void print_stmt(std::ostream& os, const Stmt& s, int indent) {
  const std::string pad(indent, ' ');
  auto operands = [&](size_t from) {
    std::string r;
    for (size_t i = from; i < s.operands.size(); ++i)
      r += (i > from ? ", " : "") + print_operand(s.operands[i]);
    return r;
  };
  switch (s.kind) {
    case Stmt::FOR:
      os << pad << "for " << s.result << " = " << print_operand(s.operands[0]) << " to "
         << print_operand(s.operands[1]);
      if (s.operands.size() > 2) os << " step " << print_operand(s.operands[2]);
      os << " {\n";
      for (const Stmt& b : s.body) print_stmt(os, b, indent + 2);
      os << pad << "}\n";
      return;
    case Stmt::SCALAR:
      os << pad << s.result << " = " << s.op << " " << operands(0) << "\n";
      return;
    default:
      os << pad << s.op;
      if (!s.operands.empty()) os << " " << operands(0);
      if (!s.attrs.empty()) {
        os << " {";
        for (size_t i = 0; i < s.attrs.size(); ++i)
          os << (i ? ", " : "") << s.attrs[i].first << " = " << s.attrs[i].second;
        os << "}";
      }
      os << "\n";
  }
}

// The canonical text of a module: parse(print(m)) == m, and print is a fixed point.
inline std::string print(const Module& m) {
  std::ostringstream os;
  for (const FifoDecl& f : m.fifos)
    os << ".fifo " << f.name << " : !pto.fifo<" << dyn::short_name(f.dtype) << ", " << f.rows
       << "x" << f.cols << ", depth=" << f.depth << ">\n";
  for (const Kernel& k : m.kernels) {
    if (&k != &m.kernels.front() || !m.fifos.empty()) os << "\n";
    os << ".kernel " << k.name;
    if (!k.core.empty()) os << " core=" << k.core;
    os << "\n";
    for (const Decl& d : k.decls) {
      switch (d.kind) {
        case Decl::GM_ARG: os << "  .arg " << d.name << " : " << print_type(d.gm) << "\n"; break;
        case Decl::SCALAR_ARG:
          os << "  .arg " << d.name << " : " << print_type(d.scalar) << "\n";
          break;
        case Decl::TILE: os << "  .tile " << d.name << " : " << print_type(d.tile) << "\n"; break;
        case Decl::CONST:
          os << "  .const " << d.name << " = " << d.value << " : " << print_type(d.scalar) << "\n";
          break;
      }
    }
    for (const Stmt& s : k.body) print_stmt(os, s, 2);
    os << ".end\n";
  }
  return os.str();
}

}  // namespace pto::as
