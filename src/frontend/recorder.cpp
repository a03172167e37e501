#include "frontend/recorder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

namespace pypto {

std::string DescribeValue(const Value& v) { return "%" + v.name + " " + DataTypeName(v.dtype) + ShapeStr(v.shape); }

Recorder::Recorder(const std::string& function_name) {
  f_.name = function_name;
  stack_.push_back(&f_.body);
}

std::string Recorder::FreshName(const std::string& hint) {
  std::set<std::string> used;
  for (auto& v : f_.values) used.insert(v.name);
  if (!hint.empty() && !used.count(hint)) return hint;
  std::string base = hint.empty() ? "t" : hint + "_";
  for (;;) {
    std::string n = base + std::to_string(next_tmp_++);
    if (!used.count(n)) return n;
  }
}

void Recorder::CheckLive(int id, const std::string& op, const SourceLoc& loc) const {
  if (finished_) throw UserError("the function '" + f_.name + "' has finished recording", loc);
  if (id < 0 || id >= static_cast<int>(f_.values.size()))
    throw UserError("pypto." + op + ": operand is not a tensor of this function", loc,
                    "tensors from another @pypto.jit function cannot be used here");
  for (auto [first, last] : dead_)
    if (id >= first && id < last)
      throw UserError("pypto." + op + ": operand %" + f_.value(id).name +
                          " was made on another path of a runtime branch (an `if pypto.cond(...)` traced once per "
                          "path), so it does not exist on this one",
                      loc, "compute it again on this path, or write it into a tensor declared before the loop");
}

int Recorder::AddParam(const std::string& name, const std::vector<Expr>& shape, DataType dtype, bool is_output,
                       const SourceLoc& loc) {
  CheckCanExist("parameter '" + name + "'", shape, dtype, loc);
  Value v;
  v.name = FreshName(name);
  v.dtype = dtype;
  v.shape = shape;
  v.kind = is_output ? ValueKind::Output : ValueKind::Input;
  v.loc = loc;
  int id = f_.AddValue(v);
  f_.params.push_back(name);
  f_.param_values.push_back(id);
  (is_output ? f_.outputs : f_.inputs).push_back(id);
  return id;
}

std::string Recorder::FreshSymbol(const std::string& hint, const SourceLoc& loc) {
  // Names starting with '$' belong to the passes (grid coordinates, reduction steps).
  if (hint.empty() || !(std::isalpha(static_cast<unsigned char>(hint[0])) || hint[0] == '_'))
    throw UserError("\"" + hint + "\" is not a valid symbol name: it must start with a letter or '_'", loc);
  if (symbols_.insert(hint).second) return hint;
  for (int n = 1;; ++n) {
    std::string s = hint + "_" + std::to_string(n);
    if (symbols_.insert(s).second) return s;
  }
}

Expr Recorder::AddDynamicVar(const std::string& hint) {
  std::string name = FreshSymbol(hint, {});
  f_.dynamic_vars.push_back(name);
  return Expr::Var(name);
}

void Recorder::CheckCanExist(const std::string& what, const std::vector<Expr>& shape, DataType dtype,
                             const SourceLoc& loc) const {
  std::vector<int64_t> dims;
  for (auto& d : shape) {
    auto c = d.as_const();
    if (!c) return;  // dynamic: checked when the call binds it
    dims.push_back(*c);
  }
  if (!TensorBytes(dims, dtype))
    throw UserError(what + ": a " + DataTypeName(dtype) + ShapeStr(shape) +
                        " tensor cannot exist: its size overflows or "
                        "exceeds " +
                        std::to_string(kMaxTensorBytes >> 40) + " TiB",
                    loc, "check the shape");
}

void Recorder::CheckNotDataDependent(const std::string& what, const std::vector<Expr>& shape, const SourceLoc& loc,
                                     bool call_start_ok) const {
  for (const Expr& d : shape)
    for (const std::string& v : d.FreeVars())
      if (auto it = read_symbols_.find(v); it != read_symbols_.end() && !(call_start_ok && call_start_reads_.count(v)))
        throw UserError(what + ": the shape " + ShapeStr(shape) + " depends on " + v + ", an element read at line " +
                            std::to_string(it->second.line) +
                            ", but tensors in memory are allocated when the call starts, before it is read",
                        loc, "give the tensor its largest shape and write or return a window of it");
}

int Recorder::CreateTensor(const std::vector<Expr>& shape, DataType dtype, const std::string& name,
                           const SourceLoc& loc) {
  for (auto& d : shape)
    if (auto c = d.as_const(); c && *c <= 0)
      throw UserError("pypto.tensor: shape " + ShapeStr(shape) + " has a non-positive dim", loc);
  CheckCanExist("pypto.tensor", shape, dtype, loc);
  CheckNotDataDependent("pypto.tensor", shape, loc, /*call_start_ok=*/true);
  for (const Expr& d : shape)
    for (const std::string& var : d.FreeVars())
      if (std::find(open_vars_.begin(), open_vars_.end(), var) != open_vars_.end() && !call_start_reads_.count(var))
        throw UserError("pypto.tensor: the shape " + ShapeStr(shape) + " depends on the loop index " + var +
                            ", but tensors in memory are allocated when the call starts, before the loop runs",
                        loc, "give the tensor its largest shape and write or return a window of it");
  Value v;
  v.name = FreshName(name.empty() ? "tensor" : name);
  v.dtype = dtype;
  v.shape = shape;
  v.kind = ValueKind::Created;
  v.loc = loc;
  return f_.AddValue(v);
}

int Recorder::Record(OpCall call, const std::string& result_name) {
  if (finished_) throw UserError("the function '" + f_.name + "' has finished recording", call.loc);
  for (int in : call.inputs) {
    CheckLive(in, call.op, call.loc);
    CheckBranchScope(in, "pypto." + call.op, call.loc);
  }
  call.id = next_op_++;
  call.tile_shape = tile_shape_;
  call.label = label_;
  // A shape attribute (expand_clone's valid shape, full's) simplified with the loop ranges as
  // the views' shapes are, so min(32 - 16 * i, 16) in a two-trip loop is the 16 it equals.
  if (auto it = call.attrs.map.find("shape"); it != call.attrs.map.end())
    if (auto* dims = std::get_if<std::vector<Expr>>(&it->second)) *dims = Simplified(*dims);
  const OpDef& def = GetOpDef(call.op);
  // A tensor made with pypto.tensor holds nothing until something is assembled into it.
  size_t n_read = WritesInPlace(def.kind) ? call.inputs.size() - 1 : call.inputs.size();
  for (size_t i = 0; i < n_read; ++i) {
    const Value& v = f_.value(call.inputs[i]);
    int root = f_.MemoryRoot(v.id);
    if (f_.value(root).kind == ValueKind::Created && !written_.count(root))
      throw UserError("pypto." + call.op + " reads %" + f_.value(root).name + " " + DataTypeName(v.dtype) +
                          ShapeStr(f_.value(root).shape) + ", which is never written before this line",
                      call.loc, "assemble a result into it first (pypto.assemble or t[...] = expr), or read the input");
  }
  if (WritesInPlace(def.kind)) {
    written_.insert(f_.MemoryRoot(call.inputs.back()));
    if (def.kind == OpKind::Scatter || def.kind == OpKind::Signal) {
      const Value& d = f_.value(call.inputs.back());
      if (!f_.value(f_.MemoryRoot(d.id)).is_storage())
        throw UserError("pypto." + call.op + ": the " + (def.kind == OpKind::Signal ? "signal " : "destination ") +
                            DescribeValue(d) + " is an intermediate result, not a tensor in memory",
                        call.loc,
                        def.kind == OpKind::Signal
                            ? "signal a cell of a window (pld.window / create_shmem_signal)"
                            : "scatter into a parameter or a tensor made with pypto.tensor(...)");
      Value unused;
      InferOpType(f_, call, unused);  // checks only: a scatter has no result
      MakeOutput(call.inputs.back());
    }
  }
  if (!WritesInPlace(def.kind)) {
    Value out;
    out.kind = ValueKind::Temp;
    out.loc = call.loc;
    InferOpType(f_, call, out);
    out.name = FreshName(result_name);
    call.output = f_.AddValue(out);
  }
  int result = call.output;
  if (result >= 0 && !branches_.empty()) value_branches_[result] = branches_;
  stack_.back()->Add(std::move(call));
  return result;
}

void Recorder::MakeOutput(int dst) {
  // Writing into a parameter (or a window or reshape of it) makes it an in-place output.
  int root = f_.MemoryRoot(dst);
  Value& rv = f_.value(root);
  if (rv.kind == ValueKind::Input) {
    rv.kind = ValueKind::Output;
    f_.inputs.erase(std::find(f_.inputs.begin(), f_.inputs.end(), root));
    f_.outputs.push_back(root);
  }
}

void Recorder::CheckBranchScope(int id, const std::string& what, const SourceLoc& loc) const {
  auto it = value_branches_.find(id);
  if (it == value_branches_.end()) return;
  const std::vector<int>& made = it->second;
  bool inside = made.size() <= branches_.size() && std::equal(made.begin(), made.end(), branches_.begin());
  if (inside) return;
  const Value& v = f_.value(id);
  const SourceLoc& where = branch_loc_.at(made.back());
  throw UserError(what + " reads %" + v.name + " " + DataTypeName(v.dtype) + ShapeStr(v.shape) +
                      ", computed in the runtime branch at line " + std::to_string(where.line) +
                      ": it exists only when that branch runs",
                  loc, "write the result into a tensor in each branch (out[...] = value) and read that tensor after");
}

int Recorder::Unary(const std::string& op, int x, const SourceLoc& loc) {
  OpCall c;
  c.op = op;
  c.inputs = {x};
  c.loc = loc;
  return Record(std::move(c));
}

int Recorder::Binary(const std::string& op, int x, int y, const SourceLoc& loc) {
  OpCall c;
  c.op = op;
  c.inputs = {x, y};
  c.loc = loc;
  return Record(std::move(c));
}

int Recorder::BinaryScalar(const std::string& op, int x, double scalar, const SourceLoc& loc, bool scalar_first,
                           std::optional<int64_t> exact) {
  CheckLive(x, op, loc);
  const Value& xv = f_.value(x);
  // (A storage format, FP8 / FP4, gets its own error where the op is checked.)
  bool int_tensor = !IsFloat(xv.dtype) && !IsStorageOnly(xv.dtype);
  if (int_tensor) {
    // Integer tensors take the scalar exactly, as numpy does for a Python int: one that is not
    // an integer, or that the dtype cannot hold, is refused rather than rounded or wrapped.
    bool above_int64 = exact && scalar >= 0 && *exact < 0;  // a uint64 above 2^63
    std::ostringstream text;
    text.precision(17);
    if (exact && above_int64)
      text << static_cast<uint64_t>(*exact);
    else if (exact)
      text << *exact;
    else
      text << scalar;
    if (!exact && (!std::isfinite(scalar) || std::trunc(scalar) != scalar))
      throw UserError("pypto." + op + ": the scalar " + text.str() + " is not an integer but the tensor " +
                          DescribeValue(xv) + " is",
                      loc, "cast the tensor to a float dtype first, or use an integer scalar");
    bool in_range;
    if (exact)
      in_range = above_int64 ? xv.dtype == DataType::UINT64
                             : *exact >= IntegerMin(xv.dtype) &&
                                   (xv.dtype == DataType::UINT64 || *exact <= IntegerMax(xv.dtype));
    else
      in_range = scalar >= static_cast<double>(IntegerMin(xv.dtype)) &&
                 scalar < (xv.dtype == DataType::UINT64  ? 0x1p64
                           : xv.dtype == DataType::INT64 ? 0x1p63
                                                         : static_cast<double>(IntegerMax(xv.dtype)) + 1);
    if (!in_range) {
      std::string max = xv.dtype == DataType::UINT64 ? "18446744073709551615" : std::to_string(IntegerMax(xv.dtype));
      throw UserError("pypto." + op + ": the scalar " + text.str() + " is out of the range of " +
                          DataTypeName(xv.dtype) + " [" + std::to_string(IntegerMin(xv.dtype)) + ", " + max +
                          "] of the tensor " + DescribeValue(xv),
                      loc, "use a scalar the dtype can hold, or cast the tensor to a wider dtype first");
    }
    if (!exact)
      exact = scalar >= 0x1p63 ? static_cast<int64_t>(static_cast<uint64_t>(scalar)) : static_cast<int64_t>(scalar);
  }
  OpCall c;
  c.op = op + "_scalar";
  c.inputs = {x};
  c.attrs.set("scalar", scalar);
  if (int_tensor) c.attrs.set("scalar_int", *exact);
  if (scalar_first && !GetOpDef(op).commutative) c.attrs.set("scalar_first", int64_t{1});
  c.loc = loc;
  return Record(std::move(c));
}

int Recorder::Op(const std::string& op, const std::vector<int>& inputs, Attrs attrs, const SourceLoc& loc) {
  if (!HasOpDef(op)) throw InternalError("unknown op '" + op + "'");
  OpCall c;
  c.op = op;
  c.inputs = inputs;
  c.attrs = std::move(attrs);
  c.loc = loc;
  return Record(std::move(c));
}

int Recorder::Reduce(const std::string& op, int x, int64_t dim, bool keepdim, const SourceLoc& loc) {
  CheckLive(x, op, loc);
  DataType dt = f_.value(x).dtype;
  if (op == "sum" && Is16BitFloat(dt)) {
    // A 16-bit sum accumulates in fp32 and rounds once (as torch does), so its result does not
    // depend on how many tiles the reduction spans. max/min are exact in any precision.
    int64_t rank = f_.value(x).rank();
    int sum32 = Reduce(op, Cast(x, DataType::FP32, loc), dim, keepdim, loc);
    if (keepdim || static_cast<int64_t>(tile_shape_.size()) != rank) return Cast(sum32, dt, loc);
    // The rounding cast is ours, on the reduced rank: it tiles with the user's shape minus the
    // reduced dim (the user could not set one for it).
    struct RestoreTile {
      std::vector<int64_t>& tile;
      std::vector<int64_t> saved;
      ~RestoreTile() { tile = std::move(saved); }
    } restore{tile_shape_, tile_shape_};
    tile_shape_.erase(tile_shape_.begin() + NormalizeAxis(dim, rank, op, loc));
    if (tile_shape_.empty()) tile_shape_ = {1};
    return Cast(sum32, dt, loc);
  }
  OpCall c;
  c.op = op;
  c.inputs = {x};
  c.attrs.set("dim", static_cast<int64_t>(NormalizeAxis(dim, f_.value(x).rank(), op, loc)));
  c.attrs.set("keepdim", static_cast<int64_t>(keepdim));
  c.loc = loc;
  return Record(std::move(c));
}

int Recorder::Cast(int x, DataType dtype, const SourceLoc& loc, RoundMode round) {
  OpCall c;
  c.op = "cast";
  c.inputs = {x};
  c.attrs.set("dtype", dtype);
  if (round != RoundMode::RINT) c.attrs.set("round_mode", static_cast<int64_t>(round));
  c.loc = loc;
  return Record(std::move(c));
}

int Recorder::Matmul(int a, int b, int out_dtype, bool a_trans, bool b_trans, const SourceLoc& loc) {
  OpCall c;
  c.op = "matmul";
  c.inputs = {a, b};
  c.attrs.set("a_trans", static_cast<int64_t>(a_trans));
  c.attrs.set("b_trans", static_cast<int64_t>(b_trans));
  if (out_dtype >= 0) c.attrs.set("out_dtype", static_cast<DataType>(out_dtype));
  if (!cube_tile_.empty()) c.attrs.set("cube_tile", cube_tile_);
  c.loc = loc;
  return Record(std::move(c));
}

void Recorder::SetCubeTileShapes(const std::vector<int64_t>& m, const std::vector<int64_t>& k,
                                 const std::vector<int64_t>& n, const SourceLoc& loc) {
  std::vector<int64_t> all;
  const char* names[] = {"m", "k", "n"};
  const std::vector<int64_t>* axes[] = {&m, &k, &n};
  for (int i = 0; i < 3; ++i) {
    const auto& a = *axes[i];
    std::string got = names[i] + std::string("=") + IntList(a, "[", "]");
    if (a.size() != 2)
      throw UserError("pypto.set_cube_tile_shapes: " + got + " must be [L0, L1], two sizes", loc,
                      "e.g. pypto.set_cube_tile_shapes([128, 128], [64, 256], [256, 256])");
    if (a[0] <= 0 || a[0] > a[1] || a[1] % a[0] != 0)
      throw UserError("pypto.set_cube_tile_shapes: " + got + " needs 0 < L0 <= L1 and L1 a multiple of L0", loc);
    all.push_back(a[0]);
    all.push_back(a[1]);
  }
  cube_tile_ = all;
}

Expr Recorder::BeginLoop(const std::string& idx_name, const std::string& loop_name, const Expr& start, const Expr& stop,
                         const Expr& step, const SourceLoc& loc) {
  if (auto s = step.as_const(); s && *s <= 0)
    throw UserError("pypto.loop: step must be positive, got " + step.str(), loc);
  LoopInfo info;
  // Nested loops that both say "i" get i and i_1: each index is its own symbol.
  info.var = FreshSymbol(idx_name.empty() ? "i" : idx_name, loc);
  info.name = loop_name.empty() ? "LOOP_" + std::to_string(next_loop_) : loop_name;
  ++next_loop_;
  info.start = start;
  info.stop = stop;
  info.step = step;
  info.loc = loc;
  // Inside the body the index lies in [start, stop - 1]: a slice bound such as
  // min((i + 1) * t, n) - i * t then simplifies to a constant (see Simplified).
  auto lo = start.Bounds(ranges_), hi = stop.Bounds(ranges_);
  std::optional<int64_t> hi_bound = hi ? std::optional<int64_t>(hi->second) : stop.UpperBound();
  if (lo && hi_bound && lo->first <= *hi_bound - 1) ranges_[info.var] = {lo->first, *hi_bound - 1};
  LoopRegion<OpCall>& l = stack_.back()->AddLoop(info);
  stack_.push_back(l.body.get());
  scopes_.push_back(Scope::Loop);
  open_vars_.push_back(info.var);
  return Expr::Var(info.var);
}

Expr Recorder::BeginBranch(const Expr& cond, bool negate, const SourceLoc& loc) {
  if (finished_) throw UserError("the function '" + f_.name + "' has finished recording", loc);
  Expr truth = Truth(cond);  // 1 when cond != 0 (integers)
  LoopInfo info;
  info.var = FreshSymbol(negate ? "else" : "if", loc);
  if (!negate) last_if_ = next_branch_;
  info.name = (negate ? "ELSE_" : "IF_") + std::to_string(negate ? last_if_ : next_branch_);
  info.start = Expr(0);
  info.stop = negate ? Expr(1) - truth : truth;
  info.step = Expr(1);
  info.loc = loc;
  LoopRegion<OpCall>& l = stack_.back()->AddLoop(info);
  stack_.push_back(l.body.get());
  scopes_.push_back(Scope::Branch);
  open_vars_.push_back(info.var);
  ranges_[info.var] = {0, 0};  // a branch runs once, with index 0
  branch_loc_[next_branch_] = loc;
  branches_.push_back(next_branch_++);
  return Expr::Var(info.var);
}

void Recorder::CloseScope() {
  stack_.pop_back();
  if (scopes_.back() == Scope::Branch) branches_.pop_back();
  scopes_.pop_back();
  ranges_.erase(open_vars_.back());
  open_vars_.pop_back();
}

void Recorder::EndLoop() {
  // The scalar reads made in the loop's body end with it.
  while (!scopes_.empty() && scopes_.back() == Scope::Read) CloseScope();
  PYPTO_CHECK(stack_.size() > 1 && !scopes_.empty(), "EndLoop without BeginLoop");
  CloseScope();
}

std::vector<int64_t> Recorder::Position() const {
  std::vector<int64_t> path;
  for (size_t d = 0; d < stack_.size(); ++d)  // an open loop is the last entry of its parent
    path.push_back(static_cast<int64_t>(stack_[d]->entries.size()) - (d + 1 < stack_.size() ? 1 : 0));
  return path;
}

Recorder::Mark Recorder::Checkpoint() const {
  Mark m;
  m.depth = stack_.size();
  m.entries = stack_.back()->entries.size();
  m.values = f_.values.size();
  m.assumptions = f_.assumptions.size();
  m.tile_shape = tile_shape_;
  m.cube_tile = cube_tile_;
  m.label = label_;
  return m;
}

void Recorder::Rollback(const Mark& m) {
  // Scalar reads made since the mark are still open (they end with their loop): they go with
  // the entries they hold.
  while (stack_.size() > m.depth && !scopes_.empty() && scopes_.back() == Scope::Read) CloseScope();
  PYPTO_CHECK(stack_.size() == m.depth && stack_.back()->entries.size() >= m.entries,
              "Rollback outside the region of its checkpoint");
  stack_.back()->entries.resize(m.entries);
  f_.assumptions.resize(m.assumptions);
  int n = static_cast<int>(f_.values.size());
  if (n > static_cast<int>(m.values)) dead_.push_back({static_cast<int>(m.values), n});
  for (int id = static_cast<int>(m.values); id < n; ++id) {
    Value& v = f_.value(id);
    if (v.kind == ValueKind::Created) v.kind = ValueKind::Temp;  // never allocated
    written_.erase(id);
    value_branches_.erase(id);
  }
  tile_shape_ = m.tile_shape;
  cube_tile_ = m.cube_tile;
  label_ = m.label;
}

Expr Recorder::ReadScalar(int x, const std::vector<Expr>& index_in, const SourceLoc& loc) {
  CheckLive(x, "getitem", loc);
  const Value v = f_.value(x);  // (copies: materializing below adds values)
  std::vector<Expr> index = Simplified(index_in);
  const Value root = f_.value(f_.Root(x));
  std::string what = "reading the element " + DescribeValue(v) + "[" + [&] {
    std::string s;
    for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + index[i].str();
    return s;
  }() + "]";
  if (IsFloat(v.dtype) || v.dtype == DataType::BOOL)
    throw UserError(what + ": only integer tensors give a symbolic scalar", loc,
                    "index an integer tensor (DT_INT32, as PyPTO documents), or slice with ':' to keep the dim");
  if (static_cast<int>(index.size()) != v.rank())
    throw UserError(
        what + ": " + std::to_string(index.size()) + " indices for a tensor of rank " + std::to_string(v.rank()), loc);
  // An element the function computes (a Temp) is read from memory: the value is kept in a tensor
  // right where it is made; an element of memory seen in another shape (a reshape, or a window of
  // one) from a copy of the tensor read, made here. The runtime reads it once the launches before
  // the read have run (CallState::Walk).
  const bool reshaped = v.kind == ValueKind::Reshape || root.kind == ValueKind::Reshape;
  int mem = root.id;
  if (reshaped) {
    mem = CreateTensor(v.shape, v.dtype, v.name + "_read", loc);
    Assemble(x, std::vector<Expr>(v.shape.size(), Expr(0)), mem, loc);
  } else if (root.kind == ValueKind::Temp) {
    mem = MaterializeWhereMade(root.id, loc);
  }
  for (size_t d = 0; d < index.size(); ++d) {
    auto i = index[d].as_const();
    auto n = v.shape[d].as_const();
    if (i && (*i < 0 || (n && *i >= *n)))
      throw UserError(what + ": index " + std::to_string(*i) + " is out of bounds in dim " + std::to_string(d), loc);
  }
  ScalarRead read;
  read.value = mem;
  read.tensor = f_.value(mem).name;
  for (size_t d = 0; d < index.size(); ++d)
    read.index.push_back(v.kind == ValueKind::View && !reshaped ? v.offsets[d] + index[d] : index[d]);
  LoopInfo info;
  info.var = FreshSymbol(root.name + "_at", loc);
  info.name = "READ_" + info.var;
  info.start = Expr(0);
  info.stop = Expr(1);
  info.step = Expr(1);
  info.loc = loc;
  info.read = std::move(read);
  LoopRegion<OpCall>& l = stack_.back()->AddLoop(info);
  stack_.push_back(l.body.get());
  scopes_.push_back(Scope::Read);
  const bool call_start = root.kind == ValueKind::Input && !reshaped &&
                          std::all_of(scopes_.begin(), scopes_.end(), [](Scope s) { return s == Scope::Read; });
  if (call_start) call_start_reads_.insert(info.var);
  open_vars_.push_back(info.var);
  read_symbols_[info.var] = loc;
  return Expr::Var(info.var);
}

void Recorder::SetVecTileShapes(const std::vector<int64_t>& dims, const SourceLoc& loc) {
  if (dims.empty()) throw UserError("pypto.set_vec_tile_shapes needs at least one dim", loc);
  for (auto d : dims)
    if (d <= 0) throw UserError("pypto.set_vec_tile_shapes: every dim must be positive, got " + std::to_string(d), loc);
  tile_shape_ = dims;
}

void Recorder::Return(const std::vector<int>& values, const SourceLoc& loc) {
  for (int id : values) {
    CheckLive(id, "return", loc);
    CheckBranchScope(id, "return", loc);
    Value& v = f_.value(id);
    if (v.kind == ValueKind::Created) {
      if (!written_.count(id))
        throw UserError(
            "returning %" + v.name + " " + DataTypeName(v.dtype) + ShapeStr(v.shape) + ", which is never written", loc,
            "assemble results into it (pypto.assemble or t[...] = expr) before returning it");
      v.kind = ValueKind::Output;
      f_.outputs.push_back(id);
      f_.returns.push_back(id);
    } else if (v.kind == ValueKind::Output) {
      f_.returns.push_back(id);
    } else {
      // A computed (or input, or view) value: copy it into a fresh output tensor. Copy the
      // type first: CreateTensor grows the value table and invalidates `v`.
      std::vector<Expr> shape = v.shape;
      DataType dtype = v.dtype;
      // The copy is the user's line that made the value (not the caller's), with the tile shape
      // that value was made with when the one in force has another rank (a reduction without
      // keepdim returned as it is).
      SourceLoc at = v.loc.known() ? v.loc : loc;
      std::vector<int64_t> saved = tile_shape_;
      if (!tile_shape_.empty() && tile_shape_.size() != shape.size()) {
        tile_shape_.clear();  // automatic, unless the producer's tile has the right rank
        f_.body.ForEach([&](const OpCall& c) {
          if (c.output == id && c.tile_shape.size() == shape.size()) tile_shape_ = c.tile_shape;
        });
      }
      CheckNotDataDependent("returning %" + v.name, shape, loc);
      int out = CreateTensor(shape, dtype, "out", at);
      std::vector<Expr> zeros(shape.size(), Expr(0));
      Assemble(id, zeros, out, at);
      tile_shape_ = saved;
      f_.value(out).kind = ValueKind::Output;
      f_.outputs.push_back(out);
      f_.returns.push_back(out);
    }
  }
}

Function Recorder::Finish() {
  while (!scopes_.empty() && scopes_.back() == Scope::Read) CloseScope();
  if (stack_.size() != 1) throw UserError("a pypto.loop was not closed before the function returned");
  // (A read of an element the function writes runs after the launches before it: the runtime's
  // phased calls, CallState::Walk.)
  finished_ = true;
  return f_;
}

}  // namespace pypto
