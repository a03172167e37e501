#pragma once

#include "ir/tensor_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Re-derives every op's output dtype and shape from its inputs with the op registry and
/// checks them against the recorded ones, so a graph built by any frontend is consistent.
/// Also checks that every loop index and dynamic dim is bound once and used only in scope.
/// Produces: shapes and dtypes of all values are inferred and checked.
void InferShapes(Function& fn, PassContext& ctx);

}  // namespace pypto
