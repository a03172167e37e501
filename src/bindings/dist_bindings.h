// What the distributed engine (python/pypto/dist/engine.py) needs of the core: the signal hook,
// a notify from another host, and merging another host's changes into this host's heap.
#pragma once

#include <nanobind/nanobind.h>

namespace pypto {

void BindDist(nanobind::module_& m);

/// Set while a one-process distributed run ends early (a rank failed): every call running in this
/// process stops as a Ctrl-C stops it (`_core._stop_calls`).
bool StopCallsRequested();

}  // namespace pypto
