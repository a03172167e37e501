#include "runtime/cpu_isa.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "ir/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define PYPTO_X86 1
#else
#define PYPTO_X86 0
#endif

#if defined(__linux__) && PYPTO_X86
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace pypto {

namespace {

#if PYPTO_X86
void Cpuid(unsigned leaf, unsigned sub, unsigned r[4]) { __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]); }

uint64_t Xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

// Linux keeps AMX tile data off until a process asks (arch_prctl, Linux 5.16+); the permission
// then holds for every thread of the process. Returns "" when granted, else why not.
std::string RequestAmxPermission() {
#if defined(__linux__)
  constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return std::string(
               "the Linux permission for AMX tile data (arch_prctl(ARCH_REQ_XCOMP_PERM, "
               "XFEATURE_XTILEDATA) failed: ") +
           std::strerror(errno) + ")";
  unsigned long mask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) != 0 || !(mask & (1ul << kXfeatureXtiledata)))
    return "the Linux permission for AMX tile data (ARCH_GET_XCOMP_PERM does not list it after the request)";
  return "";
#else
  return "Linux's permission request for AMX tile data (this OS is not Linux)";
#endif
}
#endif

CpuFeatures Detect() {
  CpuFeatures f;
#if PYPTO_X86
  unsigned r[4] = {0, 0, 0, 0};
  Cpuid(0, 0, r);
  const unsigned max_leaf = r[0];
  Cpuid(0x80000000u, 0, r);
  if (r[0] >= 0x80000004u) {
    char brand[49] = {0};
    for (unsigned i = 0; i < 3; ++i) {
      Cpuid(0x80000002u + i, 0, r);
      std::memcpy(brand + 16 * i, r, 16);
    }
    f.model = brand;
    while (!f.model.empty() && f.model.back() == ' ') f.model.pop_back();
    while (!f.model.empty() && f.model.front() == ' ') f.model.erase(f.model.begin());
  }
  Cpuid(1, 0, r);
  const bool osxsave = r[2] & (1u << 27);
  f.fma = r[2] & (1u << 12);
  f.avx = r[2] & (1u << 28);
  f.f16c = r[2] & (1u << 29);
  const uint64_t xcr0 = osxsave ? Xcr0() : 0;
  f.os_avx = (xcr0 & 0x6) == 0x6;
  f.os_avx512 = f.os_avx && (xcr0 & 0xE0) == 0xE0;
  const bool os_amx = (xcr0 & (3ull << 17)) == (3ull << 17);
  if (max_leaf >= 7) {
    Cpuid(7, 0, r);
    const unsigned max_sub = r[0];
    f.avx2 = r[1] & (1u << 5);
    f.avx512f = r[1] & (1u << 16);
    f.avx512dq = r[1] & (1u << 17);
    f.avx512bw = r[1] & (1u << 30);
    f.avx512vl = r[1] & (1u << 31);
    f.avx512_vnni = r[2] & (1u << 11);
    f.amx_bf16 = r[3] & (1u << 22);
    f.amx_tile = r[3] & (1u << 24);
    f.amx_int8 = r[3] & (1u << 25);
    if (max_sub >= 1) {
      Cpuid(7, 1, r);
      f.avx_vnni = r[0] & (1u << 4);
      f.avx512_bf16 = r[0] & (1u << 5);
    }
  }
  if (!(f.amx_tile && f.amx_bf16 && f.amx_int8))
    f.amx_note = "AMX (CPUID.(EAX=7,ECX=0):EDX AMX-TILE, AMX-BF16, AMX-INT8)";
  else if (!os_amx)
    f.amx_note = "the OS's AMX tile state (XCR0 bits 17-18)";
  else
    f.amx_note = RequestAmxPermission();
  f.amx_usable = f.amx_note.empty();
#else
  f.amx_note = "AMX (not an x86-64 CPU)";
#endif
  return f;
}

// What each level removes from -march=native (so a CPU with more compiles only this level's
// instructions). GCC's -mno-amx-tile leaves amx-bf16 / amx-int8 on: all three are named.
constexpr const char* kNoAmx = "-mno-amx-tile -mno-amx-bf16 -mno-amx-int8";

std::string LevelFlags(CpuIsa level) {
  const std::string no_amx = kNoAmx;
  switch (level) {
    case CpuIsa::Amx:
      return "-mamx-tile -mamx-bf16 -mamx-int8";
    case CpuIsa::Avx512Bf16:
      return no_amx;
    case CpuIsa::Avx512Vnni:
      return no_amx + " -mno-avx512bf16";
    case CpuIsa::Avx512:
      return no_amx + " -mno-avx512bf16 -mno-avx512vnni -mno-avxvnni";
    case CpuIsa::Avx2Vnni:
      return no_amx + " -mno-avx512f";
    case CpuIsa::Avx2:
      return no_amx + " -mno-avx512f -mno-avxvnni";
    case CpuIsa::Generic:
      return no_amx + " -mno-avx";
    case CpuIsa::AmxEmulated:
      break;
  }
  return "";
}

