// CANN PyPTO's C++ headers, for sources written against them: `#include "tilefwk/tilefwk.h"`
// and namespace npu::tile_fwk. The names are PyPTO's C++ API (pypto/pypto.h, one front end);
// this header puts them in CANN's namespace. The deliberate differences are in docs/porting.md.
// Build with the CMake target pypto::cann (find_package(pypto)), which adds this directory.
#pragma once

#include <pypto/pypto.h>

namespace npu::tile_fwk {
using namespace ::pypto;  // NOLINT: CANN's names are these
}  // namespace npu::tile_fwk
