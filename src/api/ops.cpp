// The C++ API's ops: thin calls into the Recorder (which checks shapes and dtypes and keeps the
// caller's line), one per registry op, as the Python wrappers are.
#include "api/recording.h"
#include "ir/dtype.h"
#include "ir/op_registry.h"

namespace pypto {

namespace {

using api::Current;
using api::Id;
using api::ToLoc;
using api::Wrap;

std::vector<Expr> Exprs(const std::vector<SymbolicScalar>& v) {
  std::vector<Expr> out;
  for (auto& s : v) out.push_back(s.expr());
  return out;
}

Tensor Unary(const char* api_name, const char* op, const Tensor& x, const Loc& loc) {
  Recorder& r = Current(api_name, loc).rec;
  return Wrap(r.Unary(op, Id(x, api_name, loc), ToLoc(loc)));
}

Tensor Binary(const char* api_name, const char* op, const Tensor& x, const Tensor& y, const Loc& loc) {
  Recorder& r = Current(api_name, loc).rec;
  return Wrap(r.Binary(op, Id(x, api_name, loc), Id(y, api_name, loc), ToLoc(loc)));
}

Tensor Scalar(const char* api_name, const char* op, const Tensor& x, const Element& s, bool scalar_first,
              const Loc& loc) {
  Recorder& r = Current(api_name, loc).rec;
  int id = Id(x, api_name, loc);
  if (s.HasDataType() && IsFloat(s.GetDataType()) != IsFloat(r.value(id).dtype))
    throw UserError(std::string("pypto::") + api_name + ": the Element is " + DataTypeName(s.GetDataType()) +
                        " but the tensor is " + DataTypeName(r.value(id).dtype),
                    ToLoc(loc), "give the Element the tensor's kind of dtype, or Cast the tensor");
  return Wrap(r.BinaryScalar(op, id, s.GetValue(), ToLoc(loc), scalar_first));
}

Tensor Reduce(const char* api_name, const char* op, const Tensor& x, int axis, bool keep, const Loc& loc) {
  Recorder& r = Current(api_name, loc).rec;
  return Wrap(r.Reduce(op, Id(x, api_name, loc), axis, keep, ToLoc(loc)));
}

}  // namespace

#define PYPTO_DEFINE_UNARY(NAME, OP) \
  Tensor NAME(const Tensor& x, Loc loc) { return Unary(#NAME, #OP, x, loc); }
#define PYPTO_DEFINE_BINARY(NAME, OP)                                                                             \
  Tensor NAME(const Tensor& x, const Tensor& y, Loc loc) { return Binary(#NAME, #OP, x, y, loc); }               \
  Tensor NAME(const Tensor& x, const Element& y, Loc loc) { return Scalar(#NAME, #OP, x, y, false, loc); }       \
  Tensor NAME(const Element& x, const Tensor& y, Loc loc) { return Scalar(#NAME, #OP, y, x, true, loc); }
#define PYPTO_DEFINE_REDUCE(NAME, OP) \
  Tensor NAME(const Tensor& x, int axis, bool keepDim, Loc loc) { return Reduce(#NAME, #OP, x, axis, keepDim, loc); }
PYPTO_API_UNARY(PYPTO_DEFINE_UNARY)
PYPTO_API_BINARY(PYPTO_DEFINE_BINARY)
PYPTO_API_REDUCE(PYPTO_DEFINE_REDUCE)
#undef PYPTO_DEFINE_UNARY
#undef PYPTO_DEFINE_BINARY
#undef PYPTO_DEFINE_REDUCE

Tensor operator+(const Tensor& x, const Tensor& y) { return Add(x, y); }
Tensor operator-(const Tensor& x, const Tensor& y) { return Sub(x, y); }
Tensor operator*(const Tensor& x, const Tensor& y) { return Mul(x, y); }
Tensor operator/(const Tensor& x, const Tensor& y) { return Div(x, y); }
Tensor operator+(const Tensor& x, double y) { return Add(x, Element(y)); }
Tensor operator-(const Tensor& x, double y) { return Sub(x, Element(y)); }
Tensor operator*(const Tensor& x, double y) { return Mul(x, Element(y)); }
Tensor operator/(const Tensor& x, double y) { return Div(x, Element(y)); }
Tensor operator-(const Tensor& x) { return Neg(x); }

namespace {
const char* CompareOp(OpType op) {
  switch (op) {
    case OpType::EQ: return "eq";
    case OpType::NE: return "ne";
    case OpType::LT: return "lt";
    case OpType::LE: return "le";
    case OpType::GT: return "gt";
    case OpType::GE: return "ge";
  }
  return "eq";
}
}  // namespace

Tensor Compare(const Tensor& x, const Tensor& y, OpType op, OutType, Loc loc) {
  Recorder& r = Current("Compare", loc).rec;
  return Wrap(r.Op(CompareOp(op), {Id(x, "Compare", loc), Id(y, "Compare", loc)}, {}, ToLoc(loc)));
}

Tensor Compare(const Tensor& x, const Element& y, OpType op, OutType, Loc loc) {
  Recorder& r = Current("Compare", loc).rec;
  Attrs a;
  a.set("scalar", y.GetValue());
  return Wrap(r.Op(CompareOp(op), {Id(x, "Compare", loc)}, std::move(a), ToLoc(loc)));
}

Tensor Where(const Tensor& c, const Tensor& x, const Tensor& y, Loc loc) {
  Recorder& r = Current("Where", loc).rec;
  return Wrap(r.Op("where", {Id(c, "Where", loc), Id(x, "Where", loc), Id(y, "Where", loc)}, {}, ToLoc(loc)));
}

Tensor Where(const Tensor& c, const Tensor& x, const Element& y, Loc loc) {
  Recorder& r = Current("Where", loc).rec;
  Attrs a;
  a.set("b_scalar", y.GetValue());
  return Wrap(r.Op("where", {Id(c, "Where", loc), Id(x, "Where", loc)}, std::move(a), ToLoc(loc)));
}

Tensor Where(const Tensor& c, const Element& x, const Tensor& y, Loc loc) {
  Recorder& r = Current("Where", loc).rec;
  Attrs a;
  a.set("a_scalar", x.GetValue());
  return Wrap(r.Op("where", {Id(c, "Where", loc), Id(y, "Where", loc)}, std::move(a), ToLoc(loc)));
}

Tensor LogicalNot(const Tensor& x, Loc loc) {
  Recorder& r = Current("LogicalNot", loc).rec;
  int id = Id(x, "LogicalNot", loc);
  if (r.value(id).dtype == DataType::BOOL) return Wrap(r.Unary("bitwise_not", id, ToLoc(loc)));
  return Compare(x, Element(0.0), OpType::EQ, OutType::BOOL, loc);
}

Tensor LogicalAnd(const Tensor& x, const Tensor& y, Loc loc) {
  auto as_bool = [&](const Tensor& t) {
    return t.GetDataType() == DataType::BOOL ? t : Compare(t, Element(0.0), OpType::NE, OutType::BOOL, loc);
  };
  return Binary("LogicalAnd", "bitwise_and", as_bool(x), as_bool(y), loc);
}

Tensor Cast(const Tensor& x, DataType dtype, Loc loc) { return Cast(x, dtype, CAST_NONE, SaturationMode::OFF, loc); }

Tensor Cast(const Tensor& x, DataType dtype, CastMode mode, SaturationMode /*always saturates*/, Loc loc) {
  Recorder& r = Current("Cast", loc).rec;
  int id = Id(x, "Cast", loc);
  DataType src = r.value(id).dtype;
  bool asked = mode >= CAST_RINT && mode <= CAST_TRUNC;
  if (!asked) mode = IsFloat(src) && IsInteger(dtype) ? CAST_TRUNC : CAST_RINT;
  if (asked && IsFloat(src) && src == dtype) {  // a float to its own dtype: round to an integer
    switch (mode) {
      case CAST_RINT: return Rint(x, loc);
      case CAST_FLOOR: return Floor(x, loc);
      case CAST_CEIL: return Ceil(x, loc);
      case CAST_TRUNC: return Trunc(x, loc);
      default: {  // CAST_ROUND: ties away from zero (+-inf: the fraction is NaN, trunc stays)
        Tensor t = Trunc(x, loc);
        Tensor away = Compare(Abs(Sub(x, t, loc), loc), Element(src, 0.5), OpType::GE, OutType::BOOL, loc);
        return Add(t, Where(away, Sign(x, loc), Element(src, 0.0), loc), loc);
      }
    }
  }
  static const RoundMode kRound[] = {RoundMode::RINT, RoundMode::RINT, RoundMode::ROUND, RoundMode::FLOOR,
                                     RoundMode::CEIL, RoundMode::TRUNC};
  return Wrap(r.Cast(id, dtype, ToLoc(loc), kRound[mode]));
}

Tensor Expand(const Tensor& x, const std::vector<SymbolicScalar>& shape, Loc loc) {
  Recorder& r = Current("Expand", loc).rec;
  Attrs a;
  a.set("shape", Exprs(shape));
  return Wrap(r.Op("expand", {Id(x, "Expand", loc)}, std::move(a), ToLoc(loc)));
}

Tensor RowMaxExpand(const Tensor& x, Loc loc) { return Expand(Amax(x, -1, true, loc), x.GetValidShape(), loc); }

Tensor RowSumExpand(const Tensor& x, Loc loc) { return Expand(Sum(x, -1, true, loc), x.GetValidShape(), loc); }

Tensor Full(const Element& value, DataType dtype, const std::vector<SymbolicScalar>& shape, Loc loc) {
  Recorder& r = Current("Full", loc).rec;
  if (IsInteger(dtype) || dtype == DataType::BOOL) {
    double v = value.GetValue();
    if (v != v || v != static_cast<double>(static_cast<int64_t>(v)) || v < static_cast<double>(IntegerMin(dtype)) ||
        v > static_cast<double>(IntegerMax(dtype)))
      throw UserError("pypto::Full: " + std::to_string(v) + " is not a value of " + DataTypeName(dtype), ToLoc(loc));
  }
  Attrs a;
  a.set("shape", Exprs(shape));
  a.set("value", value.GetValue());
  a.set("dtype", dtype);
  return Wrap(r.Op("full", {}, std::move(a), ToLoc(loc)));
}

Tensor View(const Tensor& x, const std::vector<int64_t>& shape, const std::vector<SymbolicScalar>& offsets, Loc loc) {
  std::vector<SymbolicScalar> s(shape.begin(), shape.end());
  return View(x, shape, s, offsets, loc);
}

Tensor View(const Tensor& x, const std::vector<int64_t>& shape, const std::vector<SymbolicScalar>& validShape,
            const std::vector<SymbolicScalar>& offsets, Loc loc) {
  Recorder& r = Current("View", loc).rec;
  int id = Id(x, "View", loc);
  size_t rank = static_cast<size_t>(r.value(id).rank());
  if (shape.size() != rank || validShape.size() != rank || offsets.size() != rank)
    throw UserError("pypto::View: shape, valid shape and offsets need one entry per dim of the rank-" +
                        std::to_string(rank) + " tensor, got " + std::to_string(shape.size()) + ", " +
                        std::to_string(validShape.size()) + " and " + std::to_string(offsets.size()),
                    ToLoc(loc));
  // As in Python: the view has the valid shape (there is no padding to carry on a CPU).
  return Wrap(r.View(id, Exprs(offsets), Exprs(validShape), ToLoc(loc)));
}

void Assemble(const Tensor& src, const std::vector<SymbolicScalar>& offsets, Tensor& dst, Loc loc) {
  Recorder& r = Current("Assemble", loc).rec;
  r.Assemble(Id(src, "Assemble", loc), Exprs(offsets), Id(dst, "Assemble", loc), ToLoc(loc));
}

Tensor Reshape(const Tensor& x, const std::vector<SymbolicScalar>& shape, Loc loc) {
  Recorder& r = Current("Reshape", loc).rec;
  return Wrap(r.Reshape(Id(x, "Reshape", loc), Exprs(shape), ToLoc(loc)));
}

namespace {
std::vector<int64_t> NormalizedPerm(const char* op, const std::vector<int>& perm, int64_t rank, const Loc& loc) {
  std::vector<int64_t> p;
  std::vector<bool> seen(rank, false);
  for (int d : perm) {
    int64_t a = d < 0 ? d + rank : d;
    if (a < 0 || a >= rank || seen[a])
      throw UserError(std::string("pypto::") + op + ": " + IntList(std::vector<int64_t>(perm.begin(), perm.end())) +
                          " is not a permutation of the " + std::to_string(rank) + " dims",
                      ToLoc(loc));
    seen[a] = true;
    p.push_back(a);
  }
  return p;
}
}  // namespace

Tensor Permute(const Tensor& x, const std::vector<int>& perm, Loc loc) {
  Recorder& r = Current("Permute", loc).rec;
  int id = Id(x, "Permute", loc);
  int64_t rank = r.value(id).rank();
  if (static_cast<int64_t>(perm.size()) != rank)
    throw UserError("pypto::Permute: " + std::to_string(perm.size()) + " dims for a rank-" + std::to_string(rank) +
                        " tensor",
                    ToLoc(loc));
  return Wrap(r.Remap(id, NormalizedPerm("Permute", perm, rank, loc), ToLoc(loc)));
}

Tensor Transpose(const Tensor& x, const std::vector<int>& perm, Loc loc) {
  Recorder& r = Current("Transpose", loc).rec;
  int id = Id(x, "Transpose", loc);
  int64_t rank = r.value(id).rank();
  if (perm.size() != 2)
    throw UserError("pypto::Transpose takes the two dims to swap, got " + std::to_string(perm.size()), ToLoc(loc),
                    "use Permute for a general permutation");
  auto ab = NormalizedPerm("Transpose", perm, rank, loc);
  std::vector<int64_t> p;
  for (int64_t d = 0; d < rank; ++d) p.push_back(d == ab[0] ? ab[1] : d == ab[1] ? ab[0] : d);
  return Wrap(r.Remap(id, p, ToLoc(loc)));
}

Tensor Unsqueeze(const Tensor& x, int dim, Loc loc) {
  Recorder& r = Current("Unsqueeze", loc).rec;
  int id = Id(x, "Unsqueeze", loc);
  int64_t rank = r.value(id).rank();
  int64_t d = dim < 0 ? dim + rank + 1 : dim;
  if (d < 0 || d > rank)
    throw UserError("pypto::Unsqueeze: dim " + std::to_string(dim) + " of a rank-" + std::to_string(rank) + " tensor",
                    ToLoc(loc));
  std::vector<int64_t> p;
  for (int64_t i = 0; i < rank; ++i) p.push_back(i);
  p.insert(p.begin() + d, -1);
  return Wrap(r.Remap(id, p, ToLoc(loc)));
}

Tensor Squeeze(const Tensor& x, const std::vector<int>& dims, Loc loc) {
  Recorder& r = Current("Squeeze", loc).rec;
  int id = Id(x, "Squeeze", loc);
  const Value& v = r.value(id);
  std::vector<bool> drop(v.rank(), false);
  for (int64_t d = 0; d < v.rank(); ++d) drop[d] = dims.empty() && v.shape[d].as_const() == std::optional<int64_t>(1);
  for (int d : dims) {
    int64_t a = d < 0 ? d + v.rank() : d;
    if (a < 0 || a >= v.rank())
      throw UserError("pypto::Squeeze: dim " + std::to_string(d) + " of a rank-" + std::to_string(v.rank()) + " tensor",
                      ToLoc(loc));
    drop[a] = v.shape[a].as_const() == std::optional<int64_t>(1);  // a dim that is not 1 stays (torch)
  }
  std::vector<int64_t> p;
  for (int64_t d = 0; d < v.rank(); ++d)
    if (!drop[d]) p.push_back(d);
  if (p.empty()) throw UserError("pypto::Squeeze would make a 0-d tensor; keep at least one dim", ToLoc(loc));
  return Wrap(r.Remap(id, p, ToLoc(loc)));
}

Tensor Matrix::Matmul(DataType outType, const Tensor& a, const Tensor& b, bool aTrans, bool bTrans, Loc loc) {
  Recorder& r = Current("Matrix::Matmul", loc).rec;
  return Wrap(r.Matmul(Id(a, "Matrix::Matmul", loc), Id(b, "Matrix::Matmul", loc), static_cast<int>(outType), aTrans,
                       bTrans, ToLoc(loc)));
}

}  // namespace pypto
