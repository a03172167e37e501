#include "passes/kernel_body.h"

#include <map>

#include "ir/op_registry.h"

namespace pypto {

namespace {

// The instructions of one kernel: for each tile op, the loads of its operands, its PTO
// instructions and the stores of what leaves the kernel, at the grid point `coord`.
class KernelBodyBuilder {
 public:
  explicit KernelBodyBuilder(const Function& fn) : fn_(fn) {}

  Kernel Build(int k, const std::vector<const TileOp*>& ops, const std::string& reason) {
    Builder b;
    b.k.id = k;
    b.k.reason = reason;
    const TileOp& first = *ops.front();
    int R = static_cast<int>(first.extent.size());
    b.k.grid = first.counts();
    std::string name = "k" + std::to_string(k);
    for (auto* t : ops) {
      b.k.tile_ops.push_back(t->id);
      if (name.size() < 40) name += "_" + t->op;
    }
    b.k.name = name;
    std::vector<Expr> coord;
    for (int d = 0; d < R; ++d) coord.push_back(Expr::Var(GridVar(d)));

    if (first.splits_reduction()) {
      // acc = reduce(tile 0); for r in [0, n-1): acc = combine(acc, reduce(tile r+1)).
      const TileOp& t = first;
      const OpDef& def = GetOpDef(t.op);
      int axis = t.reduce_axis;
      b.k.grid[axis] = Expr(1);
      b.k.reason +=
          "; reduces across " + t.counts()[axis].str() + " tiles along axis " + std::to_string(axis) + " in a loop";
      auto c0 = coord;
      c0[axis] = Expr(0);
      int acc = Compute(b, t, c0, b.k.body);
      auto cr = coord;
      cr[axis] = Expr::Var(kReduceVar) + Expr(1);
      Instr loop;
      loop.opcode = Opcode::LOOP;
      loop.var = kReduceVar;
      loop.trip = t.counts()[axis] - Expr(1);
      loop.loc = t.loc;
      b.bufs_by_key.clear();
      int part = Compute(b, t, cr, loop.body);
      Instr comb;
      PYPTO_CHECK(def.combine, "pypto.", t.op, " reduces across tiles but has no combining instruction");
      comb.opcode = *def.combine;
      comb.srcs = {acc, part};
      comb.dst = acc;
      comb.loc = t.loc;
      loop.body.push_back(comb);
      b.k.body.push_back(loop);
      if (fn_.value(t.output).materialized) Store(b, t, acc, t.output, c0, b.k.body);
      return std::move(b.k);
    }

    for (auto* t : ops) {
      if (t->is_matmul()) b.k.core = CoreKind::AIC;
      int out = t->is_matmul() ? Cube(b, *t, coord, b.k.body) : Compute(b, *t, coord, b.k.body);
      const Value& ov = fn_.value(t->output);
      if (ov.kind == ValueKind::Temp) {
        b.produced[t->output] = out;
        if (ov.materialized) Store(b, *t, out, t->output, coord, b.k.body);
      }
    }
    return std::move(b.k);
  }

 private:
  struct Builder {
    Kernel k;
    std::map<std::string, int> bufs_by_key;  // "value|access" -> buffer holding that tile
    std::map<int, int> produced;             // value -> buffer
  };

  int Param(Builder& b, int value, const std::vector<int>& dim_map, bool write) {
    for (size_t i = 0; i < b.k.params.size(); ++i) {
      auto& p = b.k.params[i];
      if (p.value == value && p.dim_map == dim_map) {
        (write ? p.write : p.read) = true;
        return static_cast<int>(i);
      }
    }
    KernelParam p;
    p.value = value;
    p.dim_map = dim_map;
    (write ? p.write : p.read) = true;
    b.k.params.push_back(p);
    return static_cast<int>(b.k.params.size()) - 1;
  }

