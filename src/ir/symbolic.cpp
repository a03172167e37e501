#include "ir/symbolic.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "ir/error.h"

namespace pypto {

namespace {

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t FloorModInt(int64_t a, int64_t b) { return a - FloorDivInt(a, b) * b; }

// A linear form: constant + sum(coef * atom), atoms keyed by canonical text.
struct Linear {
  int64_t constant = 0;
  std::map<std::string, std::pair<Expr, int64_t>> terms;
  void Add(const Expr& atom, int64_t coef) {
    if (coef == 0) return;
    auto [it, inserted] = terms.try_emplace(atom.str(), atom, coef);
    if (!inserted) {
      it->second.second += coef;
      if (it->second.second == 0) terms.erase(it);
    }
  }
};

}  // namespace

struct ExprBuilder {
  static Expr Make(ExprNode n) { return Expr(std::make_shared<const ExprNode>(std::move(n))); }

  static Linear ToLinear(const Expr& e) {
    Linear l;
    const ExprNode* n = e.node();
    if (n->kind == ExprKind::Const) {
      l.constant = n->value;
    } else if (n->kind == ExprKind::Sum) {
      l.constant = n->value;
      for (size_t i = 0; i < n->operands.size(); ++i) l.Add(n->operands[i], n->coefs[i]);
    } else {
      l.Add(e, 1);
    }
    return l;
  }

  static Expr FromLinear(const Linear& l) {
    if (l.terms.empty()) return Expr(l.constant);
    if (l.constant == 0 && l.terms.size() == 1 && l.terms.begin()->second.second == 1)
      return l.terms.begin()->second.first;
    ExprNode n;
    n.kind = ExprKind::Sum;
    n.value = l.constant;
    std::string key;
    bool first = true;
    for (auto& [k, tc] : l.terms) {
      n.operands.push_back(tc.first);
      n.coefs.push_back(tc.second);
      int64_t c = tc.second;
      if (first) {
        if (c == -1)
          key += "-";
        else if (c != 1)
          key += std::to_string(c) + "*";
      } else {
        key += c < 0 ? " - " : " + ";
        int64_t ac = c < 0 ? -c : c;
        if (ac != 1) key += std::to_string(ac) + "*";
      }
      key += tc.first.str();
      first = false;
    }
    if (l.constant > 0) key += " + " + std::to_string(l.constant);
    if (l.constant < 0) key += " - " + std::to_string(-l.constant);
    n.key = "(" + key + ")";
    return Make(std::move(n));
  }

