#pragma once

#include "ir/block_graph.h"
#include "passes/pass_context.h"

namespace pypto {

/// Block graph -> execution graph: each launch becomes a task group (one task per grid point)
/// that lists the tensors it reads and writes; launches in one region that touch a common
/// tensor, one of them writing, are ordered. The runtime refines this to regions per call.
ExecGraph BuildExecGraph(const BlockGraph& g, PassContext& ctx);

}  // namespace pypto
