// PTO assembly: printer/parser round trips, running kernels (softmax with tails, a cube kernel
// feeding a vector kernel through a FIFO), error reporting; and the run-time instruction table.
#include <cmath>
#include <random>
#include <set>

#include <pto/asm/exec.hpp>

#include "test_util.hpp"

namespace {
using namespace pto_test;
namespace as = pto::as;

const char* kAllConstructs = R"(
# every construct of the format
.fifo %q : !pto.fifo<f32, 16x16, depth=2>
.kernel producer core=aic
  .arg %a : !pto.gm<f16, 16x?>
  .arg %k : index
  .arg %alpha : f32
  .tile %l : !pto.tile<left, f16, 16x32, valid=16x?>
  .tile %nz : !pto.tile<right, f16, 32x16, layout=nz, pad=zero>
  .tile %c : !pto.tile<acc, f32, 16x16>
  .const %one = 1 : index
  .const %eps = -1.5e-3 : f32
  for %i = 0 to %k step 32 {
    %w = sub %k, %i;   // trailing semicolons are fine
    %w = min %w, 32
    set_valid %l, 16, %w
    tload %l, %a[0, %i]
    for %j = %one to 3 {
      tmatmul_acc %c, %l, %l
    }
  }
  set_flag m, v, 0
  wait_flag m, v, 0
  pipe_barrier all
  tcmps %c, %c, 0.5 {cmp = gt}
  tcvt %c, %c {round = floor}
  tstore %a[0, 0], %c {atomic = add}
  tpush %q, %c
.end

.kernel consumer core=aiv
  .tile %c : !pto.tile<vec, f32, 16x16>
  tpop %c, %q
  tadds %c, %c, -2
.end
)";

TEST(PtoAsm, RoundTrip) {
  const as::Module m = as::parse(kAllConstructs);
  ASSERT_EQ(m.kernels.size(), 2u);
  ASSERT_EQ(m.fifos.size(), 1u);
  const std::string text = as::print(m);
  EXPECT_EQ(as::parse(text), m);
  EXPECT_EQ(as::print(as::parse(text)), text);  // canonical form is a fixed point
  EXPECT_NE(text.find("tload %l, %a[0, %i]"), std::string::npos) << text;
  EXPECT_NE(text.find("tcmps %c, %c, 0.5 {cmp = gt}"), std::string::npos);
  EXPECT_NE(text.find(".const %eps = -1.5e-3 : f32"), std::string::npos);
  EXPECT_NE(text.find("!pto.tile<right, f16, 32x16, layout=nz, pad=zero>"), std::string::npos);
  const as::Stmt& loop = m.kernels[0].body[0];
  ASSERT_EQ(loop.kind, as::Stmt::FOR);
  EXPECT_EQ(loop.body.size(), 5u);
  EXPECT_EQ(loop.body[4].body[0].op, "tmatmul_acc");
}

TEST(PtoAsm, ParseErrorsNameTheLine) {
  auto msg = [](const char* src) {
    try {
      as::parse(src);
    } catch (const pto::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg(".kernel k\n  tadd %a, %b, %c\n").find("missing .end"), std::string::npos);
  EXPECT_NE(msg(".kernel k\n  .tile %t : !pto.tile<vec, f99, 8x8>\n.end").find("line 2"),
            std::string::npos);
  EXPECT_NE(msg(".kernel k\n  for %i = 0 to 4 {\n.end").find("line 3"), std::string::npos);
  EXPECT_NE(msg(".kernel k\n  }\n.end").find("unmatched"), std::string::npos);
  EXPECT_NE(msg("tadd %a\n").find("outside"), std::string::npos);
  EXPECT_NE(msg(".kernel k\n .arg %a : index\n .arg %a : index\n.end").find("twice"),
            std::string::npos);
}

const char* kSoftmax = R"(
.kernel softmax core=aiv
  .arg %x : !pto.gm<f32, ?x?>
  .arg %y : !pto.gm<f32, ?x?>
  .arg %n : index
  .arg %d : index
  .tile %t : !pto.tile<vec, f32, 8x64, valid=?x?>
  .tile %m : !pto.tile<vec, f32, 8x1, valid=?x1>
  for %i = 0 to %n step 8 {
    %r = sub %n, %i
    %r = min %r, 8
    set_valid %t, %r, %d
    set_valid %m, %r, 1
    tload %t, %x[%i, 0]
    trowmax %m, %t
    trowexpandexpdif %t, %t, %m
    trowsum %m, %t
    trowexpanddiv %t, %t, %m
    tstore %y[%i, 0], %t
  }
.end
)";