constexpr CpuIsa kBestFirst[] = {CpuIsa::Amx,      CpuIsa::Avx512Bf16, CpuIsa::Avx512Vnni, CpuIsa::Avx512,
                                 CpuIsa::Avx2Vnni, CpuIsa::Avx2,       CpuIsa::Generic};

CpuIsa BestNonAmx(const CpuFeatures& cpu) {
  for (CpuIsa l : kBestFirst)
    if (l != CpuIsa::Amx && CpuSupports(cpu, l)) return l;
  return CpuIsa::Generic;
}

}  // namespace

std::string CpuFeatures::FlagList() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : " ") + std::string(name);
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(avx_vnni, "avx_vnni");
  add(amx_tile, "amx_tile");
  add(amx_bf16, "amx_bf16");
  add(amx_int8, "amx_int8");
  return s;
}

const CpuFeatures& HostCpu() {
  static const CpuFeatures f = Detect();
  return f;
}

const char* CpuIsaName(CpuIsa level) {
  switch (level) {
    case CpuIsa::Generic:
      return "generic";
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx2Vnni:
      return "avx2_vnni";
    case CpuIsa::Avx512:
      return "avx512";
    case CpuIsa::Avx512Vnni:
      return "avx512_vnni";
    case CpuIsa::Avx512Bf16:
      return "avx512_bf16";
    case CpuIsa::Amx:
      return "amx";
    case CpuIsa::AmxEmulated:
      return "amx_emulated";
  }
  return "?";
}

std::vector<std::string> CpuIsaNames() {
  std::vector<std::string> n;
  for (CpuIsa l : kBestFirst) n.push_back(CpuIsaName(l));
  n.push_back(CpuIsaName(CpuIsa::AmxEmulated));
  return n;
}

bool CpuSupports(const CpuFeatures& c, CpuIsa level, std::string* missing) {
  std::string m;
  auto need = [&](bool on, const char* what) {
    if (!on) m += (m.empty() ? "" : ", ") + std::string(what);
  };
  const int l = static_cast<int>(level);
  if (level == CpuIsa::AmxEmulated) {  // (runs on whatever the CPU has)
  } else {
    if (l >= static_cast<int>(CpuIsa::Avx2)) {
      need(c.avx && c.os_avx, "avx (with the OS's ymm state)");
      need(c.avx2, "avx2");
      need(c.fma, "fma");
    }
    if (level == CpuIsa::Avx2Vnni) need(c.avx_vnni, "avx_vnni");
    if (l >= static_cast<int>(CpuIsa::Avx512)) {
      need(c.avx512f && c.os_avx512, "avx512f (with the OS's zmm state)");
      need(c.avx512bw, "avx512bw");
      need(c.avx512vl, "avx512vl");
      need(c.avx512dq, "avx512dq");
    }
    if (l >= static_cast<int>(CpuIsa::Avx512Vnni)) need(c.avx512_vnni, "avx512_vnni");
    if (l >= static_cast<int>(CpuIsa::Avx512Bf16)) need(c.avx512_bf16, "avx512_bf16");
    if (level == CpuIsa::Amx && !c.amx_usable) m += (m.empty() ? "" : "; ") + c.amx_note;
  }
  if (missing) *missing = m;
  return m.empty();
}

namespace {
CpuIsaChoice ChooseCpuIsaFor(const char* env);
}

// Every call reads $PYPTO_CPU_ISA; the choice is remembered per value (a call of a compiled
// program asks, and the CPU's answer does not change).
const CpuIsaChoice& ChooseCpuIsa() {
  const char* env = std::getenv("PYPTO_CPU_ISA");
  static std::mutex mu;
  static std::map<std::string, CpuIsaChoice> chosen;
  const std::string key = env ? std::string("=") + env : std::string();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  }
  CpuIsaChoice c = ChooseCpuIsaFor(env);  // (may throw: an unknown name is not remembered)
  std::lock_guard<std::mutex> lock(mu);
  return chosen.emplace(key, c).first->second;
}

