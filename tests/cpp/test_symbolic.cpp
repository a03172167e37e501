#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/symbolic.h"

using namespace pypto;

TEST(Symbolic, ConstantsFold) {
  EXPECT_EQ((Expr(3) + Expr(4) * Expr(5)).as_const(), 23);
  EXPECT_EQ(FloorDiv(Expr(-7), Expr(2)).as_const(), -4);
  EXPECT_EQ(Mod(Expr(-7), Expr(2)).as_const(), 1);
  EXPECT_EQ(CeilDiv(Expr(100), Expr(32)).as_const(), 4);
  EXPECT_EQ(Min(Expr(3), Expr(9)).as_const(), 3);
  EXPECT_EQ(Max(Expr(3), Expr(9)).as_const(), 9);
}

TEST(Symbolic, LinearFormsCancel) {
  Expr i = Expr::Var("i");
  // The seed's slice extent: (idx + 1) * tile - idx * tile == tile.
  EXPECT_EQ(((i + 1) * Expr(1) - i * Expr(1)).as_const(), 1);
  EXPECT_EQ(((i + 1) * Expr(4) - i * Expr(4)).as_const(), 4);
  EXPECT_TRUE((i + i).same_as(Expr(2) * i));
  EXPECT_TRUE((i + Expr::Var("j")).same_as(Expr::Var("j") + i));
  EXPECT_EQ((i - i).as_const(), 0);
  EXPECT_EQ((i * Expr(0)).as_const(), 0);
  EXPECT_TRUE((i * Expr(1)).same_as(i));
}

TEST(Symbolic, DivisionAndModuloOfMultiples) {
  Expr i = Expr::Var("i");
  EXPECT_TRUE(FloorDiv(i * Expr(8) + Expr(16), Expr(8)).same_as(i + 2));
  EXPECT_EQ(Mod(i * Expr(8) + Expr(3), Expr(8)).as_const(), 3);
  EXPECT_FALSE(FloorDiv(i + 1, Expr(2)).is_const());
  EXPECT_TRUE(FloorDiv(i, Expr(1)).same_as(i));
}

TEST(Symbolic, MinMaxWithConstantDifference) {
  Expr i = Expr::Var("i");
  EXPECT_TRUE(Min(i + 2, i + 5).same_as(i + 2));
  EXPECT_TRUE(Max(i + 2, i + 5).same_as(i + 5));
  EXPECT_TRUE(Min(i, Expr::Var("j")).same_as(Min(Expr::Var("j"), i)));
}

TEST(Symbolic, NestedMinMaxAbsorb) {
  Expr n = Expr::Var("n"), i = Expr::Var("i");
  // A view's valid extent clipped again to its size: min(16, min(16, n)) is min(16, n).
  EXPECT_EQ(Min(Expr(16), Min(Expr(16), n)).str(), Min(Expr(16), n).str());
  EXPECT_EQ(Min(Min(n, Expr(8)), Expr(16)).str(), Min(n, Expr(8)).str());  // its bound is 8
  EXPECT_EQ(Max(Expr(0), Max(n, Expr(4))).str(), Max(n, Expr(4)).str());
  // min(x, min(x + 3, y)): x is the smaller of the two comparable operands.
  EXPECT_EQ(Min(n, Min(n + Expr(3), i)).str(), Min(n, i).str());
  EXPECT_EQ(Min(Expr(16), Min(n, Expr(32))).Eval({{"n", 20}}), 16);
}

TEST(Symbolic, EvaluateAndSubstitute) {
  Expr b = Expr::Var("b");
  Expr e = Min(Expr(64), b * Expr(3) - Expr(64) * Expr::Var("$c0"));
  SymEnv env{{"b", 30}, {"$c0", 1}};
  EXPECT_EQ(e.Eval(env), 26);
  EXPECT_EQ(e.Substitute({{"b", 30}}).Eval({{"$c0", 0}}), 64);
  EXPECT_EQ(e.FreeVars(), (std::vector<std::string>{"$c0", "b"}));
  EXPECT_THROW(e.Eval({{"b", 1}}), UserError);
}

TEST(Symbolic, PrintsCanonically) {
  Expr i = Expr::Var("i");
  EXPECT_EQ((i * Expr(2) + Expr(3)).str(), "(2*i + 3)");
  EXPECT_EQ((Expr(5) - i).str(), "(-i + 5)");
  EXPECT_EQ(FloorDiv(Expr::Var("n"), Expr(4)).str(), "(n // 4)");
  EXPECT_THROW(FloorDiv(i, Expr(0)), UserError);
}

TEST(Symbolic, UpperBoundFromTheForm) {
  Expr n = Expr::Var("n"), i = Expr::Var("i");
  EXPECT_EQ(Expr(7).UpperBound(), 7);
  EXPECT_EQ(Min(n - i * Expr(16), Expr(16)).UpperBound(), 16);  // a valid extent
  EXPECT_EQ((Min(n, Expr(16)) + Expr(2)).UpperBound(), 18);
  EXPECT_EQ(Max(Min(n, Expr(4)), Expr(9)).UpperBound(), 9);
  EXPECT_EQ(FloorDiv(Min(n, Expr(17)), Expr(4)).UpperBound(), 4);
  EXPECT_FALSE(n.UpperBound().has_value());
  EXPECT_FALSE(Max(n, Expr(4)).UpperBound().has_value());
  EXPECT_FALSE((Min(n, Expr(4)) * Expr(-1)).UpperBound().has_value());
}

TEST(Symbolic, BoundsOverVariableRanges) {
  Expr i = Expr::Var("i"), n = Expr::Var("n");
  VarRanges r{{"i", {0, 3}}};
  EXPECT_EQ((i * Expr(2) + Expr(1)).Bounds(r), (std::pair<int64_t, int64_t>{1, 7}));
  EXPECT_EQ((Expr(5) - i).Bounds(r), (std::pair<int64_t, int64_t>{2, 5}));
  EXPECT_EQ(FloorDiv(i + Expr(4), Expr(2)).Bounds(r), (std::pair<int64_t, int64_t>{2, 3}));
  EXPECT_EQ(Mod(i, Expr(2)).Bounds(r), (std::pair<int64_t, int64_t>{0, 1}));
  EXPECT_EQ(Min(i, Expr(2)).Bounds(r), (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_FALSE((i + n).Bounds(r).has_value());  // n has no range
  EXPECT_FALSE((i * Expr(int64_t{1} << 62)).Bounds(r).has_value());  // too large to trust
}

TEST(Symbolic, SimplifyWithRangesResolvesMinAndMax) {
  Expr i = Expr::Var("i"), n = Expr::Var("n");
  VarRanges r{{"i", {0, 1}}};
  // The valid extent of a batch tile of 1 over 2 rows: min(i + 1, 2) - i is 1 for i in [0, 1].
  EXPECT_EQ((Min(i + Expr(1), Expr(2)) - i).Simplify(r).as_const(), 1);
  EXPECT_EQ(Max(i * Expr(4), Expr(8)).Simplify(r).as_const(), 8);
  EXPECT_TRUE(Min(i + Expr(1), Expr(2)).Simplify(r).same_as(i + Expr(1)));
  // Not ordered over the whole range: kept.
  EXPECT_EQ(Min(i * Expr(3), Expr(2)).Simplify(r).kind(), ExprKind::Min);
  EXPECT_EQ(Min(i, n).Simplify(r).kind(), ExprKind::Min);
  EXPECT_TRUE((Min(i + Expr(1), Expr(2)) - i).Simplify({}).same_as(Min(i + Expr(1), Expr(2)) - i));
}