TEST(PtoAsm, RunsSoftmaxWithTails) {
  const int n = 21, d = 45;  // row tail (21 = 2 * 8 + 5) and column tail (45 of 64)
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-5, 5);
  std::vector<float> x(n * d), y(n * d, -1.0f);
  for (float& v : x) v = dist(rng);
  as::Bindings b;
  b.tensors["%x"] = {pto::DType::FP32, x.data(), {n, d}, {}};
  b.tensors["%y"] = {pto::DType::FP32, y.data(), {n, d}, {}};
  b.scalars["%n"] = pto::dyn::Scalar::of_int(n);
  b.scalars["%d"] = pto::dyn::Scalar::of_int(d);
  as::run(kSoftmax, b);
  for (int r = 0; r < n; ++r) {
    double mx = -1e30, sum = 0;
    for (int c = 0; c < d; ++c) mx = std::max(mx, double(x[r * d + c]));
    for (int c = 0; c < d; ++c) sum += std::exp(double(x[r * d + c]) - mx);
    for (int c = 0; c < d; ++c)
      ASSERT_NEAR(y[r * d + c], std::exp(double(x[r * d + c]) - mx) / sum, 1e-6) << r << "," << c;
  }
}

const char* kCubeVector = R"(
.fifo %acc : !pto.fifo<f32, 16x32, depth=2>

// Cube: C[i] = A[i] x B for each 16-row block of A, pushed to the vector core.
.kernel matmul core=aic
  .arg %a : !pto.gm<f16, ?x24>
  .arg %b : !pto.gm<f16, 24x32>
  .arg %m : index
  .tile %l : !pto.tile<left, f16, 16x24>
  .tile %r : !pto.tile<right, f16, 24x32>
  .tile %c : !pto.tile<acc, f32, 16x32>
  tload %r, %b[0, 0]
  for %i = 0 to %m step 16 {
    tload %l, %a[%i, 0]
    tmatmul %c, %l, %r
    tpush %acc, %c
  }
.end

// Vector: relu(C + bias), converted to fp16 and stored.
.kernel epilogue core=aiv
  .arg %bias : !pto.gm<f32, 1x32>
  .arg %out : !pto.gm<f16, ?x32>
  .arg %m : index
  .tile %c : !pto.tile<vec, f32, 16x32>
  .tile %bv : !pto.tile<vec, f32, 1x32>
  .tile %h : !pto.tile<vec, f16, 16x32>
  tload %bv, %bias[0, 0]
  for %i = 0 to %m step 16 {
    tpop %c, %acc
    tcolexpandadd %c, %c, %bv
    trelu %c, %c
    tcvt %h, %c
    tstore %out[%i, 0], %h
  }
.end
)";

TEST(PtoAsm, CubeKernelFeedsVectorKernel) {
  const int m = 64;
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<half> a(m * 24), b(24 * 32), out(m * 32);
  std::vector<float> bias(32);
  for (auto& v : a) v = half(dist(rng));
  for (auto& v : b) v = half(dist(rng));
  for (auto& v : bias) v = dist(rng);
  as::Bindings bind;
  bind.tensors["%a"] = {pto::DType::FP16, a.data(), {m, 24}, {}};
  bind.tensors["%b"] = {pto::DType::FP16, b.data(), {24, 32}, {}};
  bind.tensors["%bias"] = {pto::DType::FP32, bias.data(), {1, 32}, {}};
  bind.tensors["%out"] = {pto::DType::FP16, out.data(), {m, 32}, {}};
  bind.scalars["%m"] = pto::dyn::Scalar::of_int(m);
  as::run(kCubeVector, bind);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < 32; ++j) {
      double acc = bias[j];
      for (int k = 0; k < 24; ++k) acc += double(float(a[i * 24 + k])) * float(b[k * 32 + j]);
      ASSERT_NEAR(float(out[i * 32 + j]), std::max(acc, 0.0), 2e-3 * (1 + std::fabs(acc)));
    }
}

