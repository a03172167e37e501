// Parser of PTO assembly text (see docs/isa.md, "PTO assembly"). Line oriented: one
// declaration or statement per line, `for ... {` / `}` delimit loop bodies, `//` or `#` start a
// comment, a trailing `;` is allowed. Errors are pto::Error("line N: ...").
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "pto/asm/module.hpp"

namespace pto::as {
namespace detail {

// A cursor over one line.
struct Cursor {
  const std::string& s;
  size_t i = 0;
  int line = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error("line " + std::to_string(line) + ": " + msg);
  }
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool done() {
    ws();
    return i >= s.size();
  }
  bool peek(char c) {
    ws();
    return i < s.size() && s[i] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'" + near());
  }
  std::string near() const { return i < s.size() ? " near '" + s.substr(i, 12) + "'" : " at end"; }
  static bool word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  // [A-Za-z0-9_.]+ (identifiers, mnemonics, numbers without sign)
  std::string word() {
    ws();
    const size_t b = i;
    while (i < s.size() && word_char(s[i])) ++i;
    if (b == i) fail("expected a word" + near());
    return s.substr(b, i - b);
  }
  bool eat_word(const std::string& w) {
    ws();
    if (s.compare(i, w.size(), w) != 0) return false;
    if (i + w.size() < s.size() && word_char(s[i + w.size()])) return false;
    i += w.size();
    return true;
  }
  std::string name() {
    ws();
    if (i >= s.size() || s[i] != '%') fail("expected a %name" + near());
    ++i;
    return "%" + word();
  }
  // A %name, an integer / float literal (optionally signed) or a bare word.
  std::string atom() {
    ws();
    if (peek('%')) return name();
    std::string sign;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) sign = s[i++];
    std::string w = word();
    // Exponents with a sign: 1e-5
    if (i < s.size() && (s[i] == '-' || s[i] == '+') && !w.empty() &&
        (w.back() == 'e' || w.back() == 'E') && std::isdigit(static_cast<unsigned char>(w[0]))) {
      w += s[i++];
      w += word();
    }
    return sign + w;
  }
  // Everything up to the '>' that closes the '<' just consumed.
  std::string until_close() {
    const size_t b = i;
    int depth = 1;
    while (i < s.size() && depth > 0) {
      if (s[i] == '<') ++depth;
      if (s[i] == '>') --depth;
      ++i;
    }
    if (depth) fail("unterminated '<'");
    return s.substr(b, i - 1 - b);
  }
};

inline std::string trim(const std::string& x) {
  size_t b = 0, e = x.size();
  while (b < e && std::isspace(static_cast<unsigned char>(x[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(x[e - 1]))) --e;
  return x.substr(b, e - b);
}
inline std::vector<std::string> split(const std::string& x, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : x) {
    if (c == sep) out.push_back(trim(cur)), cur.clear();
    else cur += c;
  }
  out.push_back(trim(cur));
  return out;
}
inline int64_t parse_int(Cursor& c, const std::string& x) {
  if (x == "?") return -1;
  try {
    size_t n = 0;
    const long long v = std::stoll(x, &n);
    if (n == x.size() && v >= 0) return v;
  } catch (...) {
  }
  c.fail("expected a non-negative integer, got '" + x + "'");
}
inline std::vector<int64_t> parse_dims(Cursor& c, const std::string& x) {
  std::vector<int64_t> dims;
  for (const std::string& d : split(x, 'x')) dims.push_back(parse_int(c, d));
  return dims;
}
inline DType dtype(Cursor& c, const std::string& x) {
  try {
    return dyn::parse_dtype(x);
  } catch (const Error& e) {
    c.fail(e.what());
  }
}
// After '!pto.tile<'.
inline TileType tile_type(Cursor& c) {
  const std::vector<std::string> parts = split(c.until_close(), ',');
  if (parts.size() < 3) c.fail("!pto.tile needs <loc, dtype, RxC, ...>");
  TileType t;
  const std::vector<std::string> locs = {"vec", "mat", "left", "right", "acc", "bias", "scaling"};
  auto li = std::find(locs.begin(), locs.end(), parts[0]);
  if (li == locs.end()) c.fail("unknown tile location '" + parts[0] + "'");
  t.loc = Loc(li - locs.begin());
  t.dtype = dtype(c, parts[1]);
  const std::vector<int64_t> rc = parse_dims(c, parts[2]);
  if (rc.size() != 2 || rc[0] <= 0 || rc[1] <= 0) c.fail("tile shape must be RxC");
  t.rows = int(rc[0]), t.cols = int(rc[1]);
  t.valid_rows = t.rows, t.valid_cols = t.cols;
  for (size_t k = 3; k < parts.size(); ++k) {
    const auto kv = split(parts[k], '=');
    if (kv.size() != 2) c.fail("expected key=value in tile type, got '" + parts[k] + "'");
    if (kv[0] == "valid") {
      const std::vector<int64_t> v = parse_dims(c, kv[1]);
      if (v.size() != 2 || v[0] > t.rows || v[1] > t.cols) c.fail("bad valid shape");
      t.valid_rows = int(v[0]), t.valid_cols = int(v[1]);
    } else if (kv[0] == "layout") {
      if (kv[1] == "row_major") t.layout = Layout::RowMajor;
      else if (kv[1] == "col_major") t.layout = Layout::ColMajor;
      else if (kv[1] == "nz") t.layout = Layout::NZ;
      else c.fail("unknown layout '" + kv[1] + "'");
    } else if (kv[0] == "pad") {
      if (kv[1] == "none") t.pad = PadValue::None;
      else if (kv[1] == "zero") t.pad = PadValue::Zero;
      else if (kv[1] == "max") t.pad = PadValue::Max;
      else if (kv[1] == "min") t.pad = PadValue::Min;
      else c.fail("unknown pad '" + kv[1] + "'");
    } else {
      c.fail("unknown tile attribute '" + kv[0] + "'");
    }
  }
  return t;
}

inline Operand operand(Cursor& c) {
  Operand o;
  o.text = c.atom();
  if (o.is_name() && c.eat('[')) {
    o.indexed = true;
    if (!c.eat(']')) {
      do o.index.push_back(c.atom());
      while (c.eat(','));
      c.expect(']');
    }
  }
  return o;
}

}  // namespace detail

