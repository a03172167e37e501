// Block graph -> C++ for the host CPU. Each kernel becomes one extern "C" function over the
// PyptoKernelCall ABI: a loop over its grid points, with static tile shapes and the fast PTO
// instructions of include/pto; symbolic extents become integer expressions.
#pragma once

#include <string>
#include <vector>

#include "ir/block_graph.h"

namespace pypto {

struct GeneratedModule {
  std::string source;                             // one translation unit, all kernels
  std::vector<std::string> entry_points;          // function name per kernel
  std::vector<std::vector<std::string>> symbols;  // per kernel: names bound to call->sym[i]
};

GeneratedModule GenerateCpp(const Function& fn, const std::vector<Kernel>& kernels);

/// C++ type of a dtype in generated code (float, pto::half, ...).
const char* CppType(DataType t);

}  // namespace pypto