// Cube operands in NZ / column-major tiles: tmov converts layouts, tmatmul reads them directly;
// the result equals the same kernel on row-major tiles, bit for bit.
std::string layout_kernel(const char* dt, const char* acc, const char* la, const char* lb) {
  return std::string(".kernel mm core=aic\n") + "  .arg %x : !pto.gm<" + dt + ", ?x?>\n" +
         "  .arg %w : !pto.gm<" + dt + ", ?x?>\n" + "  .arg %y : !pto.gm<" + acc + ", ?x?>\n" +
         "  .arg %r : index\n  .arg %k : index\n  .arg %n : index\n" +
         "  .tile %xv : !pto.tile<vec, " + dt + ", 32x64, valid=?x?>\n" +
         "  .tile %wv : !pto.tile<vec, " + dt + ", 64x32, valid=?x?>\n" +
         "  .tile %a : !pto.tile<left, " + dt + ", 32x64, valid=?x?, layout=" + la + ">\n" +
         "  .tile %b : !pto.tile<right, " + dt + ", 64x32, valid=?x?, layout=" + lb + ">\n" +
         "  .tile %c : !pto.tile<acc, " + acc + ", 32x32, valid=?x?>\n" +
         "  set_valid %xv, %r, %k\n  set_valid %a, %r, %k\n  set_valid %wv, %k, %n\n" +
         "  set_valid %b, %k, %n\n  set_valid %c, %r, %n\n" +
         "  tload %xv, %x[0, 0]\n  tload %wv, %w[0, 0]\n  tmov %a, %xv\n  tmov %b, %wv\n" +
         "  tmatmul %c, %a, %b\n  tmatmul_acc %c, %a, %b\n  tstore %y[0, 0], %c\n.end\n";
}

TEST(PtoAsm, CubeOperandsInAnyLayout) {
  std::mt19937 rng(5);
  for (const char* dt : {"f32", "f16", "i8"}) {
    const bool is_int = std::string(dt) == "i8";
    const pto::DType d = is_int                     ? pto::DType::INT8
                         : std::string(dt) == "f16" ? pto::DType::FP16
                                                    : pto::DType::FP32;
    const size_t es = pto::dtype_size(d);
    std::vector<std::byte> x(32 * 64 * es), w(64 * 32 * es);
    for (size_t i = 0; i < 32 * 64; ++i) {
      const int v = int(rng() % 17) - 8;
      const int u = int(rng() % 17) - 8;
      if (is_int) {
        reinterpret_cast<int8_t*>(x.data())[i] = int8_t(v);
        reinterpret_cast<int8_t*>(w.data())[i] = int8_t(u);
      } else if (es == 2) {
        reinterpret_cast<half*>(x.data())[i] = half(float(v));
        reinterpret_cast<half*>(w.data())[i] = half(float(u));
      } else {
        reinterpret_cast<float*>(x.data())[i] = float(v);
        reinterpret_cast<float*>(w.data())[i] = float(u);
      }
    }
    const int r = 1 + rng() % 32, k = 1 + rng() % 64, n = 1 + rng() % 32;
    auto run = [&](const char* la, const char* lb) {
      std::vector<int32_t> y(32 * 32, -1);  // int32 and fp32 are both 4 bytes
      as::Bindings b;
      b.tensors["%x"] = {d, x.data(), {r, k}, {64, 1}};
      b.tensors["%w"] = {d, w.data(), {k, n}, {32, 1}};
      b.tensors["%y"] = {is_int ? pto::DType::INT32 : pto::DType::FP32, y.data(), {r, n}, {32, 1}};
      b.scalars["%r"] = pto::dyn::Scalar::of_int(r);
      b.scalars["%k"] = pto::dyn::Scalar::of_int(k);
      b.scalars["%n"] = pto::dyn::Scalar::of_int(n);
      as::run(layout_kernel(dt, is_int ? "i32" : "f32", la, lb), b);
      return y;
    };
    const auto want = run("row_major", "row_major");
    EXPECT_EQ(want, run("nz", "nz")) << dt;
    EXPECT_EQ(want, run("col_major", "nz")) << dt;
    EXPECT_EQ(want, run("nz", "row_major")) << dt;
    // and the values: 2 * x @ w, exact (small integers)
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int q = 0; q < k; ++q) {
          auto at = [&](const std::vector<std::byte>& m, size_t idx) {
            if (is_int) return double(reinterpret_cast<const int8_t*>(m.data())[idx]);
            if (es == 2) return double(float(reinterpret_cast<const half*>(m.data())[idx]));
            return double(reinterpret_cast<const float*>(m.data())[idx]);
          };
          acc += at(x, i * 64 + q) * at(w, q * 32 + j);
        }
        const int32_t bits = want[i * 32 + j];
        float f;
        std::memcpy(&f, &bits, 4);
        ASSERT_EQ(is_int ? double(bits) : double(f), 2 * acc) << dt << " " << i << "," << j;
      }
  }
  // Only tmov and the matmul family take other layouts.
  try {
    as::Bindings none;
    as::run(".kernel k\n  .tile %t : !pto.tile<left, f32, 16x8, layout=nz>\n  texp %t, %t\n.end",
            none);
    FAIL() << "no error";
  } catch (const pto::Error& e) {
    EXPECT_NE(std::string(e.what()).find("only tmov and the tmatmul family"), std::string::npos);
  }
}

