#include "runtime/kernel_cache.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "runtime/cpu_isa.h"

#ifndef PYPTO_INCLUDE_DIR
#define PYPTO_INCLUDE_DIR ""
#endif

namespace pypto {

namespace fs = std::filesystem;

namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string& PackageIncludeDir() {
  static std::string dir;
  return dir;
}

// Where generated kernels find <pto/...>: $PYPTO_INCLUDE_DIR (the Python package sets it), the
// installed package's (a C++ program linking pypto::pypto registers it), else the source tree's.
std::string IncludeDir() {
  std::string d = Env("PYPTO_INCLUDE_DIR");
  if (!d.empty()) return d;
  return PackageIncludeDir().empty() ? PYPTO_INCLUDE_DIR : PackageIncludeDir();
}

std::string Compiler() {
  std::string c = Env("PYPTO_CXX");
  if (c.empty()) c = Env("CXX");
  return c.empty() ? "c++" : c;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string RunCapture(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    status = -1;
    return "cannot run: " + cmd;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  status = pclose(p);
  return out;
}

// The compiler's identity, once per process: part of the cache key.
const std::string& CompilerVersion() {
  static const std::string v = [] {
    int st = 0;
    std::string out = RunCapture(Quote(Compiler()) + " --version", st);
    return out.substr(0, out.find('\n'));
  }();
  return v;
}

// A hash of every header generated kernels can include: part of the cache key, so editing
// include/ recompiles the kernels.
const std::string& HeadersHash() {
  static const std::string h = [] {
    std::string all;
    std::error_code ec;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(IncludeDir(), ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file()) files.push_back(it->path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      all += f.string() + "\n" + ss.str();
    }
    char key[32];
    std::snprintf(key, sizeof(key), "%016llx", static_cast<unsigned long long>(Fnv1a(all)));
    return std::string(key);
  }();
  return h;
}

// A precompiled kernel_support.hpp (most of a kernel's compile time is parsing it), one per
// set of flags (a forced CPU level compiles with others). Returns the directory to put first on
// the include path, or "" when the compiler cannot make one (or one turned out damaged in this
// process: see DiscardPrecompiledHeader).
std::mutex g_pch_mu;
std::map<std::string, std::string> g_pch_dirs;  // flags -> directory ("" when none)

std::string PchName(const std::string& cmd_no_shared) {
  char key[32];
  std::snprintf(key, sizeof(key), "%016llx",
                static_cast<unsigned long long>(Fnv1a(cmd_no_shared + CompilerVersion() + HeadersHash())));
  return std::string("pch-") + key;
}

fs::path GchOf(const fs::path& dir) { return dir / "pypto" / "kernel_support.hpp.gch"; }

// Compiles kernel_support.hpp into dir (atomically: a half-written header is never seen).
// Returns the compiler's output, "" on success.
std::string BuildPch(const std::string& cmd_no_shared, const fs::path& dir) {
  fs::path gch = GchOf(dir);
  std::error_code ec;
  fs::create_directories(gch.parent_path(), ec);
  if (ec) return "cannot create " + gch.parent_path().string() + ": " + ec.message();
  fs::path tmp = gch.string() + "." + std::to_string(getpid());
  int status = 0;
  std::string out = RunCapture(cmd_no_shared + " -x c++-header " + Quote(IncludeDir() + "/pypto/kernel_support.hpp") +
                                   " -o " + Quote(tmp.string()),
                               status);
  if (status != 0) {
    fs::remove(tmp, ec);
    return out.empty() ? "the compiler failed" : out;
  }
  fs::rename(tmp, gch, ec);
  return ec ? "cannot write " + gch.string() + ": " + ec.message() : "";
}

// Where the package keeps what every kernel shares, built once at install time
// (BuildKernelSupport): $PYPTO_SUPPORT_DIR, else kernel_support/ beside the library holding this
// code (the Python extension, or libpypto for a C++ program).
fs::path SupportDir() {
  std::string d = Env("PYPTO_SUPPORT_DIR");
  if (!d.empty()) return d;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&SupportDir), &info) && info.dli_fname)
    return fs::path(info.dli_fname).parent_path() / "kernel_support";
  return {};
}

std::string PrecompiledHeaderDir(const std::string& cmd_no_shared) {
  std::lock_guard<std::mutex> lock(g_pch_mu);
  auto [it, fresh] = g_pch_dirs.try_emplace(cmd_no_shared);
  if (!fresh) return it->second;
  std::string& slot = it->second;
  const std::string name = PchName(cmd_no_shared);
  // Built at install time for these flags: nothing to do at the first call.
  if (fs::path support = SupportDir(); !support.empty() && fs::exists(GchOf(support / name)))
    return slot = (support / name).string();
  fs::path dir = fs::path(KernelCacheDir()) / name;
  if (fs::exists(GchOf(dir))) return slot = dir.string();
  return BuildPch(cmd_no_shared, dir).empty() ? slot = dir.string() : "";
}

