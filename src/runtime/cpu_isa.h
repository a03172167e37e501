// The CPU's vector ISA as the cube path sees it: what the processor has (CPUID, XGETBV, and for
// AMX the Linux permission to use tile data), which level the generated kernels are compiled for
// (the best the CPU has, or a lower one forced with $PYPTO_CPU_ISA), the compiler flags that make
// -march=native compile that level, and the micro-kernel each dtype's matmul takes there.
//
// Levels, best first: amx > avx512_bf16 > avx512_vnni > avx512 > avx2_vnni > avx2 > generic.
// A forced level the CPU lacks falls to the best one below it that it has (with a warning).
// amx_emulated is a test level: the AMX code path with its tile instructions computed in C++
// (any CPU, slow), to check the AMX layouts where there is no AMX.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pypto/data_type.h"

namespace pypto {

enum class CpuIsa : int { Generic, Avx2, Avx2Vnni, Avx512, Avx512Vnni, Avx512Bf16, Amx, AmxEmulated };

/// What the processor and the OS provide (x86-64; all false elsewhere).
struct CpuFeatures {
  std::string model;  // the CPUID brand string
  bool avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512_vnni = false, avx512_bf16 = false,
       avx_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  bool os_avx = false, os_avx512 = false;  // XCR0 enables the ymm / zmm state
  bool amx_usable = false;                 // CPUID, XCR0 and the kernel's permission all say yes
  std::string amx_note;                    // what AMX lacks here, a noun phrase ("" when usable)
  /// The flags present, space separated, in /proc/cpuinfo's spelling.
  std::string FlagList() const;
};

/// Detected once per process. The AMX permission (arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA)) is requested here, for the whole process, when the CPU has AMX.
const CpuFeatures& HostCpu();

const char* CpuIsaName(CpuIsa level);
/// Every level name, best first (amx_emulated last).
std::vector<std::string> CpuIsaNames();
/// Whether the CPU (and OS) can run kernels compiled for `level`.
bool CpuSupports(const CpuFeatures& cpu, CpuIsa level, std::string* missing = nullptr);

struct CpuIsaChoice {
  CpuIsa level = CpuIsa::Generic;  // what the kernels are compiled for
  CpuIsa best = CpuIsa::Generic;   // the best level this CPU has
  std::string requested;           // $PYPTO_CPU_ISA ("" when unset)
  std::string note;                // why `level` is not what was requested, when it is not
  std::string flags;               // compiler flags after -march=native
};

/// The level for kernels compiled now: reads $PYPTO_CPU_ISA on every call (so a test may change
/// it between compiles). Throws UserError for a name that is not a level.
const CpuIsaChoice& ChooseCpuIsa();

/// The cube's micro-kernel per dtype at `level`: (dtype, "path: what it does") for fp32, fp16,
/// bf16 and int8. The path name before the colon is what the compiled kernels report (see
/// CubePathsKey) and what tests check.
std::vector<std::pair<std::string, std::string>> CubePaths(CpuIsa level);
/// Bytes per element of the cube's packed operands for `dtype` at `level` (cube_isa.hpp's CubeT):
/// 4 for fp32 / fp16 (widened) and bf16 without a bf16 dot product, 2 for bf16 pairs and int8 as
/// int16 pairs, 1 for int8 quads (VNNI, AMX).
int64_t CubeComputeBytes(DataType dtype, CpuIsa level);
/// "fp32=...;fp16=...;bf16=...;int8=..." of the path names alone: equal to the string the
/// generated kernels export as pypto_cube_paths() when compiled for `level` (checked at load).
std::string CubePathsKey(CpuIsa level);

}  // namespace pypto
