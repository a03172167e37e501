#include "passes/infer_shapes.h"

#include "ir/op_registry.h"

namespace pypto {

void InferShapes(Function& fn, PassContext& ctx) {
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
