// The CPU levels of the cube path (src/runtime/cpu_isa.h): what PYPTO_CPU_ISA selects, the flags
// that make -march=native compile it, and, per level this CPU runs, an int8 and an fp32 matmul
// with tails compiled for it, checked against a scalar reference, whose library reports the cube
// paths the level promises. A level the CPU lacks is skipped with what it lacks printed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>

#include "frontend/recorder.h"
#include "passes/pipeline.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernel_cache.h"
#include "runtime/runtime.h"

using namespace pypto;

namespace {

// Sets PYPTO_CPU_ISA for the scope (unset when value is null), restoring it after.
struct IsaEnv {
  std::string old;
  bool had;
  explicit IsaEnv(const char* value) {
    const char* o = std::getenv("PYPTO_CPU_ISA");
    had = o != nullptr;
    if (had) old = o;
    if (value)
      setenv("PYPTO_CPU_ISA", value, 1);
    else
      unsetenv("PYPTO_CPU_ISA");
  }
  ~IsaEnv() {
    if (had)
      setenv("PYPTO_CPU_ISA", old.c_str(), 1);
    else
      unsetenv("PYPTO_CPU_ISA");
  }
};

const CpuIsa kAll[] = {CpuIsa::Generic,    CpuIsa::Avx2,       CpuIsa::Avx2Vnni, CpuIsa::Avx512,
                       CpuIsa::Avx512Vnni, CpuIsa::Avx512Bf16, CpuIsa::Amx,      CpuIsa::AmxEmulated};

Function RecordMatmul(const char* name, DataType in, int64_t M, int64_t K, int64_t N) {
  Recorder r(name);
  int a = r.AddParam("a", {M, K}, in, false);
  int b = r.AddParam("b", {K, N}, in, false);
  r.SetCubeTileShapes({32, 32}, {32, 64}, {48, 48});  // K tails inside an L1 step, partial panels
  const int out = in == DataType::INT8 ? static_cast<int>(DataType::INT32) : -1;
  r.Return({r.Matmul(a, b, out, false, false)});
  return r.Finish();
}

}  // namespace

TEST(CpuIsa, NamesAndUnknownLevel) {
  std::vector<std::string> names = CpuIsaNames();
  ASSERT_EQ(names.size(), 8u);
  EXPECT_EQ(names.front(), "amx");
  EXPECT_EQ(names.back(), "amx_emulated");
  IsaEnv env("avx9000");
  try {
    ChooseCpuIsa();
    FAIL() << "an unknown level must be a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("avx9000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("avx512_vnni"), std::string::npos) << e.what();
  }
}

TEST(CpuIsa, DefaultIsTheBestAndEachForcedLevelItsFlags) {
  const CpuFeatures& cpu = HostCpu();
  std::cout << "CPU: " << cpu.model << " [" << cpu.FlagList() << "]\n";
  {
    IsaEnv env(nullptr);
    CpuIsaChoice c = ChooseCpuIsa();
    EXPECT_EQ(c.level, c.best);
    EXPECT_TRUE(CpuSupports(cpu, c.best));
  }
  for (CpuIsa l : kAll) {
    IsaEnv env(CpuIsaName(l));
    CpuIsaChoice c = ChooseCpuIsa();
    std::string missing;
    if (!CpuSupports(cpu, l, &missing)) {
      // Falls to a level below that the CPU has, and says so.
      std::cout << "level " << CpuIsaName(l) << " skipped: this CPU lacks " << missing << "\n";
      EXPECT_NE(c.level, l);
      EXPECT_TRUE(CpuSupports(cpu, c.level));
      EXPECT_NE(c.note.find(missing), std::string::npos) << c.note;
      continue;
    }
    EXPECT_EQ(c.level, l);
    EXPECT_TRUE(c.note.empty()) << c.note;
    auto has = [&](const char* f) { return c.flags.find(f) != std::string::npos; };
    EXPECT_EQ(has("PYPTO_AMX_EMULATE"), l == CpuIsa::AmxEmulated) << c.flags;
    if (l == CpuIsa::AmxEmulated) continue;  // (the flags of the best level without AMX)
    EXPECT_EQ(has("-mno-amx-tile"), l != CpuIsa::Amx) << c.flags;
    EXPECT_EQ(has("-mno-avx512f"), l == CpuIsa::Avx2 || l == CpuIsa::Avx2Vnni) << c.flags;
    EXPECT_EQ(has("-mno-avx512bf16"), l == CpuIsa::Avx512 || l == CpuIsa::Avx512Vnni) << c.flags;
    const bool no_avx = c.flags.size() >= 8 && c.flags.compare(c.flags.size() - 8, 8, "-mno-avx") == 0;
    EXPECT_EQ(no_avx, l == CpuIsa::Generic) << c.flags;
  }
}

