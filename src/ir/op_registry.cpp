#include "ir/op_registry.h"

#include <unordered_map>

namespace pypto {

namespace {

std::vector<OpDef> MakeOpDefs() {
  using O = Opcode;
  std::vector<OpDef> d;
  // The dtypes an op takes are those of its instruction (pto/isa_list.hpp); `float_only` narrows
  // an instruction that also takes integers.
  auto unary = [&](const char* name, O pto, bool float_only, const char* doc) {
    d.push_back({name, OpKind::Unary, float_only, pto, {}, {}, {}, {}, {}, doc});
  };
  // A binary op, its tile-scalar form (name_scalar) and, where the ISA has them, fused row /
  // column broadcast forms; other broadcasts expand the smaller operand first.
  auto binary = [&](const char* name, O pto, O scalar, std::optional<O> row, std::optional<O> col, const char* doc,
                    bool commutative = false) {
    d.push_back({name, OpKind::Binary, false, pto, scalar, row, col, {}, {}, doc, commutative});
    d.push_back({std::string(name) + "_scalar",
                 OpKind::BinaryScalar,
                 false,
                 pto,
                 scalar,
                 {},
                 {},
                 {},
                 {},
                 std::string(doc) + " (with a scalar)",
                 commutative});
  };
  auto reduce = [&](const char* name, O row, O col, O combine, const char* doc) {
    d.push_back({name, OpKind::Reduce, false, row, {}, {}, {}, col, combine, doc});
  };
  auto compare = [&](const char* name, CmpMode mode, const char* doc) {
    d.push_back({name, OpKind::Compare, false, O::TCMP, O::TCMPS, {}, {}, {}, {}, doc, false, mode});
  };
  unary("exp", O::TEXP, true, "e**x");
  unary("abs", O::TABS, false, "|x|");
  unary("neg", O::TNEG, false, "-x");
  unary("sqrt", O::TSQRT, true, "square root");
  unary("rsqrt", O::TRSQRT, true, "1 / sqrt(x)");
  unary("reciprocal", O::TRECIP, true, "1 / x");
  unary("relu", O::TRELU, false, "max(x, 0)");
  unary("bitwise_not", O::TNOT, false, "~x (integers), not x (bool)");
  binary("add", O::TADD, O::TADDS, O::TROWEXPANDADD, O::TCOLEXPANDADD, "x + y", true);
  binary("sub", O::TSUB, O::TSUBS, O::TROWEXPANDSUB, O::TCOLEXPANDSUB, "x - y");
  binary("mul", O::TMUL, O::TMULS, O::TROWEXPANDMUL, O::TCOLEXPANDMUL, "x * y", true);
  binary("div", O::TDIV, O::TDIVS, O::TROWEXPANDDIV, O::TCOLEXPANDDIV, "x / y");
  binary("maximum", O::TMAX, O::TMAXS, O::TROWEXPANDMAX, O::TCOLEXPANDMAX, "max(x, y)", true);
  binary("minimum", O::TMIN, O::TMINS, O::TROWEXPANDMIN, O::TCOLEXPANDMIN, "min(x, y)", true);
  binary("fmod", O::TREM, O::TREMS, {}, {}, "x - trunc(x / y) * y (C fmod: the sign of x)");
  binary("lrelu", O::TPRELU, O::TLRELU, {}, {}, "x < 0 ? x * slope : x (slope a scalar or a tensor)");
  binary("bitwise_and", O::TAND, O::TANDS, {}, {}, "x & y", true);
  binary("bitwise_or", O::TOR, O::TORS, {}, {}, "x | y", true);
  binary("bitwise_xor", O::TXOR, O::TXORS, {}, {}, "x ^ y", true);
  binary("bitwise_left_shift", O::TSHL, O::TSHLS, {}, {}, "x << y");
  binary("bitwise_right_shift", O::TSHR, O::TSHRS, {}, {}, "x >> y (arithmetic for signed types)");
  // The math instructions (pto/isa_list.hpp) are tensor ops of their function's name.
#define PYPTO_MATH_UNARY_OP(X, NAME, DTYPES, FN, IMPL) unary(#FN, O::NAME, false, #FN ", elementwise");
  PTO_MATH_UNARY(PYPTO_MATH_UNARY_OP, _)
#undef PYPTO_MATH_UNARY_OP
#define PYPTO_MATH_BINARY_OP(X, NAME, SNAME, DTYPES, FN, IMPL) \
  binary(#FN, O::NAME, O::SNAME, {}, {}, #FN "(x, y), elementwise with broadcasting");
  PTO_MATH_BINARY(PYPTO_MATH_BINARY_OP, _)
#undef PYPTO_MATH_BINARY_OP
  compare("eq", CmpMode::EQ, "x == y");
  compare("ne", CmpMode::NE, "x != y");
  compare("lt", CmpMode::LT, "x < y");
  compare("le", CmpMode::LE, "x <= y");
  compare("gt", CmpMode::GT, "x > y");
  compare("ge", CmpMode::GE, "x >= y");
  d.push_back({"where", OpKind::Select, false, O::TSEL, {}, {}, {}, {}, {}, "cond ? a : b"});
  reduce("prod", O::TROWPROD, O::TCOLPROD, O::TMUL, "product along an axis");
  d.push_back({"argmax",
               OpKind::ArgReduce,
               false,
               O::TROWARGMAX,
               {},
               {},
               {},
               O::TCOLARGMAX,
               {},
               "index of the first maximum along an axis (int32)"});
  d.push_back({"argmin",
               OpKind::ArgReduce,
               false,
               O::TROWARGMIN,
               {},
               {},
               {},
               O::TCOLARGMIN,
               {},
               "index of the first minimum along an axis (int32)"});
  d.push_back({"cumsum",
               OpKind::Scan,
               false,
               O::TROWCUMSUM,
               {},
               {},
               {},
               O::TCOLCUMSUM,
               {},
               "inclusive prefix sum along an axis"});
  d.push_back({"cumprod",
               OpKind::Scan,
               false,
               O::TROWCUMPROD,
               {},
               {},
               {},
               O::TCOLCUMPROD,
               {},
               "inclusive prefix product along an axis"});
  reduce("sum", O::TROWSUM, O::TCOLSUM, O::TADD, "sum along an axis");
  reduce("amax", O::TROWMAX, O::TCOLMAX, O::TMAX, "maximum along an axis");
  reduce("amin", O::TROWMIN, O::TCOLMIN, O::TMIN, "minimum along an axis");
  d.push_back({"permute",
               OpKind::Permute,
               false,
               O::TLOAD,
               {},
               {},
               {},
               {},
               {},
               "the dims in another order (a strided load, no copy in UB)"});
  d.push_back({"expand",
               OpKind::Expand,
               false,
               O::TLOAD,
               {},
               {},
               {},
               {},
               {},
               "x broadcast to a shape, materialized (a copy when the shapes are equal)"});
  d.push_back({"topk",
               OpKind::TopK,
               false,
               O::TROWTOPK,
               {},
               {},
               {},
               {},
               {},
               "the k largest or smallest values along the last dim, or their indices"});
  d.push_back({"gather",
               OpKind::Gather,
               false,
               O::TCOLGATHER,
               {},
               {},
               {},
               {},
               {},
               "x indexed along a dim by an index tensor (torch.gather)"});
  d.push_back({"scatter",
               OpKind::Scatter,
               false,
               O::TSCATTERND,
               {},
               {},
               {},
               {},
               {},
               "write (or add, multiply) src into dst along a dim at the positions of an index tensor"});
  d.push_back({"notify",
               OpKind::Signal,
               false,
               O::TNOTIFY,
               {},
               {},
               {},
               {},
               {},
               "set or add to a window's int32 signal cell (on this or a peer rank) and wake its waiters"});
  d.push_back({"wait",
               OpKind::Signal,
               false,
               O::TWAIT,
               {},
               {},
               {},
               {},
               {},
               "sleep until a window's int32 signal cell compares true with a value (optionally taking it)"});
  d.push_back({"full", OpKind::Fill, false, O::TEXPANDS, {}, {}, {}, {}, {}, "a tensor of one value"});
  d.push_back({"iota", OpKind::Iota, false, O::TCI, {}, {}, {}, {}, {}, "0, 1, ..., n - 1 along one dim"});
  d.push_back({"uniform",
               OpKind::Random,
               false,
               O::TPHILOX,
               {},
               {},
               {},
               {},
               {},
               "uniform random numbers in [0, 1) from the counter-based Philox-4x32-10 generator"});
  d.push_back({"cast", OpKind::Cast, false, O::TCVT, {}, {}, {}, {}, {}, "convert to another dtype"});
  d.push_back({"matmul", OpKind::Matmul, false, O::TMATMUL, {}, {}, {}, {}, {}, "matrix product on the cube unit"});
  d.push_back(
      {"assemble", OpKind::Assemble, false, O::TSTORE, {}, {}, {}, {}, {}, "write a tensor into a window of another"});
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

// a [..., M, K] @ b [..., K, N] (either stored transposed), the batch dims broadcast.
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
    throw UserError(
        "pypto.matmul: inner dims differ: " + shapes + " contracts K=" + Ka.str() + " with K=" + Kb.str(), call.loc,
        "the last dim of a (or its first with a_trans) must equal the first dim of b (or its last with b_trans)");
  for (const Expr* d : {&M, &Ka, &N})
    if (auto c = d->as_const(); c && *c <= 0)
      throw UserError("pypto.matmul: " + shapes + " has an empty dim (M, K and N must be positive)", call.loc,
                      "numpy gives zeros for K = 0: create them with pypto.tensor and skip the matmul");
  std::vector<Expr> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  // Batch dims broadcast as numpy's matmul does (right-aligned; a dim of 1 or a missing one is
  // shared by every batch).
  std::vector<Expr> batch;
  try {
    batch = BroadcastShapes(batch_a, batch_b, "matmul", call.loc);
  } catch (const UserError&) {
    throw UserError("pypto.matmul: batch dims do not broadcast: " + shapes, call.loc,
                    "give both operands the same leading dims, or 1 (or none) where one is shared by every batch");
  }
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

std::vector<Expr> BroadcastShapes(const std::vector<Expr>& a, const std::vector<Expr>& b, const std::string& op,
                                  const SourceLoc& loc) {
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
  if (def.kind == OpKind::Fill || def.kind == OpKind::Iota || def.kind == OpKind::Random) {  // made from nothing
    out.dtype = call.attrs.get<DataType>("dtype");
    out.shape = call.attrs.exprs("shape");
    if (def.kind == OpKind::Iota) {  // counts along attr "dim"; every other dim has extent 1
      int dim = static_cast<int>(call.attrs.get<int64_t>("dim"));
      bool ok = IsInteger(out.dtype) && dim >= 0 && dim < static_cast<int>(out.shape.size());
      for (int d = 0; ok && d < static_cast<int>(out.shape.size()); ++d) ok = d == dim || out.shape[d].as_const() == 1;
      if (!ok) throw InternalError("iota counts along one dim of an integer tensor");
    }
    if (def.kind == OpKind::Random && (!IsFloat(out.dtype) || out.shape.size() != 1))
      throw InternalError("uniform makes a 1-D float tensor (the frontend reshapes it)");
    for (auto& d : out.shape)
      if (auto c = d.as_const(); c && *c <= 0)
        throw UserError("pypto." + call.op + ": shape " + ShapeStr(out.shape) + " has a non-positive dim", call.loc,
                        "every dim must be at least 1");
    return;
  }
  auto in = [&](size_t i) -> const Value& { return f.value(call.inputs.at(i)); };
  const Value& x = in(0);
  // The MX formats are bytes here: copies, permutes, gathers and scatters move them; anything
  // that computes with the values needs them in a float type first.
  bool moves = def.kind == OpKind::Assemble || def.kind == OpKind::Permute || def.kind == OpKind::Expand ||
               def.kind == OpKind::Gather || (def.kind == OpKind::Scatter && call.attrs.get<int64_t>("reduce") == 0);
  for (int v : call.inputs)
    if (IsStorageOnly(f.value(v).dtype) && !moves)
      throw UserError("pypto." + call.op + " on " + DTypeShape(f.value(v)) + ": " + DataTypeName(f.value(v).dtype) +
                          " is a storage format here (its bytes move; no arithmetic)",
                      call.loc, "convert it first: pypto.cast(x, pypto.DT_FP32)");
  // The user's name of the op (the tile-scalar forms are recorded as NAME_scalar).
  std::string name = call.op.size() > 7 && call.op.compare(call.op.size() - 7, 7, "_scalar") == 0
                         ? call.op.substr(0, call.op.size() - 7)
                         : call.op;
  if (def.float_only && !IsFloat(x.dtype))
    throw UserError("pypto." + name + " needs a floating-point tensor, got " + DTypeShape(x), call.loc,
                    "cast the input first: pypto.cast(x, pypto.DT_FP32)");
  bool elementwise = def.kind == OpKind::Unary || def.kind == OpKind::Binary || def.kind == OpKind::BinaryScalar ||
                     def.kind == OpKind::Reduce || def.kind == OpKind::Compare || def.kind == OpKind::ArgReduce ||
                     def.kind == OpKind::Scan || def.kind == OpKind::TopK;
  if (elementwise && def.pto && !Admits(DtypesOf(*def.pto), x.dtype)) {
    InstrDtypes want = DtypesOf(*def.pto);
    throw UserError("pypto." + name + " needs " + DtypesDescription(want) + ", got " + DTypeShape(x), call.loc,
                    want == InstrDtypes::F ? "cast the input first: pypto.cast(x, pypto.DT_FP32)"
                                           : "cast the input with pypto.cast(x, dtype) to a dtype the op takes");
  }
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
    case OpKind::Permute: {
      // perm[d]: the input dim of output dim d, or -1 for a new dim of extent 1; input dims left
      // out must have extent 1 (squeeze).
      const auto& perm = call.attrs.get<std::vector<int64_t>>("perm");
      std::vector<bool> seen(x.rank(), false);
      bool ok = true;
      for (size_t i = 0; ok && i < perm.size(); ++i) {
        ok = perm[i] >= -1 && perm[i] < x.rank() && (perm[i] < 0 || !seen[perm[i]]);
        if (ok && perm[i] >= 0) seen[perm[i]] = true;
      }
      for (int d = 0; ok && d < x.rank(); ++d) ok = seen[d] || x.shape[d].as_const() == 1;
      if (!ok) {
        std::string p = "[";
        for (size_t i = 0; i < perm.size(); ++i) p += (i ? ", " : "") + std::to_string(perm[i]);
        throw UserError("pypto." + name + ": " + p + "] is not a permutation of the " + std::to_string(x.rank()) +
                            " dims of " + DTypeShape(x),
                        call.loc, "give each dim 0 .. rank-1 once (a dim of size 1 may be left out)");
      }
      out.dtype = x.dtype;
      out.shape.clear();
      for (auto d : perm) out.shape.push_back(d >= 0 ? x.shape[d] : Expr(1));
      return;
    }
    case OpKind::TopK: {
      int axis = NormalizeAxis(call.attrs.get<int64_t>("dim"), x.rank(), name, call.loc);
      int64_t k = call.attrs.get<int64_t>("k");
      if (axis != x.rank() - 1)
        throw UserError(
            "pypto." + name + " works along the last dim, got dim " + std::to_string(axis) + " of " + DTypeShape(x),
            call.loc, "transpose the dim to the end first (pypto.transpose)");
      auto n = x.shape[axis].as_const();
      if (k < 1 || (n && k > *n))
        throw UserError("pypto." + name + ": k=" + std::to_string(k) + " is outside [1, " +
                            (n ? std::to_string(*n) : x.shape[axis].str()) + "] for " + DTypeShape(x),
                        call.loc, "k must be at least 1 and at most the size of the last dim");
      out.dtype = call.attrs.get<int64_t>("indices") ? DataType::INT32 : x.dtype;
      out.shape = x.shape;
      out.shape[axis] = Expr(k);
      return;
    }
    case OpKind::Gather: {
      const Value& idx = in(1);
      std::string shapes = DTypeShape(x) + " by index " + DTypeShape(idx);
      int axis = NormalizeAxis(call.attrs.get<int64_t>("dim"), x.rank(), name, call.loc);
      if (!IsInteger(idx.dtype))
        throw UserError("pypto." + name + ": the index must be an integer tensor, got " + shapes, call.loc,
                        "cast it with pypto.cast(index, pypto.DT_INT32)");
      if (idx.rank() != x.rank())
        throw UserError("pypto." + name + ": the index needs the input's rank: " + shapes, call.loc);
      for (int d = 0; d < x.rank(); ++d) {
        auto a = idx.shape[d].as_const(), b = x.shape[d].as_const();
        if (d != axis && a && b && *a > *b)
          throw UserError("pypto." + name + ": dim " + std::to_string(d) +
                              " of the index is larger than the "
                              "input's: " +
                              shapes,
                          call.loc, "along every dim but `dim` the index may not exceed the input");
      }
      out.dtype = x.dtype;
      out.shape = idx.shape;
      return;
    }
    case OpKind::Expand: {
      out.dtype = x.dtype;
      out.shape = call.attrs.exprs("shape");
      bool ok = out.shape.size() == x.shape.size();
      for (size_t d = 0; ok && d < out.shape.size(); ++d)
        ok = x.shape[d].same_as(out.shape[d]) || x.shape[d].as_const() == 1;
      if (!ok)
        throw UserError("pypto.expand_clone: " + DTypeShape(x) + " does not expand to " + ShapeStr(out.shape), call.loc,
                        "give the same rank; each dim equal to the input's or the input's being 1");
      return;
    }
    case OpKind::Scan:
      NormalizeAxis(call.attrs.get<int64_t>("dim"), x.rank(), call.op, call.loc);
      out.dtype = x.dtype;
      out.shape = x.shape;
      return;
    case OpKind::ArgReduce:
    case OpKind::Reduce: {
      int axis = NormalizeAxis(call.attrs.get<int64_t>("dim"), x.rank(), call.op, call.loc);
      bool keepdim = call.attrs.get<int64_t>("keepdim") != 0;
      out.dtype = def.kind == OpKind::ArgReduce ? DataType::INT32 : x.dtype;
      out.shape.clear();
      for (int i = 0; i < x.rank(); ++i) {
        if (i != axis)
          out.shape.push_back(x.shape[i]);
        else if (keepdim)
          out.shape.push_back(Expr(1));
      }
      return;
    }
    case OpKind::Cast:
      out.dtype = call.attrs.get<DataType>("dtype");
      if (IsStorageOnly(out.dtype))  // the Python pypto.cast encodes them with integer steps
        throw UserError("pypto.cast to " + std::string(DataTypeName(out.dtype)) + " is not an instruction here",
                        call.loc, "use pypto.cast from Python, which encodes the MX formats");
      out.shape = x.shape;
      return;
    case OpKind::Assemble:
      throw InternalError("assemble has no output");
    case OpKind::Signal: {  // checks only: it has no result
      const Value& cellv = in(0);
      if (cellv.dtype != DataType::INT32)
        throw UserError("pypto." + name + ": a signal is an int32 cell, got " + DTypeShape(cellv), call.loc,
                        "allocate the signal window with dtype INT32");
      return;  // a region of cells: each is signalled (or waited for) on its own
    }
    case OpKind::Scatter: {  // checks only: it writes its destination
      const Value& idx = in(1);
      const Value& dst = in(2);
      std::string shapes = DTypeShape(x) + " by index " + DTypeShape(idx) + " into " + DTypeShape(dst);
      int axis = NormalizeAxis(call.attrs.get<int64_t>("dim"), dst.rank(), name, call.loc);
      if (x.dtype != dst.dtype)
        throw UserError("pypto." + name + ": the values and the destination have different dtypes: " + shapes, call.loc,
                        "cast the values with pypto.cast(src, dtype)");
      if (!IsInteger(idx.dtype))
        throw UserError("pypto." + name + ": the index must be an integer tensor: " + shapes, call.loc,
                        "cast it with pypto.cast(index, pypto.DT_INT32)");
      if (idx.rank() != x.rank() || x.rank() != dst.rank())
        throw UserError("pypto." + name + ": the values, the index and the destination need one rank: " + shapes,
                        call.loc);
      for (int d = 0; d < x.rank(); ++d) {
        auto a = x.shape[d].as_const(), b = dst.shape[d].as_const();
        if (!idx.shape[d].same_as(x.shape[d]))
          throw UserError(
              "pypto." + name + ": the index and the values differ in dim " + std::to_string(d) + ": " + shapes,
              call.loc);
        if (d != axis && a && b && *a > *b)
          throw UserError("pypto." + name + ": dim " + std::to_string(d) +
                              " of the values is larger than the "
                              "destination's: " +
                              shapes,
                          call.loc, "along every dim but `dim` the values may not exceed the destination");
      }
      return;
    }
    case OpKind::Fill:
    case OpKind::Iota:
    case OpKind::Random:
      throw InternalError("made from nothing: handled above");
    case OpKind::Matmul:
      InferMatmul(f, call, out);
      return;
    case OpKind::Compare: {
      out.dtype = DataType::BOOL;
      out.shape = x.shape;
      if (call.inputs.size() < 2) return;  // x cmp scalar
      const Value& y = in(1);
      if (x.dtype != y.dtype)
        throw UserError("pypto." + name + ": operand dtypes differ: " + DTypeShape(x) + " and " + DTypeShape(y),
                        call.loc, "cast one operand with pypto.cast(t, dtype) so both have the same dtype");
      out.shape = BroadcastShapes(x.shape, y.shape, name, call.loc);
      return;
    }
    case OpKind::Select: {
      // inputs: cond, then a and b unless they are scalars (attrs a_scalar / b_scalar).
      if (x.dtype != DataType::BOOL)
        throw UserError("pypto.where: the condition must be a DT_BOOL tensor, got " + DTypeShape(x), call.loc,
                        "make it with a comparison (pypto.gt(x, 0), x > 0, ...) or pypto.cast(c, pypto.DT_BOOL)");
      out.shape = x.shape;
      std::optional<DataType> dt;
      std::string shapes = DTypeShape(x);
      for (size_t i = 1; i < call.inputs.size(); ++i) {
        const Value& v = in(i);
        shapes += ", " + DTypeShape(v);
        if (dt && *dt != v.dtype)
          throw UserError("pypto.where: the two values have different dtypes: " + shapes, call.loc,
                          "cast one of them with pypto.cast(t, dtype)");
        dt = v.dtype;
        out.shape = BroadcastShapes(out.shape, v.shape, "where", call.loc);
      }
      out.dtype = dt ? *dt : call.attrs.has("dtype") ? call.attrs.get<DataType>("dtype") : DataType::FP32;
      return;
    }
  }
}

}  // namespace pypto