namespace {
CpuIsaChoice ChooseCpuIsaFor(const char* env) {
  const CpuFeatures& cpu = HostCpu();
  CpuIsaChoice c;
  for (CpuIsa l : kBestFirst)
    if (CpuSupports(cpu, l)) {
      c.best = l;
      break;
    }
  c.requested = env ? env : "";
  c.level = c.best;
  if (!c.requested.empty() && c.requested != "native") {
    CpuIsa want = CpuIsa::Generic;
    bool known = false;
    for (CpuIsa l : {CpuIsa::Amx, CpuIsa::Avx512Bf16, CpuIsa::Avx512Vnni, CpuIsa::Avx512, CpuIsa::Avx2Vnni,
                     CpuIsa::Avx2, CpuIsa::Generic, CpuIsa::AmxEmulated})
      if (c.requested == CpuIsaName(l)) {
        want = l;
        known = true;
      }
    if (!known) {
      std::string names;
      for (auto& n : CpuIsaNames()) names += (names.empty() ? "" : ", ") + n;
      throw UserError("PYPTO_CPU_ISA='" + c.requested + "' is not a CPU level", {}, "use one of native, " + names);
    }
    if (want == CpuIsa::AmxEmulated) {
      c.level = want;
    } else {
      std::string missing;
      if (CpuSupports(cpu, want, &missing)) {
        c.level = want;
      } else {
        // The best level below the one asked for that the CPU has (the order of kBestFirst).
        bool below = false;
        for (CpuIsa l : kBestFirst) {
          below = below || l == want;
          if (below && CpuSupports(cpu, l)) {
            c.level = l;
            break;
          }
        }
        c.note = std::string("PYPTO_CPU_ISA=") + c.requested + ": this CPU lacks " + missing + "; using " +
                 CpuIsaName(c.level);
        static std::mutex mu;
        static std::set<std::string> warned;
        std::lock_guard<std::mutex> lock(mu);
        if (warned.insert(c.requested).second) std::fprintf(stderr, "pypto: warning: %s\n", c.note.c_str());
      }
    }
  }
  c.flags =
      c.level == CpuIsa::AmxEmulated ? LevelFlags(BestNonAmx(cpu)) + " -DPYPTO_AMX_EMULATE=1" : LevelFlags(c.level);
#if !PYPTO_X86
  c.flags.clear();
#endif
  return c;
}
}  // namespace

namespace {

struct PathNames {
  const char *fp32, *bf16, *int8;
};

PathNames Names(CpuIsa level) {
  CpuIsa base = level == CpuIsa::AmxEmulated ? BestNonAmx(HostCpu()) : level;
  PathNames p{"generic", "widen", "generic"};
  if (base >= CpuIsa::Avx512)
    p.fp32 = "avx512";
  else if (base >= CpuIsa::Avx2)
    p.fp32 = "avx2";
  if (base >= CpuIsa::Avx2) p.int8 = "avx2";
  if (base == CpuIsa::Avx2Vnni) p.int8 = "avx_vnni";
  if (base >= CpuIsa::Avx512Vnni) p.int8 = "avx512_vnni";
  if (base >= CpuIsa::Avx512Bf16) p.bf16 = "avx512_bf16";
  if (base == CpuIsa::Amx) p.bf16 = p.int8 = "amx";
  if (level == CpuIsa::AmxEmulated) p.bf16 = p.int8 = "amx_emulated";
  return p;
}

std::string Fp32Text(const std::string& name) {
  if (name == "avx512") return "avx512: zmm FMA micro-kernels, up to 8 rows x 3 panels of 16 columns";
  if (name == "avx2") return "avx2: ymm FMA micro-kernel, 6 rows x 16 columns";
  return "generic: portable C++ (std::fma per product)";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> CubePaths(CpuIsa level) {
  const PathNames p = Names(level);
  const std::string f32 = Fp32Text(p.fp32);
  std::string bf16, int8;
  const std::string bf = p.bf16;
  if (bf == "amx" || bf == "amx_emulated")
    bf16 = bf + ": TDPBF16PS on AMX tiles (2 x 2 tiles of 16 x 16 fp32 per step of 32 k)";
  else if (bf == "avx512_bf16")
    bf16 = "avx512_bf16: VDPBF16PS zmm micro-kernels, up to 8 rows x 3 panels of 16 columns";
  else
    bf16 = "widen: bf16 widened to fp32 while packing, then the fp32 kernels (" + std::string(p.fp32) + ")";
  if (bf != "widen") bf16 += "; operands whose products could be subnormal take the fp32 FMA path";
  const std::string i8 = p.int8;
  if (i8 == "amx" || i8 == "amx_emulated")
    int8 = i8 + ": TDPBSSD on AMX tiles (signed x signed, 2 x 2 tiles of 16 x 16 int32 per step of 64 k)";
  else if (i8 == "avx512_vnni")
    int8 = "avx512_vnni: VPDPBUSD zmm micro-kernels on (A + 128) x B, less 128 x B's column sums";
  else if (i8 == "avx_vnni")
    int8 = "avx_vnni: VPDPBUSD ymm (VEX) micro-kernel on (A + 128) x B, less 128 x B's column sums";
  else if (i8 == "avx2")
    int8 = "avx2: VPMADDWD ymm micro-kernel on int16 pairs (widened while packing)";
  else
    int8 = "generic: portable C++ on int16 pairs";
  return {{"fp32", f32},
          {"fp16", std::string(p.fp32) + ": fp16 widened to fp32 while packing, then the fp32 kernels"},
          {"bf16", bf16},
          {"int8", int8}};
}

int64_t CubeComputeBytes(DataType dtype, CpuIsa level) {
  const PathNames p = Names(level);
  if (dtype == DataType::INT8) return std::string(p.int8) == "avx2" || std::string(p.int8) == "generic" ? 2 : 1;
  if (dtype == DataType::BF16) return std::string(p.bf16) == "widen" ? 4 : 2;
  return 4;
}

std::string CubePathsKey(CpuIsa level) {
  const PathNames p = Names(level);
  return std::string("fp32=") + p.fp32 + ";fp16=" + p.fp32 + ";bf16=" + p.bf16 + ";int8=" + p.int8;
}

}  // namespace pypto