inline Module parse(const std::string& text) {
  using detail::Cursor;
  // Split into lines without comments; keep line numbers.
  std::vector<std::pair<int, std::string>> lines;
  {
    int no = 0;
    size_t b = 0;
    while (b <= text.size()) {
      size_t e = text.find('\n', b);
      if (e == std::string::npos) e = text.size();
      std::string l = text.substr(b, e - b);
      ++no;
      const size_t cm = std::min(l.find("//"), l.find('#'));
      if (cm != std::string::npos) l = l.substr(0, cm);
      l = detail::trim(l);
      while (!l.empty() && l.back() == ';') l = detail::trim(l.substr(0, l.size() - 1));
      if (!l.empty()) lines.emplace_back(no, l);
      b = e + 1;
    }
  }
  Module m;
  Kernel* k = nullptr;
  std::vector<std::vector<Stmt>*> blocks;  // open statement lists, innermost last
  std::vector<std::string> names;          // declared in the current kernel
  auto declare = [&](Cursor& c, const std::string& n) {
    if (std::find(names.begin(), names.end(), n) != names.end()) c.fail(n + " declared twice");
    names.push_back(n);
  };
  for (const auto& [no, l] : lines) {
    Cursor c{l, 0, no};
    if (c.eat_word(".fifo")) {
      if (k) c.fail(".fifo must be outside kernels");
      FifoDecl f;
      f.name = c.name();
      c.expect(':');
      if (!c.eat_word("!pto.fifo")) c.fail("expected !pto.fifo<dtype, RxC, depth=N>");
      c.expect('<');
      const auto parts = detail::split(c.until_close(), ',');
      if (parts.size() != 3 || parts[2].rfind("depth=", 0) != 0)
        c.fail("expected !pto.fifo<dtype, RxC, depth=N>");
      f.dtype = detail::dtype(c, parts[0]);
      const auto rc = detail::parse_dims(c, parts[1]);
      if (rc.size() != 2 || rc[0] <= 0 || rc[1] <= 0) c.fail("fifo slot shape must be RxC");
      f.rows = int(rc[0]), f.cols = int(rc[1]);
      f.depth = int(detail::parse_int(c, parts[2].substr(6)));
      if (f.depth <= 0) c.fail("fifo depth must be positive");
      for (const FifoDecl& g : m.fifos)
        if (g.name == f.name) c.fail(f.name + " declared twice");
      m.fifos.push_back(f);
    } else if (c.eat_word(".kernel")) {
      if (k) c.fail("missing .end before .kernel");
      m.kernels.emplace_back();
      k = &m.kernels.back();
      k->name = c.word();
      if (c.eat_word("core")) {
        c.expect('=');
        k->core = c.word();
        if (k->core != "aic" && k->core != "aiv") c.fail("core must be aic or aiv");
      }
      blocks = {&k->body};
      names.clear();
      for (const FifoDecl& f : m.fifos) names.push_back(f.name);
    } else if (!k) {
      c.fail("statement outside .kernel");
    } else if (c.eat_word(".end")) {
      if (blocks.size() != 1) c.fail("unclosed for loop");
      k = nullptr;
    } else if (c.peek('.')) {
      if (!k->body.empty()) c.fail("declarations must precede statements");
      Decl d;
      d.line = no;
      if (c.eat_word(".arg")) {
        d.name = c.name();
        c.expect(':');
        if (c.eat_word("!pto.gm")) {
          c.expect('<');
          const auto parts = detail::split(c.until_close(), ',');
          if (parts.size() != 2) c.fail("expected !pto.gm<dtype, D0x...>");
          d.kind = Decl::GM_ARG;
          d.gm.dtype = detail::dtype(c, parts[0]);
          d.gm.dims = detail::parse_dims(c, parts[1]);
          if (d.gm.dims.empty() || d.gm.dims.size() > 5) c.fail("global tensors have 1 to 5 dims");
        } else {
          d.kind = Decl::SCALAR_ARG;
          const std::string t = c.word();
          d.scalar = t == "index" ? ScalarType{} : ScalarType{false, detail::dtype(c, t)};
        }
      } else if (c.eat_word(".tile")) {
        d.kind = Decl::TILE;
        d.name = c.name();
        c.expect(':');
        if (!c.eat_word("!pto.tile")) c.fail("expected !pto.tile<...>");
        c.expect('<');
        d.tile = detail::tile_type(c);
      } else if (c.eat_word(".const")) {
        d.kind = Decl::CONST;
        d.name = c.name();
        c.expect('=');
        d.value = c.atom();
        c.expect(':');
        const std::string t = c.word();
        d.scalar = t == "index" ? ScalarType{} : ScalarType{false, detail::dtype(c, t)};
      } else {
        c.fail("unknown directive" + c.near());
      }
      declare(c, d.name);
      k->decls.push_back(d);
    } else if (c.eat('}')) {
      if (blocks.size() <= 1) c.fail("unmatched '}'");
      blocks.pop_back();
    } else {
      Stmt s;
      s.line = no;
      if (c.eat_word("for")) {
        s.kind = Stmt::FOR;
        s.op = "for";
        s.result = c.name();
        c.expect('=');
        s.operands.push_back(detail::operand(c));
        if (!c.eat_word("to")) c.fail("expected 'to'");
        s.operands.push_back(detail::operand(c));
        if (c.eat_word("step")) s.operands.push_back(detail::operand(c));
        c.expect('{');
      } else if (c.peek('%')) {
        s.kind = Stmt::SCALAR;
        s.result = c.name();
        c.expect('=');
        s.op = c.word();
        do s.operands.push_back(detail::operand(c));
        while (c.eat(','));
      } else {
        s.op = c.word();
        std::transform(s.op.begin(), s.op.end(), s.op.begin(),
                       [](unsigned char ch) { return char(std::tolower(ch)); });
        const bool flag = s.op == "set_flag" || s.op == "wait_flag" || s.op == "pipe_barrier";
        s.kind = s.op == "set_valid" ? Stmt::VALID : flag ? Stmt::FLAG : Stmt::INSTR;
        if (!c.done() && !c.peek('{')) {
          do s.operands.push_back(detail::operand(c));
          while (c.eat(','));
        }
        if (c.eat('{')) {
          if (!c.eat('}')) {
            do {
              std::string key = c.word();
              c.expect('=');
              s.attrs.emplace_back(key, c.atom());
            } while (c.eat(','));
            c.expect('}');
          }
          std::sort(s.attrs.begin(), s.attrs.end());
        }
      }
      if (!c.done()) c.fail("unexpected text" + c.near());
      blocks.back()->push_back(std::move(s));
      if (blocks.back()->back().kind == Stmt::FOR) blocks.push_back(&blocks.back()->back().body);
    }
  }
  if (k) throw Error("missing .end at end of file");
  return m;
}

}  // namespace pto::as
