// What the distributed engine (python/pypto/dist/engine.py) needs of the core: the signal hook,
// a notify from another host, and merging another host's changes into this host's heap.
#pragma once

#include <nanobind/nanobind.h>

namespace pypto {

void BindDist(nanobind::module_& m);

}  // namespace pypto
