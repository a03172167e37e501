// The recorder's views of memory: a window (View), the same elements in another order (Remap),
// another shape (Reshape) or dtype (Bitcast) of the same bytes, and the writes into them
// (Assemble), with the element-count equalities the call checks when it binds the dims.
#include <algorithm>
#include <functional>
#include <set>

#include "frontend/recorder.h"

namespace pypto {

std::vector<Expr> Recorder::Simplified(const std::vector<Expr>& shape) const {
  std::vector<Expr> out;
  for (const Expr& e : shape) out.push_back(e.Simplify(ranges_));
  return out;
}

std::vector<Expr> Recorder::ViewExtents(int x, const std::vector<Expr>& offsets, const std::vector<Expr>& shape,
                                        bool dynamic_dims) const {
  const Value& src = f_.value(x);
  std::vector<Expr> out;
  for (size_t d = 0; d < shape.size() && d < offsets.size() && static_cast<int>(d) < src.rank(); ++d) {
    // Inside for every loop index the view is made with: the window as given.
    auto over = (offsets[d] + shape[d] - src.shape[d]).Simplify(ranges_).Bounds(ranges_);
    auto start = offsets[d].Simplify(ranges_).Bounds(ranges_);
    // A dim of run-time size clips only with `dynamic_dims` (a Python slice, numpy's semantics):
    // pypto.view's window there keeps its static extent, which reshapes and static shapes after
    // it rely on (PyPTO keeps the static shape beside the valid one), and is checked against the
    // tensor when the call runs.
    // A window placed by a value read from a tensor (x[t:t + 1] with t = idx[0]) is an index the
    // user vouches for: kept and checked when the call runs, as before.
    // In a dynamic dim only a tile that moves with a loop index is a tail (x[0:1] of a bias is
    // one row, checked).
    bool read = false, moves = false;
    for (const Expr* e : {&offsets[d], &shape[d]})
      for (const std::string& v : e->FreeVars()) read = read || read_symbols_.count(v) > 0;
    for (const std::string& v : offsets[d].FreeVars())
      moves = moves || std::find(f_.dynamic_vars.begin(), f_.dynamic_vars.end(), v) == f_.dynamic_vars.end();
    bool inside = over && over->second <= 0 && start && start->first >= 0;
    if (inside || read || (!src.shape[d].is_const() && !(dynamic_dims && moves))) {
      out.push_back(shape[d]);
      continue;
    }
    Expr rest = src.shape[d] - offsets[d];  // a dim is never negative: max(dim - 0, 0) is dim
    if (offsets[d].as_const() != std::optional<int64_t>(0)) rest = Max(rest, Expr(0));
    out.push_back(Min(rest, shape[d]).Simplify(ranges_));
  }
  return out;
}

int Recorder::View(int x, const std::vector<Expr>& offsets_in, const std::vector<Expr>& shape_in,
                   const SourceLoc& loc) {
  CheckLive(x, "view", loc);
  const std::vector<Expr> offsets = Simplified(offsets_in), shape = Simplified(shape_in);
  const Value& src = f_.value(x);
  if (offsets.size() != shape.size() || static_cast<int>(shape.size()) != src.rank())
    throw UserError("slicing " + DescribeValue(src) + ": expected " + std::to_string(src.rank()) + " indices, got " +
                        std::to_string(shape.size()),
                    loc, "give one slice per dim, e.g. x[i:i + 1, :, :]");
  CheckBranchScope(x, "slicing", loc);
  for (size_t i = 0; i < shape.size(); ++i) {
    auto ext = shape[i].as_const();
    if (ext && *ext <= 0)
      throw UserError("slicing " + DescribeValue(src) + ": dim " + std::to_string(i) + " of the slice is empty (" +
                          shape[i].str() + ")",
                      loc);
    auto off = offsets[i].as_const();
    auto dim = src.shape[i].as_const();
    if (off && ext && dim && (*off < 0 || *off + *ext > *dim))
      throw UserError("slicing " + DescribeValue(src) + ": [" + std::to_string(*off) + ":" +
                          std::to_string(*off + *ext) + "] is out of bounds in dim " + std::to_string(i),
                      loc);
  }
  Value v;
  v.kind = ValueKind::View;
  v.dtype = src.dtype;
  v.shape = shape;
  v.loc = loc;
  // Views of views point at the root tensor, with composed offsets.
  if (src.kind == ValueKind::View) {
    v.base = src.base;
    for (size_t i = 0; i < offsets.size(); ++i) v.offsets.push_back(src.offsets[i] + offsets[i]);
  } else {
    v.base = x;
    v.offsets = offsets;
  }
  v.name = FreshName(f_.value(v.base).name + "_view");
  return f_.AddValue(v);
}

int Recorder::Remap(int x, const std::vector<int64_t>& perm, const SourceLoc& loc) {
  CheckLive(x, "permute", loc);
  int64_t rank = f_.value(x).rank();
  bool identity = static_cast<int64_t>(perm.size()) == rank;
  for (size_t d = 0; identity && d < perm.size(); ++d) identity = perm[d] == static_cast<int64_t>(d);
  if (identity) return x;
  Attrs attrs;
  attrs.set("perm", perm);
  std::vector<int64_t> tile = tile_shape_;
  if (!tile.empty() && tile.size() < perm.size() && static_cast<int64_t>(tile.size()) >= rank) {
    std::vector<int64_t> remapped;
    for (int64_t p : perm) remapped.push_back(p >= 0 ? tile[p] : 1);
    tile_shape_ = remapped;
  }
  struct Restore {
    std::vector<int64_t>& tile;
    std::vector<int64_t> saved;
    ~Restore() { tile = std::move(saved); }
  } restore{tile_shape_, tile};
  return Op("permute", {x}, std::move(attrs), loc);
}

std::optional<Recorder::ViewReshape> Recorder::PlanViewReshape(int x, const std::vector<Expr>& shape_in) const {
  const Value& v = f_.value(x);
  if (v.kind != ValueKind::View || shape_in.empty()) return std::nullopt;
  const std::vector<Expr> shape = Simplified(shape_in);
  const Value& base = f_.value(v.base);
  const std::vector<Expr> vs = Simplified(v.shape), bs = Simplified(base.shape);
  int R = v.rank();
  if (static_cast<int>(bs.size()) != R || static_cast<int>(v.offsets.size()) != R) return std::nullopt;
  // Contiguous in the base: unit dims, then one dim of any extent, then whole dims of the base.
  int k = 0;
  while (k < R - 1 && vs[k].as_const() == std::optional<int64_t>(1)) ++k;
  for (int j = k + 1; j < R; ++j)
    if (!vs[j].same_as(bs[j]) || v.offsets[j].as_const() != std::optional<int64_t>(0)) return std::nullopt;
  // The window starts at element F of the base and holds whole rows of the new shape's trailing
  // dims (P elements): it is rows [F / P, F / P + shape[0]) of the base seen as [N / P, shape[1:]].
  int64_t P = 1, N = 1;
  for (size_t j = 1; j < shape.size(); ++j) {
    auto c = shape[j].as_const();
    if (!c || *c <= 0) return std::nullopt;
    P *= *c;
  }
  Expr F(0), stride(1);
  for (int j = R - 1; j >= 0; --j) {
    auto c = bs[j].as_const();
    if (!c) return std::nullopt;
    F = F + v.offsets[j] * stride;
    stride = stride * Expr(*c);
    N *= *c;
  }
  Expr row = FloorDiv(F, Expr(P));
  if (N % P != 0 || !(row * Expr(P)).same_as(F)) return std::nullopt;
  Expr count(1), want(1);
  for (auto& d : vs) count = count * d;
  for (auto& d : shape) want = want * d;
  if (!Simplified({count})[0].same_as(Simplified({want})[0])) return std::nullopt;
  ViewReshape plan;
  plan.base_shape = {Expr(N / P)};
  plan.base_shape.insert(plan.base_shape.end(), shape.begin() + 1, shape.end());
  plan.offsets.assign(shape.size(), Expr(0));
  plan.offsets[0] = row;
  return plan;
}

int Recorder::Reshape(int x, const std::vector<Expr>& shape_in, const SourceLoc& loc, bool in_memory) {
  CheckLive(x, "reshape", loc);
  const std::vector<Expr> shape = Simplified(shape_in);
  if (!in_memory) {
    // Only dims of size 1 added or dropped: a remap of the same elements (no memory view).
    const Value& src = f_.value(x);
    std::vector<int64_t> kept_src, kept_dst;
    for (int64_t d = 0; d < src.rank(); ++d)
      if (src.shape[d].as_const() != std::optional<int64_t>(1)) kept_src.push_back(d);
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      if (shape[d].as_const() != std::optional<int64_t>(1)) kept_dst.push_back(d);
    bool same = kept_src.size() == kept_dst.size();
    for (size_t i = 0; same && i < kept_src.size(); ++i)
      same = Simplified({src.shape[kept_src[i]]})[0].same_as(shape[kept_dst[i]]);
    if (same) {
      std::vector<int64_t> perm(shape.size(), -1);
      for (size_t i = 0; i < kept_src.size(); ++i) perm[kept_dst[i]] = kept_src[i];
      return Remap(x, perm, loc);
    }
  }
  CheckBranchScope(x, "pypto.reshape", loc);
  const Value& src = f_.value(x);
  // A reshape of a reshape is the base's memory in the last shape.
  if (src.kind == ValueKind::Reshape && f_.value(src.base).dtype == src.dtype)
    return Reshape(src.base, shape_in, loc, in_memory);
  if (src.kind == ValueKind::View) {
    if (auto plan = PlanViewReshape(x, shape)) {
      int whole = Reshape(src.base, plan->base_shape, loc, in_memory);
      return View(whole, plan->offsets, shape, loc);
    }
    throw UserError("pypto.reshape of " + DescribeValue(src) +
                        ", a slice of another tensor, that merges or splits dims is not supported",
                    loc, "reshape the whole tensor first, then slice it");
  }
  Expr a(1), b(1);
  for (auto& d : Simplified(src.shape)) a = a * d;
  for (auto& d : shape) {
    if (auto c = d.as_const(); c && *c <= 0)
      throw UserError("pypto.reshape: shape " + ShapeStr(shape) + " has a non-positive dim", loc);
    b = b * d;
  }
  auto ca = a.as_const(), cb = b.as_const();
  std::string mismatch = "pypto.reshape: " + DescribeValue(src) + " has " + a.str() + " elements, the shape " +
                         ShapeStr(shape) + " " + b.str();
  if (ca && cb && *ca != *cb) throw UserError(mismatch, loc, "the new shape must hold the same number of elements");
  if (!(ca && cb) && !a.same_as(b)) {
    // Counts over the dynamic dims of different parameters (a cache of k_dim0 blocks viewed as
    // the rows of x_dim0 tokens): equal only for some calls, so the call checks them when it
    // binds the dims. Anything else (a loop index, a read element) cannot be checked then.
    std::set<std::string> dims(f_.dynamic_vars.begin(), f_.dynamic_vars.end());
    bool checkable = true;
    for (const Expr* e : {&a, &b})
      for (const std::string& var : e->FreeVars()) checkable = checkable && dims.count(var);
    if (!checkable) throw UserError(mismatch, loc, "the new shape must hold the same number of elements");
    AssumeEqual(
        a, b,
        "the element count of %" + src.name + " " + ShapeStr(src.shape) + " and of its reshape to " + ShapeStr(shape),
        loc);
  }
  Value v;
  v.kind = ValueKind::Reshape;
  v.dtype = src.dtype;
  v.shape = shape;
  v.loc = loc;
  v.base = src.kind == ValueKind::Reshape ? src.base : x;  // a bitcast's memory is its base's
  v.name = FreshName(src.name + "_reshape");
  return f_.AddValue(v);
}

int Recorder::Bitcast(int x, DataType dtype, const SourceLoc& loc) {
  CheckLive(x, "view", loc);
  CheckBranchScope(x, "pypto.view", loc);
  const Value& src = f_.value(x);
  const std::string what = "pypto.view(" + DescribeValue(src) + ", dtype=" + DataTypeName(dtype) + ")";
  if (src.rank() == 0) throw UserError(what + ": a 0-d tensor cannot be reinterpreted", loc);
  if (src.kind == ValueKind::View)
    throw InternalError(what + ": a slice reaches Bitcast (the frontend copies it first)");
  const int64_t from = DataTypeBytes(src.dtype), to = DataTypeBytes(dtype);
  const Expr& last = src.shape.back();
  const Expr bytes = last * Expr(from);
  // Into narrower elements any extent works; into wider ones the bytes must divide, which the
  // extent shows now (static, or a multiple such as 8 * n).
  if (from % to != 0 && Mod(bytes, Expr(to)).as_const() != std::optional<int64_t>(0))
    throw UserError(what + ": the last dim holds " + bytes.str() + " bytes, not a whole number of " +
                        std::to_string(to) + "-byte " + DataTypeName(dtype) + " elements",
                    loc, "reinterpret a tensor whose last dim is static and a multiple of the new element size");
  Value v;
  v.kind = ValueKind::Reshape;
  v.dtype = dtype;
  v.shape = src.shape;
  v.shape.back() = from % to == 0 ? last * Expr(from / to) : FloorDiv(bytes, Expr(to));
  v.loc = loc;
  v.base = src.kind == ValueKind::Reshape ? src.base : x;  // a reshape's memory is its base's
  v.name = FreshName(src.name + "_as_" + DataTypeName(dtype));
  return f_.AddValue(v);
}

void Recorder::AssumeEqual(const Expr& a, const Expr& b, const std::string& what, const SourceLoc& loc) {
  if (a.same_as(b)) return;
  auto ca = a.as_const(), cb = b.as_const();
  if (ca && cb) throw UserError(what + ": " + std::to_string(*ca) + " != " + std::to_string(*cb), loc);
  std::set<std::string> dims(f_.dynamic_vars.begin(), f_.dynamic_vars.end());
  for (const Expr* e : {&a, &b})
    for (const std::string& v : e->FreeVars())
      if (!dims.count(v))
        throw UserError(what + ": " + a.str() + " and " + b.str() + " may differ, and " + v +
                            " is not a dynamic dim of a parameter, so it cannot be checked when the call starts",
                        loc, "make the two shapes the same expression (e.g. slice with the same bounds)");
  f_.assumptions.push_back({a, b, what, loc});
}

void Recorder::Assemble(int src, const std::vector<Expr>& offsets, int dst, const SourceLoc& loc, bool atomic_add) {
  CheckLive(src, "assemble", loc);
  CheckLive(dst, "assemble", loc);
  const Value& s = f_.value(src);
  const Value& d = f_.value(dst);
  if (d.kind == ValueKind::Temp)
    throw UserError("pypto.assemble: the destination " + DescribeValue(d) + " is " +
                        (d.kind == ValueKind::Temp ? "an intermediate result" : "an input") + ", not an output tensor",
                    loc, "write into a tensor made with pypto.tensor(...) or into an output parameter");
  if (s.dtype != d.dtype)
    throw UserError(
        "pypto.assemble: dtype of the source " + DescribeValue(s) + " differs from the destination " + DescribeValue(d),
        loc, "cast the source with pypto.cast(x, dtype)");
  if (static_cast<int>(offsets.size()) != d.rank() || s.rank() != d.rank())
    throw UserError("pypto.assemble: source " + DescribeValue(s) + ", destination " + DescribeValue(d) + " and " +
                        std::to_string(offsets.size()) + " offsets must have the same rank",
                    loc);
  for (int i = 0; i < d.rank(); ++i) {
    auto off = offsets[i].as_const();
    auto ext = s.shape[i].as_const();
    auto dim = d.shape[i].as_const();
    if (off && ext && dim && (*off < 0 || *off + *ext > *dim))
      throw UserError("pypto.assemble: source " + DescribeValue(s) + " at offsets " + ShapeStr(offsets) +
                          " does not fit in " + DescribeValue(d) + " (dim " + std::to_string(i) + ")",
                      loc);
  }
  // Into a reshape of a tensor (PyPTO's `o2 = reshape(out, [b * s, d], inplace=True)`): a window of
  // the tensor's memory in the reshape's shape; the runtime orders it by the tensor's whole box.
  if (d.kind == ValueKind::Reshape && !f_.value(f_.MemoryRoot(dst)).is_storage())
    throw UserError("pypto.assemble into " + DescribeValue(d) + ", a reshape of an intermediate result", loc,
                    "assemble into a tensor made with pypto.tensor(...) or into an output parameter");
  if (s.kind == ValueKind::Created && !written_.count(src) && !atomic_add) {
    // out[:] = pypto.tensor(...): a fresh tensor holds nothing defined, so the copy defines
    // nothing either (PyPTO code writes it to "allocate" out). Nothing to record; out counts as
    // written, with what it held.
    written_.insert(f_.MemoryRoot(dst));
    MakeOutput(dst);
    return;
  }
  MakeOutput(dst);
  OpCall c;
  c.op = "assemble";
  c.inputs = {src, dst};
  c.attrs.set("offsets", offsets);
  if (atomic_add) c.attrs.set<int64_t>("atomic_add", 1);
  c.loc = loc;
  Record(std::move(c));
}

int Recorder::MaterializeWhereMade(int value, const SourceLoc& loc) {
  const Value& v = f_.value(value);
  // The region and position of the op that made `value`.
  Region<OpCall>* home = nullptr;
  size_t at = 0;
  std::function<bool(Region<OpCall>&)> find = [&](Region<OpCall>& r) {
    for (size_t i = 0; i < r.entries.size(); ++i) {
      auto& e = r.entries[i];
      if (e.item && e.item->output == value) {
        home = &r;
        at = i;
        return true;
      }
      if (e.loop && find(*e.loop->body)) return true;
    }
    return false;
  };
  find(f_.body);
  const std::vector<Expr> zeros(v.shape.size(), Expr(0));
  int mem = CreateTensor(v.shape, v.dtype, v.name + "_mem", loc);
  if (!home) {
    Assemble(value, zeros, mem, loc);
    return mem;
  }
  // The copy goes right after the op, in its region (not in the loop being traced now, which
  // would refill the tensor on every iteration): the rest of the region waits aside meanwhile.
  std::vector<RegionEntry<OpCall>> tail(home->entries.begin() + static_cast<std::ptrdiff_t>(at) + 1,
                                        home->entries.end());
  home->entries.resize(at + 1);
  stack_.push_back(home);
  auto restore = [&] {
    stack_.pop_back();
    home->entries.insert(home->entries.end(), tail.begin(), tail.end());
  };
  try {
    Assemble(value, zeros, mem, loc);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return mem;
}

}  // namespace pypto
