// The C++ API's recording scopes: FUNCTION (RecordFunc), LOOP and UNROLL (RecordLoop). Each
// opens and closes a scope of the Recorder the current FUNCTION records into
// (api/recording.h); IF / ELSE are in branches.cpp, the rest of the API in api.cpp and ops.cpp.
#include <algorithm>
#include <set>

#include "api/recording.h"

namespace pypto {

// --- recording scopes -------------------------------------------------------------------------

namespace detail {

RecordFunc::RecordFunc(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                       const std::vector<std::pair<Tensor, Tensor>>& /*inplace*/, Loc loc)
    : RecordFunc(name, inputs, outputs, loc) {}

RecordFunc::RecordFunc(const std::string& name, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                       Loc loc)
    : name_(name), loc_(loc) {
  if (api::CurrentOrNull())
    throw UserError(
        "FUNCTION(\"" + name + "\") inside FUNCTION(\"" + api::CurrentOrNull()->name + "\"): functions do not nest",
        api::ToLoc(loc), "call a C++ function that records ops instead");
  auto r = std::make_unique<api::Recording>(name, api::NextSerial());
  std::set<const detail::TensorImpl*> seen;
  size_t k = 0;
  for (const auto* list : {&inputs, &outputs}) {
    bool out = list == &outputs;
    for (const Tensor& t : *list) {
      std::string pname = t.GetName().empty() ? (out ? "out" : "in") + std::to_string(k) : t.GetName();
      ++k;
      if (t.IsEmpty())
        throw UserError("FUNCTION(\"" + name + "\"): parameter " + std::to_string(k) + " is an empty Tensor",
                        api::ToLoc(loc));
      if (!seen.insert(t.impl().get()).second)
        throw UserError("FUNCTION(\"" + name + "\"): the tensor '" + pname + "' is listed twice", api::ToLoc(loc));
      if (t.impl()->serial != 0)
        throw UserError("FUNCTION(\"" + name + "\"): '" + pname +
                            "' is a value of another function, not a "
                            "declared parameter",
                        api::ToLoc(loc));
      std::vector<Expr> shape;
      for (size_t d = 0; d < t.impl()->shape.size(); ++d) {
        const Expr& e = t.impl()->shape[d];
        shape.push_back(e.as_const() == std::optional<int64_t>(DYNAMIC)
                            ? r->rec.AddDynamicVar(pname + "_dim" + std::to_string(d))
                            : e);
      }
      t.impl()->id = r->rec.AddParam(pname, shape, t.GetDataType(), out, api::ToLoc(loc));
      t.impl()->serial = r->serial;
      r->params.push_back(t.impl());
      (out ? r->num_outputs : r->num_inputs)++;
    }
  }
  std::vector<int64_t>& vec = api::DefaultVecTile();
  if (!vec.empty()) r->rec.SetVecTileShapes(vec, api::ToLoc(loc));
  auto& cube = api::DefaultCubeTile();
  if (cube.size() == 3) r->rec.SetCubeTileShapes(cube[0], cube[1], cube[2], api::ToLoc(loc));
  depth_ = 1;
  api::Begin(std::move(r));
}

bool RecordFunc::Iterator::operator!=(End) const {
  if (f->done_) return false;
  if (!f->entered_) {
    f->entered_ = true;
    return true;
  }
  f->Finish();
  return false;
}

void RecordFunc::Iterator::operator++() {}

void RecordFunc::Finish() {
  if (done_) return;
  done_ = true;
  std::unique_ptr<api::Recording> r = api::End();
  for (auto& p : r->params) {  // the parameters are declarations again
    p->serial = 0;
    p->id = -1;
  }
  auto f = std::make_shared<api::RecordedFunction>();
  f->loc = api::ToLoc(loc_);
  f->fn = r->rec.Finish();
  f->num_inputs = r->num_inputs;
  f->num_outputs = r->num_outputs;
  api::Register(name_, std::move(f));
}

RecordFunc::~RecordFunc() {
  if (done_) return;
  // Left by an exception (or a break): drop the partial recording.
  done_ = true;
  auto r = api::End();
  for (auto& p : r->params) {
    p->serial = 0;
    p->id = -1;
  }
}

namespace {
thread_local std::vector<int> t_unroll;  // the factor of each open unrolled LOOP
}  // namespace

RecordLoop::RecordLoop(const std::string& name, FunctionType type, const std::string& index_name,
                       const LoopRange& range, const std::set<int>& unrollList, bool /*submitBeforeLoop*/,
                       bool /*parallel*/, Loc loc)
    : name_(name), index_name_(index_name), range_(range), begin_(range.Begin()), loc_(loc) {
  api::Current("LOOP", loc);
  (void)type;  // DYNAMIC_LOOP and the others all record a runtime loop here
  if (auto s = range.Step().expr().as_const(); s && *s <= 0)
    throw UserError("LOOP(\"" + name + "\"): step must be positive, got " + std::to_string(*s), api::ToLoc(loc));
  for (int k : unrollList)
    if (k <= 0) throw UserError("LOOP(\"" + name + "\"): unroll factors must be positive", api::ToLoc(loc));
  factors_.assign(unrollList.begin(), unrollList.end());
  if (!unrollList.empty() && !unrollList.count(1)) factors_.push_back(1);
  if (factors_.empty()) factors_.push_back(1);
  std::sort(factors_.rbegin(), factors_.rend());
  unrolled_ = !unrollList.empty();
}

bool RecordLoop::Next() {
  api::Recording& r = api::Current("LOOP", loc_);
  while (next_ < factors_.size()) {
    int k = factors_[next_++];
    Expr step = range_.Step().expr() * Expr(k);
    Expr begin = begin_.expr(), stop = range_.End().expr();
    // The loop of factor k covers [begin, end) in steps of k * step; the next factor the rest.
    Expr end = k == 1 ? stop : stop - Mod(Max(stop - begin, Expr(0)), step);
    if (auto c = (end - begin).as_const(); c && *c <= 0) continue;  // nothing for this factor
    std::string loop_name = unrolled_ ? name_ + "_LoopUnroll" + std::to_string(k) : name_;
    index_ = SymbolicScalar(r.rec.BeginLoop(index_name_, loop_name, begin, end, step, api::ToLoc(loc_)));
    begin_ = SymbolicScalar(end);
    open_ = true;
    factor_ = k;
    t_unroll.push_back(k);
    return true;
  }
  return false;
}

void RecordLoop::Close() {
  if (!open_) return;
  open_ = false;
  t_unroll.pop_back();
  if (api::Recording* r = api::CurrentOrNull()) r->rec.EndLoop();
}

RecordLoop::Iterator RecordLoop::begin() {
  Next();
  return {this};
}

bool RecordLoop::Iterator::operator!=(End) const { return l->open_; }

void RecordLoop::Iterator::operator++() {
  l->Close();
  l->Next();
}

const SymbolicScalar& RecordLoop::Iterator::operator*() const { return l->index_; }

RecordLoop::~RecordLoop() {
  if (!open_) return;
  // Left by an exception or a break: close the loop in the recorder so the scopes stay paired.
  open_ = false;
  t_unroll.pop_back();
  if (api::Recording* r = api::CurrentOrNull()) {
    try {
      r->rec.EndLoop();
    } catch (...) {
    }
  }
}

bool RecordLoop::MatchUnrollTimes(int times) { return !t_unroll.empty() && t_unroll.back() == times; }

}  // namespace detail

}  // namespace pypto