  // Right-aligned map from R kernel dims to the dims of a rank-r value.
  static std::vector<int> AlignedMap(int R, int r) {
    std::vector<int> m(R, -1);
    for (int d = 0; d < R; ++d) m[d] = d - (R - r) >= 0 ? d - (R - r) : -1;
    return m;
  }

  int NewBuf(Builder& b, int value, DataType dt, const std::vector<int64_t>& shape, const std::vector<Expr>& valid,
             const std::string& name) {
    TileBuf t;
    t.id = static_cast<int>(b.k.bufs.size());
    t.name = name;
    t.dtype = dt;
    t.shape = shape;
    t.valid = valid;
    t.value = value;
    b.k.bufs.push_back(t);
    return t.id;
  }

  // Valid extent of each dim of a tile at element offsets `start` (coord * tile).
  std::vector<Expr> Valid(const Value& v, const std::vector<int>& dim_map, const std::vector<int64_t>& tile,
                          const std::vector<Expr>& start) const {
    std::vector<Expr> valid;
    for (size_t d = 0; d < tile.size(); ++d) {
      if (dim_map[d] < 0 || tile[d] == 1) {  // a tile of extent 1 is never a tail
        valid.push_back(Expr(1));
        continue;
      }
      Expr ext = v.shape[dim_map[d]];
      auto c = ext.as_const();
      if (c && *c % tile[d] == 0)
        valid.push_back(Expr(tile[d]));  // no tail along this dim
      else
        valid.push_back(Min(Expr(tile[d]), ext - start[d]));
    }
    return valid;
  }

  std::vector<Expr> Starts(const std::vector<Expr>& coord, const std::vector<int64_t>& tile,
                           const std::vector<bool>& bcast) const {
    std::vector<Expr> s;
    for (size_t d = 0; d < tile.size(); ++d) s.push_back(bcast[d] ? Expr(0) : coord[d] * Expr(tile[d]));
    return s;
  }

  // The buffer holding input i of `t` at `coord`, loading it if it is not in UB yet.
  int Input(Builder& b, const TileOp& t, size_t i, const std::vector<Expr>& coord, std::vector<Instr>& out) {
    int v = t.inputs[i].value;
    if (b.produced.count(v)) {
      PYPTO_CHECK(t.inputs[i].perm.empty(), "a permuted read of a tile made in the same kernel");
      return b.produced.at(v);
    }
    const Value& val = fn_.value(v);
    int R = static_cast<int>(t.extent.size());
    const std::vector<int>& perm = t.inputs[i].perm;
    std::vector<int> map = perm.empty() ? AlignedMap(R, val.rank()) : perm;
    auto tile = t.input_tile(i);
    std::vector<bool> from_zero = t.inputs[i].broadcast;  // broadcast or whole: tile 0 along the dim
    for (size_t d = 0; d < t.inputs[i].whole.size(); ++d) from_zero[d] = from_zero[d] || t.inputs[i].whole[d] > 0;
    auto starts = Starts(coord, tile, from_zero);
    std::string key = std::to_string(v) + "|" + ShapeStr(starts);
    for (int d : perm) key += "|" + std::to_string(d);
    auto it = b.bufs_by_key.find(key);
    if (it != b.bufs_by_key.end()) return it->second;
    int buf = NewBuf(b, v, val.dtype, tile, Valid(val, map, tile, starts), val.name);
    Instr ld;
    ld.opcode = Opcode::TLOAD;
    ld.dst = buf;
    ld.param = Param(b, v, map, false);
    ld.coord = starts;
    ld.loc = t.loc;
    out.push_back(ld);
    b.bufs_by_key[key] = buf;
    return buf;
  }