  static Expr Binary(ExprKind k, const Expr& a, const Expr& b, const char* fmt_name) {
    ExprNode n;
    n.kind = k;
    n.operands = {a, b};
    switch (k) {
      case ExprKind::Mul:
        n.key = a.str() + "*" + b.str();
        break;
      case ExprKind::FloorDiv:
        n.key = "(" + a.str() + " // " + b.str() + ")";
        break;
      case ExprKind::Mod:
        n.key = "(" + a.str() + " % " + b.str() + ")";
        break;
      default:
        n.key = std::string(fmt_name) + "(" + a.str() + ", " + b.str() + ")";
        break;
    }
    return Make(std::move(n));
  }
};

Expr::Expr(int64_t v) {
  ExprNode n;
  n.kind = ExprKind::Const;
  n.value = v;
  n.key = std::to_string(v);
  node_ = std::make_shared<const ExprNode>(std::move(n));
}

Expr Expr::Var(const std::string& name) {
  if (name.empty()) throw UserError("a symbolic variable needs a name");
  ExprNode n;
  n.kind = ExprKind::Var;
  n.name = name;
  n.key = name;
  return ExprBuilder::Make(std::move(n));
}

ExprKind Expr::kind() const {
  PYPTO_CHECK(node_, "use of an undefined expression");
  return node_->kind;
}

std::optional<int64_t> Expr::as_const() const {
  if (node_ && node_->kind == ExprKind::Const) return node_->value;
  return std::nullopt;
}

std::optional<int64_t> Expr::UpperBound() const {
  if (!node_) return std::nullopt;
  const auto& ops = node_->operands;
  switch (node_->kind) {
    case ExprKind::Const:
      return node_->value;
    case ExprKind::Min: {  // bounded by any bounded operand
      std::optional<int64_t> best;
      for (const Expr& o : ops)
        if (auto b = o.UpperBound()) best = best ? std::min(*best, *b) : *b;
      return best;
    }
    case ExprKind::Max: {  // bounded when every operand is
      int64_t acc = std::numeric_limits<int64_t>::min();
      for (const Expr& o : ops) {
        auto b = o.UpperBound();
        if (!b) return std::nullopt;
        acc = std::max(acc, *b);
      }
      return acc;
    }
    case ExprKind::Sum: {  // bounded when every atom is and enters with a positive coefficient
      int64_t acc = node_->value;
      for (size_t k = 0; k < ops.size(); ++k) {
        auto b = ops[k].UpperBound();
        if (!b || node_->coefs[k] < 0) return std::nullopt;
        acc += node_->coefs[k] * *b;
      }
      return acc;
    }
    case ExprKind::FloorDiv: {
      auto a = ops[0].UpperBound();
      auto d = ops[1].as_const();
      if (!a || !d || *d <= 0) return std::nullopt;
      return *a >= 0 ? *a / *d : -((-*a + *d - 1) / *d);
    }
    default:
      return std::nullopt;
  }
}

const std::string& Expr::var_name() const {
  static const std::string empty;
  return node_ && node_->kind == ExprKind::Var ? node_->name : empty;
}

const std::string& Expr::str() const {
  static const std::string undef = "<undef>";
  return node_ ? node_->key : undef;
}

Expr operator+(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(*a.as_const() + *b.as_const());
  Linear l = ExprBuilder::ToLinear(a);
  Linear r = ExprBuilder::ToLinear(b);
  l.constant += r.constant;
  for (auto& [k, tc] : r.terms) l.Add(tc.first, tc.second);
  return ExprBuilder::FromLinear(l);
}

Expr operator-(const Expr& a) { return Expr(-1) * a; }
Expr operator-(const Expr& a, const Expr& b) { return a + (-b); }

Expr operator*(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(*a.as_const() * *b.as_const());
  if (b.is_const()) return b * a;
  if (a.is_const()) {
    int64_t c = *a.as_const();
    if (c == 0) return Expr(0);
    if (c == 1) return b;
    Linear l = ExprBuilder::ToLinear(b);
    Linear out;
    out.constant = l.constant * c;
    for (auto& [k, tc] : l.terms) out.Add(tc.first, tc.second * c);
    return ExprBuilder::FromLinear(out);
  }
  // Non-linear product: order the operands so that a*b and b*a are the same atom.
  if (b.str() < a.str()) return ExprBuilder::Binary(ExprKind::Mul, b, a, "");
  return ExprBuilder::Binary(ExprKind::Mul, a, b, "");
}

Expr FloorDiv(const Expr& a, const Expr& b) {
  if (auto cb = b.as_const()) {
    if (*cb == 0) throw UserError("symbolic division by zero: " + a.str() + " // 0");
    if (auto ca = a.as_const()) return Expr(FloorDivInt(*ca, *cb));
    if (*cb == 1) return a;
    // (c*k*x + c*m) // c == k*x + m when every coefficient is a multiple of c.
    Linear l = ExprBuilder::ToLinear(a);
    bool divisible = l.constant % *cb == 0;
    for (auto& [k, tc] : l.terms) divisible = divisible && tc.second % *cb == 0;
    if (divisible) {
      Linear out;
      out.constant = l.constant / *cb;
      for (auto& [k, tc] : l.terms) out.Add(tc.first, tc.second / *cb);
      return ExprBuilder::FromLinear(out);
    }
  }
  return ExprBuilder::Binary(ExprKind::FloorDiv, a, b, "");
}

Expr CeilDiv(const Expr& a, const Expr& b) { return FloorDiv(a + b - Expr(1), b); }

Expr Mod(const Expr& a, const Expr& b) {
  if (auto cb = b.as_const()) {
    if (*cb == 0) throw UserError("symbolic modulo by zero: " + a.str() + " % 0");
    if (auto ca = a.as_const()) return Expr(FloorModInt(*ca, *cb));
    if (*cb == 1) return Expr(0);
    // (c*k*x + r) % c == r % c for integer x.
    Linear l = ExprBuilder::ToLinear(a);
    bool divisible = true;
    for (auto& [k, tc] : l.terms) divisible = divisible && tc.second % *cb == 0;
    if (divisible) return Expr(FloorModInt(l.constant, *cb));
  }
  return ExprBuilder::Binary(ExprKind::Mod, a, b, "");
}

static Expr MinMax(ExprKind k, const Expr& a, const Expr& b) {
  bool is_min = k == ExprKind::Min;
  if (a.same_as(b)) return a;
  // If a - b is a constant, the answer is known whatever the variables are.
  if (auto d = (a - b).as_const()) return (*d <= 0) == is_min ? a : b;
  // min(x, c) with x never above c is x (a view's valid extent min(16, n) clipped again to 16).
  if (is_min) {
    if (auto c = b.as_const(); c && a.UpperBound() && *a.UpperBound() <= *c) return a;
    if (auto c = a.as_const(); c && b.UpperBound() && *b.UpperBound() <= *c) return b;
  }
  // min(x, min(y, z)) with x - y a constant: min(the smaller of x and y, z).
  auto absorb = [&](const Expr& x, const Expr& y) -> std::optional<Expr> {
    if (!y.defined() || y.kind() != k) return std::nullopt;
    const auto& ops = y.node()->operands;
    for (int i = 0; i < 2; ++i)
      if (auto d = (x - ops[i]).as_const()) return MinMax(k, (*d <= 0) == is_min ? x : ops[i], ops[1 - i]);
    return std::nullopt;
  };
  if (auto r = absorb(a, b)) return *r;
  if (auto r = absorb(b, a)) return *r;
  if (b.str() < a.str()) return ExprBuilder::Binary(k, b, a, is_min ? "min" : "max");
  return ExprBuilder::Binary(k, a, b, is_min ? "min" : "max");
}

Expr Min(const Expr& a, const Expr& b) { return MinMax(ExprKind::Min, a, b); }
Expr Max(const Expr& a, const Expr& b) { return MinMax(ExprKind::Max, a, b); }

Expr Compare(const Expr& a, const Expr& b, CmpOp op) {
  Expr d = b - a;  // a < b  <=>  d >= 1
  Expr one(1), zero(0);
  switch (op) {
    case CmpOp::LT:
      return Min(Max(d, zero), one);
    case CmpOp::LE:
      return Min(Max(d + one, zero), one);
    case CmpOp::GT:
      return Min(Max(-d, zero), one);
    case CmpOp::GE:
      return Min(Max(one - d, zero), one);
    case CmpOp::NE:
      return Truth(d);
    case CmpOp::EQ:
      return one - Truth(d);
  }
  throw InternalError("bad comparison");
}

Expr Truth(const Expr& a) { return Min(Max(a, -a), Expr(1)); }

int64_t Expr::Eval(const SymEnv& env) const {
  const ExprNode* n = node();
  PYPTO_CHECK(n, "eval of undefined expression");
  switch (n->kind) {
    case ExprKind::Const:
      return n->value;
    case ExprKind::Var: {
      auto it = env.find(n->name);
      if (it == env.end()) throw UserError("symbolic value '" + n->name + "' has no value here");
      return it->second;
    }
    case ExprKind::Sum: {
      int64_t s = n->value;
      for (size_t i = 0; i < n->operands.size(); ++i) s += n->coefs[i] * n->operands[i].Eval(env);
      return s;
    }
    case ExprKind::Mul:
      return n->operands[0].Eval(env) * n->operands[1].Eval(env);
    case ExprKind::FloorDiv: {
      int64_t d = n->operands[1].Eval(env);
      if (d == 0) throw UserError("division by zero evaluating " + str());
      return FloorDivInt(n->operands[0].Eval(env), d);
    }
    case ExprKind::Mod: {
      int64_t d = n->operands[1].Eval(env);
      if (d == 0) throw UserError("modulo by zero evaluating " + str());
      return FloorModInt(n->operands[0].Eval(env), d);
    }
    case ExprKind::Min:
      return std::min(n->operands[0].Eval(env), n->operands[1].Eval(env));
    case ExprKind::Max:
      return std::max(n->operands[0].Eval(env), n->operands[1].Eval(env));
  }
  throw InternalError("bad expression kind");
}

namespace {
// `e` rebuilt from its operands mapped by `f` (constants and variables as they are), through
// the canonical constructors, so the result simplifies as it is built.
template <class F>
Expr Rebuild(const Expr& e, F&& f) {
  const ExprNode* n = e.node();
  switch (n->kind) {
    case ExprKind::Const:
    case ExprKind::Var:
      return e;
    case ExprKind::Sum: {
      Expr s(n->value);
      for (size_t i = 0; i < n->operands.size(); ++i) s = s + Expr(n->coefs[i]) * f(n->operands[i]);
      return s;
    }
    default:
      break;
  }
  Expr a = f(n->operands[0]), b = f(n->operands[1]);
  switch (n->kind) {
    case ExprKind::Mul:
      return a * b;
    case ExprKind::FloorDiv:
      return FloorDiv(a, b);
    case ExprKind::Mod:
      return Mod(a, b);
    case ExprKind::Min:
      return Min(a, b);
    case ExprKind::Max:
      return Max(a, b);
    default:
      throw InternalError("bad expression kind");
  }
}
}  // namespace

Expr Expr::Substitute(const SymEnv& env) const {
  if (kind() == ExprKind::Var) {
    auto it = env.find(var_name());
    return it == env.end() ? *this : Expr(it->second);
  }
  return Rebuild(*this, [&](const Expr& o) { return o.Substitute(env); });
}

namespace {
using Range = std::pair<int64_t, int64_t>;
constexpr int64_t kBoundLimit = int64_t{1} << 61;  // beyond it, interval arithmetic gives up

std::optional<Range> Checked(__int128 lo, __int128 hi) {
  if (lo < -kBoundLimit || hi > kBoundLimit) return std::nullopt;
  return Range{static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}
}  // namespace

std::optional<std::pair<int64_t, int64_t>> Expr::Bounds(const VarRanges& ranges) const {
  const ExprNode* n = node();
  if (!n) return std::nullopt;
  switch (n->kind) {
    case ExprKind::Const:
      return Range{n->value, n->value};
    case ExprKind::Var: {
      auto it = ranges.find(n->name);
      if (it == ranges.end()) return std::nullopt;
      return it->second;
    }
    case ExprKind::Sum: {
      __int128 lo = n->value, hi = n->value;
      for (size_t i = 0; i < n->operands.size(); ++i) {
        auto b = n->operands[i].Bounds(ranges);
        if (!b) return std::nullopt;
        __int128 c = n->coefs[i];
        lo += c >= 0 ? c * b->first : c * b->second;
        hi += c >= 0 ? c * b->second : c * b->first;
      }
      return Checked(lo, hi);
    }
    default:
      break;
  }
  auto a = n->operands[0].Bounds(ranges), b = n->operands[1].Bounds(ranges);
  if (!a || !b) return std::nullopt;
  switch (n->kind) {
    case ExprKind::Mul: {
      __int128 p[] = {static_cast<__int128>(a->first) * b->first, static_cast<__int128>(a->first) * b->second,
                      static_cast<__int128>(a->second) * b->first, static_cast<__int128>(a->second) * b->second};
      return Checked(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
    }
    case ExprKind::FloorDiv:  // monotone in the dividend for a positive divisor
      if (b->first != b->second || b->first <= 0) return std::nullopt;
      return Range{FloorDivInt(a->first, b->first), FloorDivInt(a->second, b->first)};
    case ExprKind::Mod:
      if (b->first != b->second || b->first <= 0) return std::nullopt;
      if (FloorDivInt(a->first, b->first) == FloorDivInt(a->second, b->first))
        return Range{FloorModInt(a->first, b->first), FloorModInt(a->second, b->first)};
      return Range{0, b->first - 1};
    case ExprKind::Min:
      return Range{std::min(a->first, b->first), std::min(a->second, b->second)};
    case ExprKind::Max:
      return Range{std::max(a->first, b->first), std::max(a->second, b->second)};
    default:
      return std::nullopt;
  }
}

Expr Expr::Simplify(const VarRanges& ranges) const {
  if (!node() || ranges.empty()) return *this;
  Expr r = Rebuild(*this, [&](const Expr& o) { return o.Simplify(ranges); });
  if (r.kind() != ExprKind::Min && r.kind() != ExprKind::Max) return r;
  const Expr& a = r.node()->operands[0];
  const Expr& b = r.node()->operands[1];
  bool is_min = r.kind() == ExprKind::Min;
  if (auto d = (a - b).Bounds(ranges)) {
    if (d->second <= 0) return is_min ? a : b;  // a <= b everywhere
    if (d->first >= 0) return is_min ? b : a;   // a >= b everywhere
  }
  return r;
}

static void CollectVars(const Expr& e, std::set<std::string>& out) {
  const ExprNode* n = e.node();
  if (n->kind == ExprKind::Var) out.insert(n->name);
  for (auto& o : n->operands) CollectVars(o, out);
}

std::vector<std::string> Expr::FreeVars() const {
  std::set<std::string> s;
  CollectVars(*this, s);
  return {s.begin(), s.end()};
}

std::string ShapeStr(const std::vector<Expr>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].str();
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string IntList(const std::vector<int64_t>& v, const char* open, const char* close) {
  std::string s = open;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + close;
}

}  // namespace pypto
