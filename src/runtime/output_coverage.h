// Which returned tensors a call writes whole: their buffers need not start zeroed. Zeroing a
// 64 MiB result costs as much as a third of an elementwise kernel's memory traffic.
#pragma once

#include <vector>

#include "ir/block_graph.h"

namespace pypto {

/// For each of `g.fn.returns`: true when no kernel reads it and the launches the control
/// program makes for `env` store to every element of it (plain stores, no atomic add), as the
/// kernels' per-point windows prove; false when that is not proven (the caller zeroes the buffer, as a program
/// need not write all of its result). A control program that reads tensor elements (a loop
/// bound taken from data) proves nothing.
std::vector<bool> ReturnsWrittenWhole(const ExecGraph& g, const SymEnv& env);

}  // namespace pypto