  void Store(Builder& b, const TileOp& t, int buf, int value, const std::vector<Expr>& coord, std::vector<Instr>& out) {
    const Value& val = fn_.value(value);
    int R = static_cast<int>(t.extent.size());
    std::vector<int> map;
    std::vector<bool> bcast(R, false);
    if (t.reduce_axis >= 0 && !t.keepdim) {
      for (int d = 0, k = 0; d < R; ++d) map.push_back(d == t.reduce_axis ? -1 : k++);
    } else {
      map = AlignedMap(R, val.rank());
    }
    if (t.reduce_axis >= 0) bcast[t.reduce_axis] = true;
    Instr st;
    st.opcode = Opcode::TSTORE;
    st.srcs = {buf};
    st.param = Param(b, value, map, true);
    st.coord = Starts(coord, b.k.bufs[buf].shape, bcast);
    st.loc = t.loc;
    if (t.op == "assemble" && t.attrs.has("atomic_add")) {  // a read-modify-write of the destination
      st.atomic_add = true;
      b.k.params[st.param].read = true;
    }
    out.push_back(st);
  }

  static bool Equal(const std::vector<int64_t>& a, const std::vector<int64_t>& b) { return a == b; }

  // `buf` as a tile of shape S: itself, or broadcast into a new one (its size-1 dims repeat).
  int Full(Builder& b, int buf, const std::vector<int64_t>& S, const std::vector<Expr>& valid, const SourceLoc& loc,
           std::vector<Instr>& out) {
    if (Equal(b.k.bufs[buf].shape, S)) return buf;
    Instr bc;
    bc.opcode = Opcode::TBROADCAST;
    bc.srcs = {buf};
    bc.dst = NewBuf(b, -1, b.k.bufs[buf].dtype, S, valid, b.k.bufs[buf].name + "_bcast");
    bc.loc = loc;
    out.push_back(bc);
    return bc.dst;
  }

  // The op's constant scalar `key` (a double, and `<key>_int` when the program gave an integer).
  static void ReadScalar(const TileOp& t, const std::string& key, Instr& in) {
    in.scalar = t.attrs.get<double>(key);
    if (t.attrs.has(key + "_int")) in.scalar_int = t.attrs.get<int64_t>(key + "_int");
  }

  // A TEXPANDS of the op's scalar attribute `key`: the constant, or the run-time value of the
  // expression `<key>_expr` (a loop index, a dim, a scalar read). The caller sets dst.
  static Instr ScalarFill(const TileOp& t, const std::string& key) {
    Instr fill;
    fill.opcode = Opcode::TEXPANDS;
    fill.has_scalar = true;
    if (t.attrs.has(key + "_expr"))
      fill.scalar_expr = t.attrs.exprs(key + "_expr").at(0);
    else
      ReadScalar(t, key, fill);
    fill.loc = t.loc;
    return fill;
  }