TEST(PtoAsm, RunErrorsNameKernelAndLine) {
  auto msg = [](const char* src, as::Bindings b = {}) {
    try {
      as::run(src, b);
    } catch (const pto::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string unknown =
      msg(".kernel k\n  .tile %t : !pto.tile<vec, f32, 8x8>\n  tfoo %t, %t\n.end");
  EXPECT_EQ(unknown.rfind("k:3: ", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("unknown instruction TFOO"), std::string::npos) << unknown;
  EXPECT_NE(msg(".kernel k\n  .tile %t : !pto.tile<vec, i8, 8x8>\n  texp %t, %t\n.end")
                .find("does not support dtype int8"),
            std::string::npos);
  EXPECT_NE(msg(".kernel k\n  wait_flag mte2, v, 1\n.end").find("k:2:"), std::string::npos);
  std::vector<float> x(4 * 8);
  as::Bindings b;
  b.tensors["%x"] = {pto::DType::FP32, x.data(), {4, 8}, {}};
  EXPECT_NE(msg(".kernel k\n  .arg %x : !pto.gm<f32, 4x8>\n  .tile %t : !pto.tile<vec, f32, 8x8>\n"
                "  tload %t, %x[0, 0]\n.end",
                b)
                .find("exceeds dim 0"),
            std::string::npos);
  EXPECT_NE(msg(".kernel k\n  .arg %x : !pto.gm<f32, 5x8>\n.end", b).find("dim 0 is 4"),
            std::string::npos);
  EXPECT_NE(msg(".kernel k\n  .arg %x : !pto.gm<f32, 4x8>\n.end").find("no tensor bound"),
            std::string::npos);
  // A failing consumer must not leave the producer blocked on a full FIFO.
  EXPECT_NE(msg(".fifo %q : !pto.fifo<f32, 8x8, depth=1>\n"
                ".kernel p\n  .tile %t : !pto.tile<vec, f32, 8x8>\n"
                "  for %i = 0 to 10 {\n    tpush %q, %t\n  }\n.end\n"
                ".kernel c\n  .tile %t : !pto.tile<vec, i8, 8x8>\n  tpop %t, %q\n.end")
                .find("fifo dtype mismatch"),
            std::string::npos);
}

// The run-time table and the instruction list agree, so every instruction is reachable from
// the assembler and the bindings.
TEST(PtoDyn, RegistryCoversTheIsa) {
  std::set<std::string> listed;
#define PTO_NAME(NAME, FORM, DTYPES) listed.insert(#NAME);
  PTO_INSTRUCTIONS(PTO_NAME)
#undef PTO_NAME
  std::set<std::string> registered;
  for (const auto& [name, info] : pto::dyn::registry()) registered.insert(name);
  EXPECT_EQ(listed, registered);
}

TEST(PtoDyn, CallsByName) {
  Buf<int16_t> a(3, 5), d(3, 5);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) a(r, c) = int16_t(r * 5 + c);
  pto::dyn::Call call{
      "TMULS", {pto::dyn::any(d.ref()), pto::dyn::any(a.ref()), pto::dyn::Scalar::of_int(3)}, {}};
  pto::dyn::call(call);
  EXPECT_EQ(d(2, 4), 42);
  Buf<float> f(3, 5);
  call = {"TCVT", {pto::dyn::any(f.ref()), pto::dyn::any(a.ref())}, {}};
  pto::dyn::call(call);
  EXPECT_EQ(f(1, 1), 6.0f);
  call = {"TADD", {pto::dyn::any(f.ref()), pto::dyn::any(a.ref()), pto::dyn::any(a.ref())}, {}};
  EXPECT_THROW(pto::dyn::call(call), pto::Error);  // mixed dtypes
  call.args.pop_back();
  EXPECT_THROW(pto::dyn::call(call), pto::Error);  // arity
}

// Entries whose behaviour depends on the name or on attributes call the right thing.
TEST(PtoDyn, NameAndAttributeDispatch) {
  using pto::dyn::any;
  using pto::dyn::Call;
  Buf<float> a(2, 4);
  const float v[2][4] = {{3, 1, 4, 1}, {-5, 9, -2, 6}};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c) a(r, c) = v[r][c];
  Buf<int32_t> idx(2, 1);
  pto::dyn::call(Call{"TROWARGMAX", {any(idx.ref()), any(a.ref())}, {}});
  EXPECT_EQ(idx(0, 0), 2);
  EXPECT_EQ(idx(1, 0), 1);
  pto::dyn::call(Call{"TROWARGMIN", {any(idx.ref()), any(a.ref())}, {}});
  EXPECT_EQ(idx(0, 0), 1);
  EXPECT_EQ(idx(1, 0), 0);
  Buf<bool> m(2, 4);
  pto::dyn::call(
      Call{"TCMPS", {any(m.ref()), any(a.ref()), pto::dyn::Scalar::of_int(3)}, {{"cmp", "ge"}}});
  EXPECT_TRUE(m(0, 0) && !m(0, 1) && m(1, 1) && !m(1, 0));
  Buf<int8_t> q(2, 4);
  Buf<float> h(2, 4);
  for (int c = 0; c < 4; ++c) h(0, c) = 0.5f + c, h(1, c) = -0.5f - c;
  pto::dyn::call(Call{"TCVT", {any(q.ref()), any(h.ref())}, {{"round", "floor"}}});
  EXPECT_EQ(q(0, 0), 0);
  EXPECT_EQ(q(1, 0), -1);
  pto::dyn::call(Call{"TCVT", {any(q.ref()), any(h.ref())}, {{"round", "round"}}});
  EXPECT_EQ(q(0, 0), 1);
  EXPECT_EQ(q(1, 1), -2);
  Buf<int32_t> ci(1, 4);
  pto::dyn::call(Call{"TCI", {any(ci.ref()), pto::dyn::Scalar::of_int(10)}, {{"descending", "1"}}});
  EXPECT_EQ(ci(0, 3), 7);
  Buf<float> tri(3, 3);
  pto::dyn::call(Call{"TTRI", {any(tri.ref()), pto::dyn::Scalar::of_int(0)}, {{"upper", "1"}}});
  EXPECT_EQ(tri(0, 2), 1.0f);
  EXPECT_EQ(tri(2, 0), 0.0f);
  Buf<float> c(2, 2), b(4, 2);
  for (int r = 0; r < 4; ++r) b(r, 0) = 1, b(r, 1) = float(r);
  pto::dyn::call(Call{"TMATMUL", {any(c.ref()), any(a.ref()), any(b.ref())}, {}});
  EXPECT_EQ(c(0, 0), 9.0f);
  EXPECT_EQ(c(0, 1), 1 + 8 + 3.0f);
  pto::dyn::call(Call{"TMATMUL_ACC", {any(c.ref()), any(a.ref()), any(b.ref())}, {}});
  EXPECT_EQ(c(0, 0), 18.0f);
  std::vector<float> g(8, 1.0f);
  pto::dyn::AnyGlobal gv{pto::DType::FP32, g.data(), {1, 1, 1, 2, 4}, {0, 0, 0, 4, 1}};
  pto::dyn::call(Call{"TSTORE", {gv, any(a.ref())}, {{"atomic", "add"}}});
  EXPECT_EQ(g[2], 5.0f);
  EXPECT_THROW(pto::dyn::call(Call{"TSTORE", {gv, any(a.ref())}, {{"atomic", "max"}}}), pto::Error);
  EXPECT_THROW(
      pto::dyn::call(Call{"TCMP", {any(m.ref()), any(a.ref()), any(a.ref())}, {{"cmp", "bigger"}}}),
      pto::Error);
}

}  // namespace
