// Compiles generated C++ with the system compiler into a shared library, cached on disk by a
// hash of the source, the compiler and its flags, and loads it. The second run of the same
// program compiles nothing; processes sharing the cache publish files by atomic rename.
#pragma once

#include <string>
#include <vector>

#include "pypto/kernel_abi.h"

namespace pypto {

struct KernelLibrary {
  std::string path;       // the cached .so
  bool compiled = false;  // false when it came from the cache
  double compile_ms = 0;
  std::vector<PyptoKernelFn> entries;
};

/// Returns the library for `source` with `entry_points` resolved. Throws UserError when the
/// compiler fails (with its output) or is missing.
KernelLibrary LoadKernelLibrary(const std::string& source, const std::vector<std::string>& entry_points);

/// The cache directory: $PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto, else ~/.cache/pypto.
std::string KernelCacheDir();
/// The compiler command and flags used (for the cache key and error messages).
std::string KernelCompileCommand();

}  // namespace pypto
