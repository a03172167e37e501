// IF / ELSE of the C++ API. A condition known now (a C++ bool, a constant) decides at once, as
// C++'s `if`. A runtime condition records both bodies in place as runtime branches of the
// Recorder (a loop of 0 or 1 iterations each), so it may use a symbol read just before it.
//
// C++ runs both bodies one after the other, so the handles a body rebinds (`r = Sub(r, a)`,
// CANN's idiom) are put back before the ELSE runs, and after the IF / ELSE each such handle
// names one tensor that every path writes its value into, as the Python frontend merges names
// assigned in a runtime `if` (control.py).
//
// `IF(a) {A} ELSE IF(b) {B} ELSE {C}` is, to C++, `IF(a) {A} ELSE { IF(b) {B} } ELSE {C}`:
// the last ELSE belongs to IF(b), whose enclosing ELSE scope has closed by then. That ELSE
// opens the closed scopes again around its body (so C runs only when neither a nor b holds),
// and each reopened level merges its handles again after it.
#include <deque>
#include <exception>

#include "api/recording.h"

namespace pypto {
namespace detail {

struct BranchMerge;

namespace {

/// A runtime branch scope open now: the IF (or ELSE) of `merge`.
struct OpenBranch {
  std::shared_ptr<BranchMerge> merge;
  bool is_else = false;
};

thread_local std::shared_ptr<BranchMerge> t_last_if;  // the IF an ELSE after it belongs to
thread_local std::vector<OpenBranch> t_open;           // innermost last

}  // namespace

/// One IF and its ELSE: the handles their bodies rebind and the tensors those merge into.
struct BranchMerge {
  SymbolicScalar cond;
  SourceLoc loc;  // the IF's
  uint64_t serial = 0;
  bool concrete = false, taken = false;  // a condition known now, and its value
  bool skip_marker = false;              // stands for an ELSE IF chain a taken IF skipped
  std::vector<OpenBranch> enclosing;     // the runtime branches open around the IF
  size_t depth = 0;                      // the Recorder's scope depth at the IF
  std::vector<HandleState> before;       // the live handles when the current body began
  struct Entry {
    HandleState handle;                // with the tensor it held before the IF
    int merged = -1;                   // the tensor every path writes, once made
    std::string failed;                // why the paths cannot be merged (poisons the handle)
    std::string unset_path;            // a path leaves nothing to merge (fails unless ELSE sets it)
    std::shared_ptr<TensorImpl> then;  // its value at the end of the IF body
  };
  std::deque<Entry> entries;  // (a deque: pointers to entries stay valid as it grows)
  bool else_recorded = false;
};

namespace {

std::string HandleName(const std::shared_ptr<TensorImpl>& impl, const api::Recording& r) {
  if (impl && impl->poison.empty() && impl->serial == r.serial && impl->id >= 0)
    return "%" + r.rec.value(impl->id).name;
  return impl && !impl->name.empty() ? "'" + impl->name + "'" : "a tensor";
}

bool IsValue(const std::shared_ptr<TensorImpl>& impl, const api::Recording& r) {
  return impl && impl->poison.empty() && impl->serial == r.serial && impl->id >= 0;
}

bool SameType(const Value& a, const Value& b) {
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return false;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (!a.shape[d].same_as(b.shape[d])) return false;
  return true;
}

std::string Line(const SourceLoc& loc) { return "line " + std::to_string(loc.line); }

/// Writes `value` into the merged tensor of `e` (made from the value on first use), in the
/// scope open now; a value that cannot go there fails the entry.
void WriteInto(api::Recording& r, const BranchMerge& m, BranchMerge::Entry& e,
               const std::shared_ptr<TensorImpl>& value, const char* path) {
  if (!e.failed.empty()) return;
  if (!IsValue(value, r)) {
    e.failed = "the handle that held " + HandleName(e.handle.impl, r) + " before the IF at " + Line(m.loc) +
               " holds no value of this function on its " + path + " path, so after the IF / ELSE it has none";
    return;
  }
  try {
    if (e.merged < 0) {
      const Value& v = r.rec.value(value->id);
      std::vector<Expr> shape = v.shape;
      DataType dtype = v.dtype;
      e.merged = r.rec.CreateTensor(shape, dtype, "if_merge", m.loc);
    }
    const Value& v = r.rec.value(value->id);
    const Value& into = r.rec.value(e.merged);
    if (!SameType(v, into)) {
      e.failed = "the IF at " + Line(m.loc) + " leaves this handle " + DataTypeName(into.dtype) +
                 ShapeStr(into.shape) + " on one path and " + DataTypeName(v.dtype) + ShapeStr(v.shape) +
                 " on the " + path + " path, so after it its value depends on the path taken";
      return;
    }
    size_t rank = v.shape.size();
    int src = value->id, dst = e.merged;
    if (src != dst) r.rec.Assemble(src, std::vector<Expr>(rank, Expr(0)), dst, m.loc);
  } catch (const UserError& err) {
    e.failed = "after the IF at " + Line(m.loc) + " this handle's paths cannot be merged into one tensor: " +
               err.what();
  }
}

/// Ends the body of `m` (an IF's or an ELSE's) whose scope is open: writes the value of each
/// handle the body rebound into its merged tensor, closes the scope, lets the other path keep
/// the old value of handles only this body rebinds, and binds every handle to its merge.
void FinishBody(api::Recording& r, BranchMerge& m, bool is_else) {
  const char* path = is_else ? "ELSE" : "IF";
  std::vector<BranchMerge::Entry*> fresh;  // entries this body adds
  for (const HandleState& h : Handles::Changed(m.before)) {
    std::shared_ptr<TensorImpl> now = Handles::Current(h);
    BranchMerge::Entry* e = nullptr;
    for (auto& x : m.entries)
      if (x.handle.t == h.t && x.handle.gen == h.gen) e = &x;
    if (e == nullptr) {
      m.entries.push_back({h, -1, "", "", nullptr});
      e = &m.entries.back();
      fresh.push_back(e);
    }
    if (!is_else) e->then = now;
    if (is_else) e->unset_path.clear();
    WriteInto(r, m, *e, now, path);
  }
  r.rec.EndLoop();
  std::vector<BranchMerge::Entry*> keep;  // the other path keeps these old values
  for (BranchMerge::Entry* e : fresh) {
    if (IsValue(e->handle.impl, r))
      keep.push_back(e);
    else if (!is_else)
      e->unset_path = "the IF at " + Line(m.loc) + " assigns this handle, which holds no value of the function " +
                      "when the IF is not taken (assign it in an ELSE too, or before the IF)";
    else
      e->failed = "the ELSE of the IF at " + Line(m.loc) + " assigns this handle, which holds no value of the " +
                  "function when the IF is taken (assign it in the IF too, or before it)";
  }
  if (!keep.empty()) {
    r.rec.BeginBranch(m.cond.expr(), !is_else, m.loc);
    for (BranchMerge::Entry* e : keep) WriteInto(r, m, *e, e->handle.impl, is_else ? "IF" : "skipped");
    r.rec.EndLoop();
  }
  for (auto& e : m.entries) {
    std::string why = !e.failed.empty() ? e.failed : e.unset_path;
    if (why.empty() && e.merged >= 0) {
      Handles::Rebind(e.handle, api::Wrap(e.merged).impl());
    } else if (!why.empty()) {
      auto p = std::make_shared<TensorImpl>();
      p->serial = r.serial;
      p->poison = why;
      p->name = e.handle.impl ? e.handle.impl->name : "";
      Handles::Rebind(e.handle, std::move(p));
    }
  }
}

}  // namespace

RecordBranch::RecordBranch(const SymbolicScalar& cond, std::shared_ptr<BranchMerge> else_of, Loc loc)
    : is_else_(else_of != nullptr), merge_(std::move(else_of)), loc_(loc), uncaught_(std::uncaught_exceptions()) {
  api::Recording& r = api::Current(is_else_ ? "ELSE" : "IF", loc);
  if (!is_else_) {
    t_last_if.reset();
    merge_ = std::make_shared<BranchMerge>();
    merge_->cond = cond;
    merge_->loc = api::ToLoc(loc);
    merge_->serial = r.serial;
    merge_->enclosing = t_open;
    merge_->depth = r.rec.Checkpoint().depth;
    if (cond.IsConcrete()) {  // decided now, as C++'s if
      merge_->concrete = true;
      merge_->taken = cond.Concrete() != 0;
      run_ = merge_->taken;
      return;
    }
    merge_->before = Handles::Snapshot();
    r.rec.BeginBranch(cond.expr(), false, merge_->loc);
    t_open.push_back({merge_, false});
    return;
  }
  BranchMerge& m = *merge_;
  if (m.serial != r.serial || m.else_recorded) throw UserError("ELSE without an IF before it", api::ToLoc(loc));
  m.else_recorded = true;
  if (m.concrete) {
    run_ = !m.taken;
    return;
  }
  // An ELSE IF chain's last ELSE: open the enclosing branches that closed since its IF.
  const std::vector<OpenBranch>& want = m.enclosing;
  bool prefix = t_open.size() <= want.size();
  for (size_t k = 0; prefix && k < t_open.size(); ++k)
    prefix = t_open[k].merge == want[k].merge && t_open[k].is_else == want[k].is_else;
  if (!prefix) throw UserError("this ELSE is not where its IF (" + Line(m.loc) + ") ends", api::ToLoc(loc));
  for (size_t k = t_open.size(); k < want.size(); ++k) {
    BranchMerge& outer = *want[k].merge;
    r.rec.BeginBranch(outer.cond.expr(), want[k].is_else, outer.loc);
    t_open.push_back(want[k]);
    ++reopened_;
  }
  if (r.rec.Checkpoint().depth != m.depth) {
    for (; reopened_ > 0; --reopened_) {
      r.rec.EndLoop();
      t_open.pop_back();
    }
    throw UserError("this ELSE is not where its IF (" + Line(m.loc) + ") ends", api::ToLoc(loc),
                    "an ELSE follows the body of its IF directly");
  }
  for (auto& e : m.entries) Handles::Rebind(e.handle, e.handle.impl);  // as before the IF
  m.before = Handles::Snapshot();
  r.rec.BeginBranch(m.cond.expr(), true, api::ToLoc(loc));
  t_open.push_back({merge_, true});
}

RecordBranch::~RecordBranch() {
  api::Recording* rp = api::CurrentOrNull();
  BranchMerge& m = *merge_;
  if (m.concrete) {
    // A skipped ELSE skips the rest of its ELSE IF chain: the ELSE after it finds a taken IF.
    if (is_else_ && !run_ && !m.skip_marker) {
      auto marker = std::make_shared<BranchMerge>(m);
      marker->else_recorded = false;
      marker->skip_marker = true;
      t_last_if = marker;
    } else if (!is_else_) {
      t_last_if = merge_;
    } else if (m.skip_marker) {
      t_last_if = merge_, m.else_recorded = false;
    }
    return;
  }
  if (rp == nullptr || rp->serial != m.serial) return;
  api::Recording& r = *rp;
  int open = 1 + reopened_;
  if (std::uncaught_exceptions() > uncaught_) {  // left by an exception: keep the scopes paired
    for (; open > 0; --open) {
      try {
        r.rec.EndLoop();
      } catch (...) {
      }
      if (!t_open.empty()) t_open.pop_back();
    }
    return;
  }
  try {
    if (!is_else_) {
      FinishBody(r, m, false);
      t_open.pop_back();
      // The ELSE starts from the values before the IF; after the IF they are the merges.
      t_last_if = merge_;
      return;
    }
    FinishBody(r, m, true);
    t_open.pop_back();
    for (; reopened_ > 0; --reopened_) {  // each reopened level merges again, innermost first
      OpenBranch level = t_open.back();
      FinishBody(r, *level.merge, level.is_else);
      t_open.pop_back();
    }
  } catch (const UserError&) {
    // A recording error here (rare: the merges catch theirs) leaves the scopes paired.
  } catch (...) {
  }
}

std::shared_ptr<BranchMerge> RecordBranch::LastIf(Loc loc) {
  if (!t_last_if) throw UserError("ELSE without an IF before it", api::ToLoc(loc));
  std::shared_ptr<BranchMerge> m = std::move(t_last_if);
  t_last_if.reset();
  return m;
}

}  // namespace detail
}  // namespace pypto
