#include "ir/op_registry.h"

#include <unordered_map>

namespace pypto {

namespace {

std::vector<OpDef> MakeOpDefs() {
  using O = Opcode;
  std::vector<OpDef> d;
  auto unary = [&](const char* name, O pto, bool float_only, const char* doc) {
    d.push_back({name, OpKind::Unary, float_only, pto, {}, {}, {}, {}, {}, doc});
  };
  // Each binary op has its tile-scalar and row / column broadcast forms.
  auto binary = [&](const char* name, O pto, O scalar, O row, O col, const char* doc) {
    d.push_back({name, OpKind::Binary, false, pto, scalar, row, col, {}, {}, doc});
    d.push_back({std::string(name) + "_scalar", OpKind::BinaryScalar, false, pto, scalar, {}, {}, {}, {},
                 std::string(doc) + " (with a scalar)"});
  };
  auto reduce = [&](const char* name, O row, O col, O combine, const char* doc) {
    d.push_back({name, OpKind::Reduce, false, row, {}, {}, {}, col, combine, doc});
  };
  unary("exp", O::TEXP, true, "e**x");
  unary("log", O::TLOG, true, "natural logarithm");
  unary("abs", O::TABS, false, "|x|");
  unary("neg", O::TNEG, false, "-x");
  unary("sqrt", O::TSQRT, true, "square root");
  unary("rsqrt", O::TRSQRT, true, "1 / sqrt(x)");
  unary("reciprocal", O::TRECIP, true, "1 / x");
  unary("relu", O::TRELU, false, "max(x, 0)");
  binary("add", O::TADD, O::TADDS, O::TROWEXPANDADD, O::TCOLEXPANDADD, "x + y");
  binary("sub", O::TSUB, O::TSUBS, O::TROWEXPANDSUB, O::TCOLEXPANDSUB, "x - y");
  binary("mul", O::TMUL, O::TMULS, O::TROWEXPANDMUL, O::TCOLEXPANDMUL, "x * y");
  binary("div", O::TDIV, O::TDIVS, O::TROWEXPANDDIV, O::TCOLEXPANDDIV, "x / y");
  binary("maximum", O::TMAX, O::TMAXS, O::TROWEXPANDMAX, O::TCOLEXPANDMAX, "max(x, y)");
  binary("minimum", O::TMIN, O::TMINS, O::TROWEXPANDMIN, O::TCOLEXPANDMIN, "min(x, y)");
  reduce("sum", O::TROWSUM, O::TCOLSUM, O::TADD, "sum along an axis");
  reduce("amax", O::TROWMAX, O::TCOLMAX, O::TMAX, "maximum along an axis");
  reduce("amin", O::TROWMIN, O::TCOLMIN, O::TMIN, "minimum along an axis");
  d.push_back({"cast", OpKind::Cast, false, O::TCVT, {}, {}, {}, {}, {}, "convert to another dtype"});
  d.push_back({"matmul", OpKind::Matmul, false, O::TMATMUL, {}, {}, {}, {}, {}, "matrix product on the cube unit"});
  d.push_back({"assemble", OpKind::Assemble, false, O::TSTORE, {}, {}, {}, {}, {},
               "write a tensor into a window of another"});
  return d;
}

const std::unordered_map<std::string, size_t>& Index() {
  static const std::unordered_map<std::string, size_t> idx = [] {
    std::unordered_map<std::string, size_t> m;
    const auto& defs = AllOpDefs();
    for (size_t i = 0; i < defs.size(); ++i) m[defs[i].name] = i;
    return m;
  }();
  return idx;
}

std::string DTypeShape(const Value& v) { return std::string(DataTypeName(v.dtype)) + ShapeStr(v.shape); }

// a [..., M, K] @ b [..., K, N] (either stored transposed): batch dims of the operand with more
// dims are kept; the other operand must have the same batch dims or none.
void InferMatmul(const Function& f, const OpCall& call, Value& out) {
  const Value& a = f.value(call.inputs[0]);
  const Value& b = f.value(call.inputs[1]);
  bool at = call.attrs.get<int64_t>("a_trans") != 0, bt = call.attrs.get<int64_t>("b_trans") != 0;
  std::string shapes = DTypeShape(a) + (at ? "^T" : "") + " @ " + DTypeShape(b) + (bt ? "^T" : "");
  if (a.rank() < 2 || b.rank() < 2)
    throw UserError("pypto.matmul: operands need at least 2 dims, got " + shapes, call.loc,
                    "reshape a vector to [1, K] or [K, 1]");
  if (a.dtype != b.dtype)
    throw UserError("pypto.matmul: operand dtypes differ: " + shapes, call.loc,
                    "cast one operand with pypto.cast(t, dtype) so both have the same dtype");
  DataType in = a.dtype;
  if (in != DataType::FP32 && in != DataType::FP16 && in != DataType::BF16 && in != DataType::INT8)
    throw UserError("pypto.matmul: dtype " + std::string(DataTypeName(in)) + " is not supported (" + shapes + ")",
                    call.loc, "use fp32, fp16, bf16 or int8 operands");
  const Expr& M = at ? a.shape[a.rank() - 1] : a.shape[a.rank() - 2];
  const Expr& Ka = at ? a.shape[a.rank() - 2] : a.shape[a.rank() - 1];
  const Expr& Kb = bt ? b.shape[b.rank() - 1] : b.shape[b.rank() - 2];
  const Expr& N = bt ? b.shape[b.rank() - 2] : b.shape[b.rank() - 1];
  if (!Ka.same_as(Kb))
    throw UserError("pypto.matmul: inner dims differ: " + shapes + " contracts K=" + Ka.str() + " with K=" + Kb.str(),
                    call.loc, "the last dim of a (or its first with a_trans) must equal the first dim of b (or its last with b_trans)");
  for (const Expr* d : {&M, &Ka, &N})
    if (auto c = d->as_const(); c && *c <= 0)
      throw UserError("pypto.matmul: " + shapes + " has an empty dim (M, K and N must be positive)", call.loc,
                      "numpy gives zeros for K = 0: create them with pypto.tensor and skip the matmul");
  std::vector<Expr> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  std::vector<Expr> batch = batch_a.size() >= batch_b.size() ? batch_a : batch_b;
  const auto& other = batch_a.size() >= batch_b.size() ? batch_b : batch_a;
  bool ok = other.empty() || other.size() == batch.size();
  for (size_t i = 0; ok && i < other.size(); ++i) ok = other[i].same_as(batch[i]);
  if (!ok)
    throw UserError("pypto.matmul: batch dims differ: " + shapes, call.loc,
                    "give both operands the same leading dims, or make one of them 2-D (shared by every batch)");
  DataType acc = in == DataType::INT8 ? DataType::INT32 : DataType::FP32;
  DataType od = call.attrs.has("out_dtype") ? call.attrs.get<DataType>("out_dtype") : (in == DataType::INT8 ? acc : in);
  if (in == DataType::INT8 ? od != DataType::INT32 : !IsFloat(od))
    throw UserError("pypto.matmul: out_dtype " + std::string(DataTypeName(od)) + " is not possible for " + shapes,
                    call.loc,
                    in == DataType::INT8 ? "int8 products accumulate in int32: use out_dtype=pypto.DT_INT32 and "
                                           "dequantize with pypto.cast and a scale"
                                         : "use a floating-point out_dtype (fp32, fp16 or bf16)");
  out.dtype = od;
  out.shape = batch;
  out.shape.push_back(M);
  out.shape.push_back(N);
}

}  // namespace

const std::vector<OpDef>& AllOpDefs() {
  static const std::vector<OpDef> defs = MakeOpDefs();
  return defs;
}

bool HasOpDef(const std::string& name) { return Index().count(name) > 0; }

const OpDef& GetOpDef(const std::string& name) {
  auto it = Index().find(name);
  if (it == Index().end()) throw InternalError("unknown op '" + name + "'");
  return AllOpDefs()[it->second];
}

std::vector<Expr> BroadcastShapes(const std::vector<Expr>& a, const std::vector<Expr>& b,
                                  const std::string& op, const SourceLoc& loc) {
  size_t r = std::max(a.size(), b.size());
  std::vector<Expr> out(r);
  for (size_t i = 0; i < r; ++i) {
    // Align right: missing leading dims act as 1.
    Expr da = i + a.size() >= r ? a[i + a.size() - r] : Expr(1);
    Expr db = i + b.size() >= r ? b[i + b.size() - r] : Expr(1);
    if (da.same_as(db) || db.as_const() == 1) {
      out[i] = da;
    } else if (da.as_const() == 1) {
      out[i] = db;
    } else {
      throw UserError("pypto." + op + ": operand shapes " + ShapeStr(a) + " and " + ShapeStr(b) +
                          " do not broadcast (dim " + std::to_string(i) + ": " + da.str() + " vs " + db.str() + ")",
                      loc, "make the shapes equal, or 1 along the broadcast dim (e.g. keepdim=True in the reduction)");
    }
  }
  return out;
}

int NormalizeAxis(int64_t dim, int rank, const std::string& op, const SourceLoc& loc) {
  if (dim < -rank || dim >= rank)
    throw UserError("pypto." + op + ": dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
                        std::to_string(rank),
                    loc, "use a dim in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
  return static_cast<int>(dim < 0 ? dim + rank : dim);
}

void InferOpType(const Function& f, const OpCall& call, Value& out) {
  const OpDef& def = GetOpDef(call.op);
  auto in = [&](size_t i) -> const Value& { return f.value(call.inputs.at(i)); };
  const Value& x = in(0);
  if (def.float_only && !IsFloat(x.dtype))
    throw UserError("pypto." + call.op + " needs a floating-point tensor, got " + DTypeShape(x), call.loc,
                    "cast the input first: pypto.cast(x, pypto.DT_FP32)");
  switch (def.kind) {
    case OpKind::Unary:
    case OpKind::BinaryScalar:
      out.dtype = x.dtype;
      out.shape = x.shape;
      return;
    case OpKind::Binary: {
      const Value& y = in(1);
      if (x.dtype != y.dtype)
        throw UserError("pypto." + call.op + ": operand dtypes differ: " + DTypeShape(x) + " and " + DTypeShape(y),
                        call.loc, "cast one operand with pypto.cast(t, dtype) so both have the same dtype");
      out.dtype = x.dtype;
      out.shape = BroadcastShapes(x.shape, y.shape, call.op, call.loc);
      return;
    }
    case OpKind::Reduce: {
      int axis = NormalizeAxis(call.attrs.get<int64_t>("dim"), x.rank(), call.op, call.loc);
      bool keepdim = call.attrs.get<int64_t>("keepdim") != 0;
      out.dtype = x.dtype;
      out.shape.clear();
      for (int i = 0; i < x.rank(); ++i) {
        if (i != axis) out.shape.push_back(x.shape[i]);
        else if (keepdim) out.shape.push_back(Expr(1));
      }
      return;
    }
    case OpKind::Cast:
      out.dtype = call.attrs.get<DataType>("dtype");
      out.shape = x.shape;
      return;
    case OpKind::Assemble:
      throw InternalError("assemble has no output");
    case OpKind::Matmul:
      InferMatmul(f, call, out);
      return;
  }
}

}  // namespace pypto