// Every level this CPU runs: the kernels compiled for it report its paths and compute exactly
// (int8) or to fp32 rounding (fp32), with tails in M, N and K.
TEST(CpuIsa, EveryLevelThisCpuRunsComputesItsMatmuls) {
  const int64_t M = 37, K = 101, N = 53;
  CompiledProgram p8 = Compile(RecordMatmul("mm_i8", DataType::INT8, M, K, N), {});
  CompiledProgram p32 = Compile(RecordMatmul("mm_f32", DataType::FP32, M, K, N), {});
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> di(-128, 127);
  std::normal_distribution<float> df;
  std::vector<int8_t> a8(M * K), b8(K * N);
  std::vector<float> a32(M * K), b32(K * N);
  for (auto& v : a8) v = static_cast<int8_t>(di(rng));
  for (auto& v : b8) v = static_cast<int8_t>(di(rng));
  for (auto& v : a32) v = df(rng);
  for (auto& v : b32) v = df(rng);
  a8[0] = b8[0] = -128;  // the extremes of the unsigned fix-up
  a8[1] = b8[N] = 127;
  for (CpuIsa l : kAll) {
    std::string missing;
    if (!CpuSupports(HostCpu(), l, &missing)) {
      std::cout << "level " << CpuIsaName(l) << " skipped: this CPU lacks " << missing << "\n";
      continue;
    }
    IsaEnv env(CpuIsaName(l));
    Runtime r8(std::make_shared<CompiledProgram>(p8)), r32(std::make_shared<CompiledProgram>(p32));
    std::vector<int32_t> c8(M * N, -1);
    std::vector<float> c32(M * N, -1.f);
    RunOptions o;
    o.workers = 2;
    r8.Run({{a8.data(), DataType::INT8, {M, K}}, {b8.data(), DataType::INT8, {K, N}}},
           {{c8.data(), DataType::INT32, {M, N}}}, o);
    r32.Run({{a32.data(), DataType::FP32, {M, K}}, {b32.data(), DataType::FP32, {K, N}}},
            {{c32.data(), DataType::FP32, {M, N}}}, o);
    EXPECT_EQ(r8.NativeCubePaths(), CubePathsKey(l)) << CpuIsaName(l);
    EXPECT_EQ(r32.NativeCubePaths(), CubePathsKey(l)) << CpuIsaName(l);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t s8 = 0;
        double s32 = 0;
        for (int64_t k = 0; k < K; ++k) {
          s8 += int64_t(a8[i * K + k]) * b8[k * N + j];
          s32 += double(a32[i * K + k]) * b32[k * N + j];
        }
        ASSERT_EQ(c8[i * N + j], s8) << CpuIsaName(l) << " at " << i << "," << j;
        ASSERT_NEAR(c32[i * N + j], s32, 1e-4) << CpuIsaName(l) << " at " << i << "," << j;
      }
  }
}

// The AMX path compiles on every machine (it runs only where the CPU has AMX and Linux granted
// the tile data): the cube headers built with the AMX level's flags and a kernel that
// instantiates the bf16 and int8 matmuls, compiled (not run) with the kernels' compiler.
TEST(CpuIsa, AmxPathCompilesOnEveryMachine) {
  const std::string dir = testing::TempDir() + "pypto_amx_compile";
  std::string cmd = "mkdir -p '" + dir + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string src = dir + "/amx.cpp", obj = dir + "/amx.o";
  {
    FILE* f = std::fopen(src.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "#include <pypto/kernel_support.hpp>\n"
        "#if !PYPTO_CUBE_AMX || PYPTO_CUBE_BF16 != 2 || PYPTO_CUBE_I8 != 4\n#error the AMX paths are not selected\n"
        "#endif\n"
        "using namespace pypto_kernel;\n"
        "extern \"C\" void amx_bf16(float* c, const pto::bfloat16* a, const pto::bfloat16* b) {\n"
        "  alignas(64) static CubeT<pto::bfloat16> L[LeftElems<pto::bfloat16>(40, 70)], "
        "R[RightElems<pto::bfloat16>(70, 50)];\n"
        "  PackLeft<pto::bfloat16>(L, LeftLd<pto::bfloat16>(70), a, 70, 1, 40, 70);\n"
        "  PackRight<pto::bfloat16>(R, b, 50, 1, 70, 50);\n"
        "  CubeMatmulAcc<float>(c, 50, (const CubeT<pto::bfloat16>*)L, LeftLd<pto::bfloat16>(70), R, 40, 50, 70, "
        "true);\n"
        "}\n"
        "extern \"C\" void amx_int8(int32_t* c, const int8_t* a, const int8_t* b) {\n"
        "  alignas(64) static CubeT<int8_t> L[LeftElems<int8_t>(40, 70)], R[RightElems<int8_t>(70, 50)];\n"
        "  PackLeft<int8_t>(L, LeftLd<int8_t>(70), a, 70, 1, 40, 70);\n"
        "  PackRight<int8_t>(R, b, 50, 1, 70, 50);\n"
        "  CubeMatmulAcc<int32_t>(c, 50, (const CubeT<int8_t>*)L, LeftLd<int8_t>(70), R, 40, 50, 70, true);\n"
        "}\n",
        f);
    std::fclose(f);
  }
  // The AMX level's flags on top of -march=native, as the runtime compiles for it on an AMX CPU
  // (minus -shared: an object file is enough).
  std::string compile = KernelCompileCommand(
      "-mamx-tile -mamx-bf16 -mamx-int8 -mavx512f -mavx512bw -mavx512vl "
      "-mavx512dq -mavx512bf16 -mavx512vnni");
  const std::string shared = " -shared";
  compile.erase(compile.find(shared), shared.size());
  cmd = compile + " -c '" + src + "' -o '" + obj + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  if (status != 0 && out.find("amx") != std::string::npos && out.find("unrecognized") != std::string::npos)
    GTEST_SKIP() << "this compiler does not know the AMX flags: " << out.substr(0, 300);
  ASSERT_EQ(status, 0) << cmd << "\n" << out.substr(0, 4000);
  // The object holds the tile instructions.
  cmd = "objdump -d '" + obj + "' 2>/dev/null | grep -c -E 'tdpbf16ps|tdpbssd'";
  p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  out.clear();
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  if (!out.empty() && out != "0\n") EXPECT_GE(std::atoi(out.c_str()), 2) << out;
}