// A compile that failed with the precompiled header and worked without it: the header is damaged
// (a truncated file, a killed compiler). Remove it so that the next process rebuilds it, and stop
// using it here.
void DiscardPrecompiledHeader(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_pch_mu);
  std::error_code ec;
  fs::remove_all(dir, ec);
  for (auto& [flags, d] : g_pch_dirs)
    if (d == dir) d.clear();
  std::fprintf(stderr,
               "pypto: warning: the precompiled header in %s was damaged; removed (rebuilt by the next process)\n",
               dir.c_str());
}

// Every cached library ends with a trailer: magic, the length of the library before it and a
// hash of those bytes. A library that does not match (truncated by a full disk or a killed
// process, overwritten, copied in part) is never loaded: dlopen of a damaged ELF file can crash
// the process (SIGBUS, SIGILL) instead of failing.
constexpr char kTrailerMagic[] = "PYPTOSO1";
constexpr size_t kTrailerBytes = 8 + 16 + 16;

std::string Trailer(const std::string& bytes) {
  char t[kTrailerBytes + 1];
  std::snprintf(t, sizeof(t), "%s%016llx%016llx", kTrailerMagic, static_cast<unsigned long long>(bytes.size()),
                static_cast<unsigned long long>(Fnv1a(bytes)));
  return std::string(t, kTrailerBytes);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether the cached library at `so` is whole (see Trailer).
bool VerifiedLibrary(const fs::path& so) {
  std::string all = ReadFile(so);
  if (all.size() < kTrailerBytes) return false;
  std::string body = all.substr(0, all.size() - kTrailerBytes);
  return all.compare(all.size() - kTrailerBytes, kTrailerBytes, Trailer(body)) == 0;
}

std::mutex g_mu;
std::map<std::string, void*> g_loaded;  // .so path -> dlopen handle

}  // namespace

static std::string BaseFlags(const std::string& isa_flags);

