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
  std::string isa_flags;   // what the CPU level took away from -march=native (cpu_isa.h)
  std::string cube_paths;  // the library's pypto_cube_paths() ("" when it has none)
};

/// Returns the library for `source` with `entry_points` resolved. Throws UserError when the
/// compiler fails (with its output) or is missing.
KernelLibrary LoadKernelLibrary(const std::string& source, const std::vector<std::string>& entry_points);

/// The cache directory: $PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto, else ~/.cache/pypto.
std::string KernelCacheDir();

/// Builds what every generated kernel shares (the precompiled kernel_support.hpp for this CPU's
/// level) into the package's kernel_support/ directory ($PYPTO_SUPPORT_DIR to choose another),
/// so that the first kernel of a process with an empty cache does not pay for it. Run at install
/// time (`python -m pypto prebuild`); returns the directory. Throws UserError when it fails.
std::string BuildKernelSupport();
/// The compiler command and flags used (for the cache key and error messages), for the CPU level
/// in force now (ChooseCpuIsa) or for the given level flags.
std::string KernelCompileCommand();
std::string KernelCompileCommand(const std::string& isa_flags);

}  // namespace pypto
