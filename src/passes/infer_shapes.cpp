#include "passes/infer_shapes.h"

#include <set>

#include "ir/op_registry.h"

namespace pypto {

namespace {

// Loop indices and dynamic dims are identified by name in every level below (the runtime's
// bindings, the kernels' symbol slots), so a name bound twice would make one index stand for
// another: the inner loop of two nested loops named "i" would overwrite the outer one's value.
// The recorder mints unique names; this checks that every frontend did.
void CheckSymbols(const Function& fn) {
  std::set<std::string> bound(fn.dynamic_vars.begin(), fn.dynamic_vars.end());
  if (bound.size() != fn.dynamic_vars.size()) throw InternalError("a dynamic dim of @" + fn.name + " is bound twice");
  std::set<std::string> in_scope = bound;
  auto check_free = [&](const Expr& e, const std::string& where) {
    if (!e.defined()) return;
    for (auto& v : e.FreeVars())
      if (!in_scope.count(v))
        throw InternalError("symbol " + v + " in " + where + " of @" + fn.name + " is not bound where it is used");
  };
  auto walk = [&](auto&& self, const Region<OpCall>& r) -> void {
    for (auto& e : r.entries) {
      if (e.item) {
        const OpCall& c = *e.item;
        for (auto& [k, a] : c.attrs.map)
          if (auto* xs = std::get_if<std::vector<Expr>>(&a))
            for (auto& x : *xs) check_free(x, "pypto." + c.op);
        continue;
      }
      const LoopInfo& l = e.loop->info;
      for (const Expr* x : {&l.start, &l.stop, &l.step}) check_free(*x, "the bounds of loop \"" + l.name + "\"");
      if (l.read)
        for (const Expr& x : l.read->index) check_free(x, "the index of the scalar read " + l.var);
      if (!bound.insert(l.var).second)
        throw InternalError("loop index " + l.var + " of loop \"" + l.name + "\" in @" + fn.name +
                            " is already bound: symbols must have unique names");
      in_scope.insert(l.var);
      self(self, *e.loop->body);
      in_scope.erase(l.var);
    }
  };
  walk(walk, fn.body);
}

}  // namespace

void InferShapes(Function& fn, PassContext& ctx) {
  CheckSymbols(fn);
  fn.body.ForEach([&](const OpCall& call) {
    if (call.output < 0) return;
    Value inferred = fn.value(call.output);
    InferOpType(fn, call, inferred);
    Value& v = fn.value(call.output);
    if (v.shape.empty() && !inferred.shape.empty()) v.shape = inferred.shape;
    bool same = inferred.dtype == v.dtype && inferred.shape.size() == v.shape.size();
    for (size_t i = 0; same && i < v.shape.size(); ++i) same = inferred.shape[i].same_as(v.shape[i]);
    if (!same)
      throw InternalError("shape inference disagrees with the recorded type of %" + v.name + ": " +
                          DataTypeName(inferred.dtype) + ShapeStr(inferred.shape) + " vs " + DataTypeName(v.dtype) +
                          ShapeStr(v.shape));
  });
}

}  // namespace pypto