  // Emits the instructions computing `t` at `coord` into `out`; returns the result buffer.
  int Compute(Builder& b, const TileOp& t, const std::vector<Expr>& coord, std::vector<Instr>& out) {
    const OpDef& def = GetOpDef(t.op);
    const Value& ov = fn_.value(t.output);
    int R = static_cast<int>(t.extent.size());
    Instr ins;
    ins.loc = t.loc;
    auto result_buf = [&](const std::vector<int64_t>& shape, const std::vector<Expr>& valid) {
      return NewBuf(b, t.output, ov.dtype, shape, valid, ov.name);
    };
    switch (def.kind) {
      case OpKind::Unary:
      case OpKind::BinaryScalar:
      case OpKind::Cast: {
        int x = Input(b, t, 0, coord, out);
        bool run_time_scalar = def.kind == OpKind::BinaryScalar && t.attrs.has("scalar_expr");
        if (run_time_scalar ||
            (def.kind == OpKind::BinaryScalar && t.attrs.has("scalar_first") && !HasScalarFirstForm(*def.pto_scalar))) {
          // scalar op x without a scalar/tile instruction, or x op a run-time scalar (the
          // instructions take constants): a tile of the scalar, then the binary one.
          // A 16-bit float tile would round the scalar first (fmod(0.1, x) in bf16 would divide
          // 0.10009765625): those compute in fp32 and round once, as docs/numerics.md says.
          DataType dt = b.k.bufs[x].dtype;
          bool widen = Is16BitFloat(dt);
          DataType calc = widen ? DataType::FP32 : dt;
          int xs = x;
          if (widen) {
            Instr up;
            up.opcode = Opcode::TCVT;
            up.dtype = calc;
            up.srcs = {x};
            up.dst = NewBuf(b, -1, calc, t.tile, b.k.bufs[x].valid, ov.name + "_f32");
            up.loc = t.loc;
            out.push_back(up);
            xs = up.dst;
          }
          Instr fill = ScalarFill(t, "scalar");
          fill.dst = NewBuf(b, -1, calc, t.tile, b.k.bufs[x].valid, ov.name + "_scalar");
          out.push_back(fill);
          ins.opcode = *def.pto;
          ins.srcs = t.attrs.has("scalar_first") ? std::vector<int>{fill.dst, xs} : std::vector<int>{xs, fill.dst};
          if (!widen) {
            ins.dst = result_buf(t.tile, b.k.bufs[x].valid);
            out.push_back(ins);
            return ins.dst;
          }
          ins.dst = NewBuf(b, -1, calc, t.tile, b.k.bufs[x].valid, ov.name + "_r32");
          out.push_back(ins);
          Instr down;
          down.opcode = Opcode::TCVT;
          down.dtype = dt;
          down.srcs = {ins.dst};
          down.dst = result_buf(t.tile, b.k.bufs[x].valid);
          down.loc = t.loc;
          out.push_back(down);
          return down.dst;
        }
        ins.opcode = *(def.kind == OpKind::BinaryScalar ? def.pto_scalar : def.pto);
        if (def.kind == OpKind::BinaryScalar) {
          ins.has_scalar = true;
          ReadScalar(t, "scalar", ins);
          ins.scalar_first = t.attrs.has("scalar_first");
        }
        if (def.kind == OpKind::Cast) {
          ins.dtype = t.attrs.get<DataType>("dtype");
          if (t.attrs.has("round_mode")) ins.round = static_cast<RoundMode>(t.attrs.get<int64_t>("round_mode"));
        }
        ins.srcs = {x};
        ins.dst = result_buf(t.tile, b.k.bufs[x].valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::Compare:
      case OpKind::Select: {
        const auto& S = t.tile;
        std::vector<Expr> valid = Valid(ov, AlignedMap(R, ov.rank()), S, Starts(coord, S, std::vector<bool>(R, false)));
        if (def.kind == OpKind::Compare) {
          ins.cmp = def.cmp;
          bool run_time_scalar = t.attrs.has("scalar_expr");
          ins.opcode = t.inputs.size() == 1 && !run_time_scalar ? *def.pto_scalar : *def.pto;
          if (t.inputs.size() == 1 && !run_time_scalar) {
            ins.has_scalar = true;
            ReadScalar(t, "scalar", ins);
          }
          for (size_t i = 0; i < t.inputs.size(); ++i)
            ins.srcs.push_back(Full(b, Input(b, t, i, coord, out), S, valid, t.loc, out));
          if (run_time_scalar) {  // x cmp s with s known at run time: against a tile of s in x's dtype
            Instr fill = ScalarFill(t, "scalar");
            fill.dst = NewBuf(b, -1, b.k.bufs[ins.srcs[0]].dtype, S, valid, ov.name + "_scalar");
            out.push_back(fill);
            ins.srcs.push_back(fill.dst);
          }
        } else {  // where(cond, a, b): a scalar operand becomes a tile of it
          ins.opcode = *def.pto;
          size_t next = 0;
          ins.srcs.push_back(Full(b, Input(b, t, next++, coord, out), S, valid, t.loc, out));
          for (const char* scalar : {"a_scalar", "b_scalar"}) {
            if (!t.attrs.has(scalar)) {
              ins.srcs.push_back(Full(b, Input(b, t, next++, coord, out), S, valid, t.loc, out));
              continue;
            }
            Instr fill = ScalarFill(t, scalar);
            fill.dst = NewBuf(b, -1, ov.dtype, S, valid, ov.name + "_" + scalar);
            out.push_back(fill);
            ins.srcs.push_back(fill.dst);
          }
        }
        ins.dst = result_buf(S, valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::Binary: {
        int x = Input(b, t, 0, coord, out);
        int y = Input(b, t, 1, coord, out);
        const auto& S = t.tile;
        std::vector<Expr> valid = Valid(ov, AlignedMap(R, ov.rank()), S, Starts(coord, S, std::vector<bool>(R, false)));
        auto X = b.k.bufs[x].shape, Y = b.k.bufs[y].shape;
        if (!Equal(X, S) && Equal(Y, S) && def.commutative) {
          std::swap(x, y);
          std::swap(X, Y);
        }
        auto is_row = [&](const std::vector<int64_t>& s) {  // S with last dim 1
          if (S[R - 1] == 1) return false;
          for (int d = 0; d < R - 1; ++d)
            if (s[d] != S[d]) return false;
          return s[R - 1] == 1;
        };
        auto is_col = [&](const std::vector<int64_t>& s) {  // 1 x ... x last
          int64_t rows = 1;
          for (int d = 0; d < R - 1; ++d) {
            if (s[d] != 1) return false;
            rows *= S[d];
          }
          return rows > 1 && s[R - 1] == S[R - 1];
        };
        if (def.pto_row_expand && Equal(X, S) && !Equal(Y, S) && is_row(Y)) {
          ins.opcode = *def.pto_row_expand;
        } else if (def.pto_col_expand && Equal(X, S) && !Equal(Y, S) && is_col(Y)) {
          ins.opcode = *def.pto_col_expand;
        } else {
          // General broadcast: expand each smaller operand to the full tile first.
          for (int* op : {&x, &y}) *op = Full(b, *op, S, valid, t.loc, out);
          ins.opcode = *def.pto;
        }
        ins.srcs = {x, y};
        ins.dst = result_buf(S, valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::ArgReduce:
      case OpKind::Reduce: {
        int x = Input(b, t, 0, coord, out);
        auto shape = t.tile;
        shape[t.reduce_axis] = 1;
        auto valid = b.k.bufs[x].valid;
        valid[t.reduce_axis] = Expr(1);
        ins.opcode = *(t.reduce_axis == R - 1 ? def.pto : def.pto_col_reduce);
        ins.axis = t.reduce_axis;
        ins.srcs = {x};
        ins.dst = result_buf(shape, valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::Permute:  // the load through the permuted view is the result
        return Input(b, t, 0, coord, out);
      case OpKind::Expand: {
        std::vector<Expr> valid =
            Valid(ov, AlignedMap(R, ov.rank()), t.tile, Starts(coord, t.tile, std::vector<bool>(R, false)));
        return Full(b, Input(b, t, 0, coord, out), t.tile, valid, t.loc, out);
      }
      case OpKind::Fill:
      case OpKind::Iota: {
        std::vector<Expr> valid =
            Valid(ov, AlignedMap(R, ov.rank()), t.tile, Starts(coord, t.tile, std::vector<bool>(R, false)));
        ins.opcode = *def.pto;
        if (def.kind == OpKind::Fill) {
          ins = ScalarFill(t, "value");
        } else {
          int dim = static_cast<int>(t.attrs.get<int64_t>("dim"));
          ins.coord = {coord[dim] * Expr(t.tile[dim])};  // TCI starts at the tile's first index
        }
        ins.dst = result_buf(t.tile, valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::Random: {  // flat elements coord * tile ..: their values depend on nothing else
        ins.opcode = *def.pto;
        ins.coord = {coord[0] * Expr(t.tile[0]), Expr(t.attrs.get<int64_t>("key")),
                     Expr(t.attrs.get<int64_t>("offset"))};
        ins.dst = result_buf(t.tile, Valid(ov, AlignedMap(R, ov.rank()), t.tile, Starts(coord, t.tile, {false})));
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::TopK: {
        int x = Input(b, t, 0, coord, out);
        auto shape = t.tile;
        shape[R - 1] = t.axis_out;
        auto valid = b.k.bufs[x].valid;
        valid[R - 1] = Expr(t.axis_out);
        ins.opcode = t.attrs.get<int64_t>("indices") ? Opcode::TROWTOPKIDX : Opcode::TROWTOPK;
        ins.cmp = t.attrs.get<int64_t>("largest") ? CmpMode::GT : CmpMode::LT;
        ins.srcs = {x};
        ins.dst = result_buf(shape, valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::Gather: {
        auto starts = Starts(coord, t.tile, std::vector<bool>(R, false));
        std::vector<Expr> valid = Valid(ov, AlignedMap(R, ov.rank()), t.tile, starts);
        ins.axis = static_cast<int>(t.attrs.get<int64_t>("dim"));
        if (t.inputs[0].from_memory) {  // the elements the indices name, straight from memory
          const Value& xv = fn_.value(t.inputs[0].value);
          int idx = Full(b, Input(b, t, 1, coord, out), t.tile, valid, t.loc, out);
          ins.opcode = Opcode::TGATHERND;
          ins.srcs = {idx};
          ins.param = Param(b, xv.id, AlignedMap(R, xv.rank()), false);
          ins.coord = starts;
          ins.dst = result_buf(t.tile, valid);
          out.push_back(ins);
          return ins.dst;
        }
        int x = Input(b, t, 0, coord, out);
        int idx = Input(b, t, 1, coord, out);
        ins.opcode = *def.pto;
        ins.srcs = {x, idx};
        ins.dst = result_buf(t.tile, valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::Scatter: {  // into global memory: the destination is a parameter of the kernel
        int x = Input(b, t, 0, coord, out);
        int idx = Input(b, t, 1, coord, out);
        const Value& dst = fn_.value(t.output);
        ins.opcode = Opcode::TSCATTERND;
        ins.what = t.attrs.has("what") ? t.attrs.get<std::string>("what") : "pypto.scatter";
        ins.srcs = {x, idx};
        ins.param = Param(b, t.output, AlignedMap(R, dst.rank()), true);
        int64_t reduce = t.attrs.get<int64_t>("reduce");
        if (reduce != 0) b.k.params[ins.param].read = true;  // read-modify-write
        ins.coord = Starts(coord, t.tile, std::vector<bool>(R, false));
        ins.axis = static_cast<int>(t.attrs.get<int64_t>("dim"));
        ins.has_scalar = true;
        ins.scalar = static_cast<double>(reduce);
        out.push_back(ins);
        return x;
      }
      case OpKind::Signal: {  // one cell of a window parameter; no tile
        const Value& cellv = fn_.value(t.output);
        bool wait = t.op == "wait";
        ins.opcode = wait ? Opcode::TWAIT : Opcode::TNOTIFY;
        ins.param = Param(b, t.output, AlignedMap(R, cellv.rank()), true);
        b.k.params[ins.param].read = true;
        ins.coord = Starts(coord, t.tile, std::vector<bool>(R, false));
        ins.scalar_int = t.attrs.get<int64_t>(wait ? "expected" : "value");
        ins.has_scalar = true;
        ins.scalar = static_cast<double>(*ins.scalar_int);
        if (wait) {
          ins.cmp = static_cast<CmpMode>(t.attrs.get<int64_t>("cmp"));
          ins.notify = t.attrs.get<int64_t>("consume") != 0 ? NotifyOp::AtomicAdd : NotifyOp::Set;
        } else {
          ins.notify = static_cast<NotifyOp>(t.attrs.get<int64_t>("op"));
        }
        b.k.fence = true;
        out.push_back(ins);
        return -1;
      }
      case OpKind::Scan: {
        int x = Input(b, t, 0, coord, out);
        int axis = static_cast<int>(t.attrs.get<int64_t>("dim"));
        ins.opcode = *(axis == R - 1 ? def.pto : def.pto_col_reduce);
        ins.axis = axis;
        ins.srcs = {x};
        ins.dst = result_buf(t.tile, b.k.bufs[x].valid);
        out.push_back(ins);
        return ins.dst;
      }
      case OpKind::Assemble: {
        int x = Input(b, t, 0, coord, out);
        Store(b, t, x, t.output, coord, out);
        return x;
      }
      case OpKind::Matmul:
        throw InternalError("a matmul reached the vector lowering (Cube lowers it)");
    }
    throw InternalError("unhandled op kind");
  }

  // A matmul output block [m1, n1] at `coord`: acc = 0; for each L1 step of K load the A and B
  // blocks into Mat (L1); for each L0 step extract Left/Right (L0A/L0B) and accumulate into Acc
  // (L0C); then move the accumulator out to a vector tile (with the dtype conversion).
  int Cube(Builder& b, const TileOp& t, const std::vector<Expr>& coord, std::vector<Instr>& out) {
    const Value& ov = fn_.value(t.output);
    const Value& av = fn_.value(t.inputs[0].value);
    const Value& bv = fn_.value(t.inputs[1].value);
    int R = static_cast<int>(t.extent.size());
    const int64_t k0 = t.cube[2], k1 = t.cube[3];
    b.k.l0_blocks_m = (t.cube[1] + t.cube[0] - 1) / t.cube[0];
    b.k.l0_blocks_n = (t.cube[5] + t.cube[4] - 1) / t.cube[4];
    bool at = t.attrs.get<int64_t>("a_trans") != 0, bt = t.attrs.get<int64_t>("b_trans") != 0;
    DataType acc_dt = av.dtype == DataType::INT8 ? DataType::INT32 : DataType::FP32;
    auto instr = [&](Opcode op, int dst, std::vector<int> srcs) {
      Instr in;
      in.opcode = op;
      in.dst = dst;
      in.srcs = std::move(srcs);
      in.loc = t.loc;
      return in;
    };
    auto in_space = [&](int buf, MemSpace space) {
      b.k.bufs[buf].space = space;
      return buf;
    };
    std::vector<Expr> valid =
        Valid(ov, AlignedMap(R, ov.rank()), t.tile, Starts(coord, t.tile, std::vector<bool>(R, false)));
    const Expr& vm = valid[R - 2];
    const Expr& vn = valid[R - 1];
    int acc = in_space(NewBuf(b, -1, acc_dt, t.tile, valid, ov.name + "_acc"), MemSpace::Acc);
    Instr zero = instr(Opcode::TEXPANDS, acc, {});
    zero.has_scalar = true;
    out.push_back(zero);

    // One L1 step of K: index $r, valid extent kv.
    Expr r = Expr::Var(kReduceVar);
    const Expr& K = t.k_extent;
    auto Kc = K.as_const();
    Expr kv = Kc && *Kc % k1 == 0 ? Expr(k1) : Min(Expr(k1), K - r * Expr(k1));
    Instr loop = instr(Opcode::LOOP, -1, {});
    loop.var = kReduceVar;
    loop.trip = CeilDiv(K, Expr(k1));
    auto load = [&](size_t i, const Value& v, bool trans, const Expr& outer) {
      std::vector<int> map = AlignedMap(R, v.rank());
      std::vector<int64_t> tile = t.input_tile(i);
      std::vector<Expr> starts;
      for (int d = 0; d < R - 2; ++d) {  // a missing batch dim or one of 1 is shared by every batch
        bool shared = map[d] < 0 || (v.shape[map[d]].as_const() == 1 && t.extent[d].as_const() != 1);
        starts.push_back(shared ? Expr(0) : coord[d]);
      }
      // Stored as [rows, k] (A) or [k, cols] (B), or transposed.
      bool k_first = (i == 0) == trans;
      starts.push_back(k_first ? r * Expr(k1) : outer);
      starts.push_back(k_first ? outer : r * Expr(k1));
      int buf = in_space(NewBuf(b, v.id, v.dtype, tile, Valid(v, map, tile, starts), v.name + "_l1"), MemSpace::Mat);
      Instr ld = instr(Opcode::TLOAD, buf, {});
      ld.param = Param(b, v.id, map, false);
      ld.coord = starts;
      loop.body.push_back(ld);
      return buf;
    };
    int a1 = load(0, av, at, coord[R - 2] * Expr(t.tile[R - 2]));
    int b1 = load(1, bv, bt, coord[R - 1] * Expr(t.tile[R - 1]));

    // L0 steps within it: index $s, valid extent kv0.
    Expr s = k0 == k1 ? Expr(0) : Expr::Var(kInnerKVar);
    Expr kv0 = kv.as_const() && *kv.as_const() % k0 == 0 ? Expr(k0) : Min(Expr(k0), kv - s * Expr(k0));
    std::vector<Instr> inner;
    auto extract = [&](int src, bool left, bool trans) {
      std::vector<int64_t> shape(R, 1);
      std::vector<Expr> v(R, Expr(1));
      // The whole m1 x n1 block per L0 step (with an m / n split of L0 this holds the NPU's
      // l0_blocks L0 tiles side by side: the same products, computed at once).
      shape[R - 2] = left ? t.tile[R - 2] : k0;
      shape[R - 1] = left ? k0 : t.tile[R - 1];
      v[R - 2] = left ? vm : kv0;
      v[R - 1] = left ? kv0 : vn;
      const TileBuf& sb = b.k.bufs[src];
      int dst = in_space(NewBuf(b, sb.value, sb.dtype, shape, v, sb.name.substr(0, sb.name.size() - 3) + "_l0"),
                         left ? MemSpace::Left : MemSpace::Right);
      Instr ex = instr(Opcode::TEXTRACT, dst, {src});
      bool k_first = left == trans;  // where the k offset goes in the stored (L1) layout
      ex.coord = {k_first ? s * Expr(k0) : Expr(0), k_first ? Expr(0) : s * Expr(k0)};
      ex.transpose = trans;
      inner.push_back(ex);
      return dst;
    };
    int a0 = extract(a1, true, at);
    int b0 = extract(b1, false, bt);
    inner.push_back(instr(Opcode::TMATMUL_ACC, acc, {a0, b0}));  // acc += a0 x b0
    if (k0 == k1) {
      for (auto& in : inner) loop.body.push_back(std::move(in));
    } else {
      Instr il = instr(Opcode::LOOP, -1, {});
      il.var = kInnerKVar;
      il.trip = CeilDiv(kv, Expr(k0));
      il.body = std::move(inner);
      loop.body.push_back(std::move(il));
    }
    out.push_back(std::move(loop));

    // The result leaves from L0C: stored directly when it keeps the accumulator's dtype (the
    // NPU's fixpipe writes L0C to global memory), else converted into a vector tile first.
    if (ov.dtype == acc_dt) {
      b.k.bufs[acc].value = t.output;
      return acc;
    }
    int res = NewBuf(b, t.output, ov.dtype, t.tile, valid, ov.name);
    Instr mv = instr(Opcode::TCVT, res, {acc});
    mv.dtype = ov.dtype;
    out.push_back(mv);
    return res;
  }

  const Function& fn_;
};

}  // namespace

Kernel BuildKernelBody(const Function& fn, int id, const std::vector<const TileOp*>& ops, const std::string& reason) {
  return KernelBodyBuilder(fn).Build(id, ops, reason);
}

}  // namespace pypto