std::string BuildKernelSupport() {
  const std::string cmd_no_shared = BaseFlags(ChooseCpuIsa().flags) + " -I" + Quote(IncludeDir());
  fs::path support = SupportDir();
  if (support.empty()) throw UserError("cannot tell where the pypto library lives", {}, "set PYPTO_SUPPORT_DIR");
  fs::path dir = support / PchName(cmd_no_shared);
  if (fs::exists(GchOf(dir))) return dir.string();
  std::error_code ec;  // earlier builds (other headers, another compiler): about 100 MB each
  for (auto it = fs::directory_iterator(support, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().rfind("pch-", 0) == 0) fs::remove_all(it->path(), ec);
  std::string err = BuildPch(cmd_no_shared, dir);
  if (!err.empty())
    throw UserError("building the precompiled kernel support in " + dir.string() + " failed:\n" + err, {},
                    "check that " + Compiler() + " works, or set PYPTO_SUPPORT_DIR to a writable directory");
  std::lock_guard<std::mutex> lock(g_pch_mu);
  g_pch_dirs.clear();  // (this process uses it from now on)
  return dir.string();
}

std::string KernelCacheDir() {
  std::string d = Env("PYPTO_CACHE_DIR");
  if (!d.empty()) return d;
  std::string xdg = Env("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/pypto";
  std::string home = Env("HOME");
  return (home.empty() ? std::string("/tmp") : home + "/.cache") + "/pypto";
}

// A runtime built with a sanitizer builds its kernels with it too: TSan must see the kernels'
// atomics (a launch's shared packing table is published by a compare-and-swap in kernel code), and
// ASan their memory accesses.
static std::string SanitizerFlags() {
#if defined(__SANITIZE_THREAD__)
  return " -fsanitize=thread";
#elif defined(__SANITIZE_ADDRESS__)
  return " -fsanitize=address";
#else
  return "";
#endif
}

static std::string BaseFlags(const std::string& isa_flags) {
  // -ffp-contract=off: a * b + c stays two roundings, as the instructions and numpy compute it
  // (GCC would fuse them into an FMA); explicit FMA intrinsics are unaffected.
  // -fwrapv: the PTO math lets integer lanes wrap, as the vector instructions do (see CMakeLists).
  // isa_flags: what the CPU level in force (cpu_isa.h) takes away from -march=native.
  return Quote(Compiler()) + " -std=c++20 -O3 -march=native" + (isa_flags.empty() ? "" : " " + isa_flags) +
         " -fno-math-errno -ffp-contract=off -fwrapv -fPIC" + SanitizerFlags();
}

namespace detail {
bool SetPackageIncludeDir(const char* dir) {
  PackageIncludeDir() = dir ? dir : "";
  return true;
}
}  // namespace detail

std::string KernelCompileCommand() { return KernelCompileCommand(ChooseCpuIsa().flags); }
std::string KernelCompileCommand(const std::string& isa_flags) {
  return BaseFlags(isa_flags) + " -shared -I" + Quote(IncludeDir());
}

KernelLibrary LoadKernelLibrary(const std::string& source, const std::vector<std::string>& entry_points) {
  KernelLibrary lib;
  const CpuIsaChoice isa = ChooseCpuIsa();
  lib.isa_flags = isa.flags;
  std::string cmd = KernelCompileCommand(isa.flags);
  char key[32];
  std::snprintf(key, sizeof(key), "%016llx",
                static_cast<unsigned long long>(Fnv1a(source + "\n" + cmd + "\n" + CompilerVersion() + HeadersHash())));
  fs::path dir = fs::path(KernelCacheDir()) / "kernels";
  fs::path so = dir / (std::string(key) + ".so");
  lib.path = so.string();

  std::lock_guard<std::mutex> lock(g_mu);
  void* handle = nullptr;
  if (auto it = g_loaded.find(lib.path); it != g_loaded.end()) handle = it->second;
  bool usable = handle != nullptr;
  if (!usable && fs::exists(so)) {
    usable = VerifiedLibrary(so);
    if (!usable)
      std::fprintf(stderr, "pypto: warning: the cached kernel library %s is damaged; compiling it again\n", so.c_str());
  }
  if (!usable) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      throw UserError("cannot create the kernel cache '" + dir.string() + "': " + ec.message(), {},
                      "set PYPTO_CACHE_DIR to a writable directory");
    // Private temporaries, then an atomic rename (over a damaged entry too): concurrent
    // processes never see half a file.
    std::string tag =
        std::to_string(getpid()) + "." + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    fs::path src = dir / (std::string(key) + "." + tag + ".cpp");
    fs::path tmp = dir / (std::string(key) + "." + tag + ".so");
    fs::path kept = dir / (std::string(key) + ".cpp");  // the source, for the user to read
    auto cleanup = [&] {
      fs::remove(tmp, ec);
      fs::remove(src, ec);
    };
    {
      std::ofstream f(src);
      f << source;
      if (!f) {
        cleanup();
        throw UserError("cannot write the generated kernels to " + src.string() + " (is the disk full?)", {},
                        "free space there, or set PYPTO_CACHE_DIR to another directory");
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    std::string plain = cmd + " " + Quote(src.string()) + " -o " + Quote(tmp.string());
    std::string pch = PrecompiledHeaderDir(BaseFlags(isa.flags) + " -I" + Quote(IncludeDir()));
    std::string run = pch.empty() ? plain
                                  : BaseFlags(isa.flags) + " -shared -I" + Quote(pch) + " -I" + Quote(IncludeDir()) +
                                        " " + Quote(src.string()) + " -o " + Quote(tmp.string());
    int status = 0;
    std::string out = RunCapture(run, status);
    if (status != 0 && !pch.empty()) {
      // A damaged precompiled header fails every compile: retry without it before blaming the
      // source, and drop it if that works.
      std::string out_plain = RunCapture(plain, status);
      if (status == 0) DiscardPrecompiledHeader(pch);
      out = out_plain;
      run = plain;
    }
    lib.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (status != 0) {
      fs::rename(src, kept, ec);
      fs::remove(tmp, ec);
      throw UserError("compiling the generated kernels failed (" + run + "):\n" + out.substr(0, 4000), {},
                      "the source is kept at " + kept.string() + "; run_mode=\"interp\" needs no compiler");
    }
    {
      std::string bytes = ReadFile(tmp);
      std::ofstream f(tmp, std::ios::binary | std::ios::app);
      f << Trailer(bytes);
      if (!f || bytes.empty()) {
        cleanup();
        throw UserError("cannot write the compiled kernels to " + tmp.string() + " (is the disk full?)", {},
                        "free space there, or set PYPTO_CACHE_DIR to another directory");
      }
    }
    fs::rename(tmp, so, ec);
    if (ec) {
      cleanup();
      throw UserError("cannot publish " + so.string() + ": " + ec.message());
    }
    fs::rename(src, kept, ec);
    if (ec) fs::remove(src, ec);
    lib.compiled = true;
  }
  if (!handle) {
    handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw UserError(std::string("cannot load ") + so.string() + ": " + dlerror());
    g_loaded[lib.path] = handle;
  }
  // The micro-kernels the library was compiled with (the target macros decide them) against what
  // cpu_paths() reports for this level: a compiler that does not enable a feature -march=native
  // should have would make them differ.
  if (auto paths = reinterpret_cast<const char* (*)()>(dlsym(handle, "pypto_cube_paths"))) {
    lib.cube_paths = paths();
    const std::string want = CubePathsKey(isa.level);
    if (lib.cube_paths != want) {
      static std::set<std::string> warned;
      if (warned.insert(lib.cube_paths + want).second)
        std::fprintf(stderr,
                     "pypto: warning: kernels compiled for CPU level %s use the cube paths %s, not %s (does the "
                     "compiler know every feature of this CPU?)\n",
                     CpuIsaName(isa.level), lib.cube_paths.c_str(), want.c_str());
    }
  }
  for (auto& e : entry_points) {
    void* f = dlsym(handle, e.c_str());
    if (!f) throw InternalError("kernel " + e + " missing from " + so.string());
    lib.entries.push_back(reinterpret_cast<PyptoKernelFn>(f));
  }
  return lib;
}

}  // namespace pypto
