// Symbolic scalars: shape dimensions, loop indices and offsets are expressions over named
// integer variables. Every expression is built in a canonical form (sums are linear forms
// over sorted atoms), so simplification happens at construction and structural equality is
// string equality of the canonical key.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace pypto {

enum class ExprKind : uint8_t { Const, Var, Sum, Mul, FloorDiv, Mod, Min, Max };

struct ExprNode;

/// Values of the variables, by name.
using SymEnv = std::unordered_map<std::string, int64_t>;
/// Closed ranges [lo, hi] of variables, by name (a loop index inside its loop).
using VarRanges = std::unordered_map<std::string, std::pair<int64_t, int64_t>>;

class Expr {
 public:
  Expr() = default;
  Expr(int64_t v);  // NOLINT: integers convert implicitly, as in the user's code.
  Expr(int v) : Expr(static_cast<int64_t>(v)) {}
  static Expr Var(const std::string& name);

  bool defined() const { return node_ != nullptr; }
  ExprKind kind() const;
  bool is_const() const { return kind() == ExprKind::Const; }
  std::optional<int64_t> as_const() const;
  /// Name of a Var; empty otherwise.
  const std::string& var_name() const;
  /// Canonical text; equal keys mean equal expressions.
  const std::string& str() const;
  bool same_as(const Expr& o) const { return str() == o.str(); }

  /// Evaluates with all variables bound; throws UserError naming an unbound variable.
  int64_t Eval(const SymEnv& env) const;
  /// Replaces variables found in `env` by constants and re-simplifies.
  Expr Substitute(const SymEnv& env) const;
  /// A constant the expression never exceeds, when its form shows one (min(n - 16 * i, 16) <= 16);
  /// nullopt otherwise. Variables are unbounded.
  std::optional<int64_t> UpperBound() const;
  /// The closed range [lo, hi] of the expression when its variables lie in `ranges`; nullopt when
  /// a variable it depends on has no range or the form is not bounded.
  std::optional<std::pair<int64_t, int64_t>> Bounds(const VarRanges& ranges) const;
  /// Re-simplifies with the variables' ranges: a min or max whose operands are ordered on the
  /// whole range becomes that operand (min(i + 1, 2) - i is 1 for i in [0, 1]).
  Expr Simplify(const VarRanges& ranges) const;
  /// Names of all free variables, sorted.
  std::vector<std::string> FreeVars() const;

  const ExprNode* node() const { return node_.get(); }

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a);

 private:
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const ExprNode> node_;
  friend struct ExprBuilder;
};

Expr FloorDiv(const Expr& a, const Expr& b);
Expr CeilDiv(const Expr& a, const Expr& b);
Expr Mod(const Expr& a, const Expr& b);
Expr Min(const Expr& a, const Expr& b);
Expr Max(const Expr& a, const Expr& b);

enum class CmpOp : uint8_t { LT, LE, GT, GE, EQ, NE };
/// `a op b` of integers as a 0/1 expression (a predicate for runtime branches): a < b is
/// min(max(b - a, 0), 1). Known operands give the constant.
Expr Compare(const Expr& a, const Expr& b, CmpOp op);
/// 1 when `a` is nonzero, else 0.
Expr Truth(const Expr& a);

struct ExprNode {
  ExprKind kind;
  int64_t value = 0;           // Const; for Sum: the constant term
  std::string name;            // Var
  std::vector<Expr> operands;  // Sum: atoms; others: (a, b)
  std::vector<int64_t> coefs;  // Sum: coefficient of each atom
  std::string key;             // canonical text
};

/// Joins expressions as "(a, b, c)".
std::string ShapeStr(const std::vector<Expr>& shape);
/// Joins integers as "(1, 2, 3)" (or with other brackets, e.g. "[1, 2]").
std::string IntList(const std::vector<int64_t>& v, const char* open = "(", const char* close = ")");

}  // namespace pypto
