// Reference instructions beyond the basic set: bitwise, remainder, ternary, compare/select,
// arg-reductions, matrix, movement and the "complex" family.
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "test_util.hpp"

namespace {
using namespace pto_test;
using pto::CmpMode;
namespace ref = pto::ref;

template <class T>
void set_row(Buf<T>& b, int r, std::initializer_list<double> v) {
  int c = 0;
  for (double x : v) {
    if constexpr (pto::is_float_v<T>) b(r, c++) = pto::elem::from_double<T>(x);
    else b(r, c++) = T(x);
  }
}

TEST(PtoRefMore, RemainderAndBitwise) {
  Buf<int32_t> a(1, 5), b(1, 5), d(1, 5);
  set_row(a, 0, {7, -7, 7, 5, std::numeric_limits<int32_t>::min()});
  set_row(b, 0, {3, 3, -3, 0, -1});
  ref::TREM(d.ref(), a.ref(), b.ref());
  EXPECT_EQ(d(0, 0), 1);
  EXPECT_EQ(d(0, 1), -1);  // sign of the dividend
  EXPECT_EQ(d(0, 2), 1);
  EXPECT_EQ(d(0, 3), 0);
  EXPECT_EQ(d(0, 4), 0);
  Buf<float> fa(1, 2), fb(1, 2), fd(1, 2);
  set_row(fa, 0, {5.5f, -5.5f});
  set_row(fb, 0, {2.0f, 2.0f});
  ref::TREM(fd.ref(), fa.ref(), fb.ref());
  EXPECT_EQ(fd(0, 0), 1.5f);
  EXPECT_EQ(fd(0, 1), -1.5f);

  Buf<uint8_t> u(1, 3), v(1, 3), w(1, 3);
  set_row(u, 0, {0xF0, 0x0F, 0xAA});
  set_row(v, 0, {0xFF, 0x01, 0x0F});
  ref::TAND(w.ref(), u.ref(), v.ref());
  EXPECT_EQ(w(0, 0), 0xF0);
  EXPECT_EQ(w(0, 2), 0x0A);
  ref::TOR(w.ref(), u.ref(), v.ref());
  EXPECT_EQ(w(0, 2), 0xAF);
  ref::TXOR(w.ref(), u.ref(), v.ref());
  EXPECT_EQ(w(0, 0), 0x0F);
  ref::TNOT(w.ref(), u.ref());
  EXPECT_EQ(w(0, 1), 0xF0);
  ref::TSHL(w.ref(), u.ref(), v.ref());
  EXPECT_EQ(w(0, 0), 0);     // amount 255 >= 8
  EXPECT_EQ(w(0, 1), 0x1E);
  ref::TSHRS(w.ref(), u.ref(), uint8_t(4));
  EXPECT_EQ(w(0, 0), 0x0F);  // logical for unsigned
  Buf<int8_t> s(1, 3), sd(1, 3);
  set_row(s, 0, {-128, 64, -1});
  ref::TSHRS(sd.ref(), s.ref(), int8_t(3));
  EXPECT_EQ(sd(0, 0), -16);  // arithmetic for signed
  ref::TSHLS(sd.ref(), s.ref(), int8_t(1));
  EXPECT_EQ(sd(0, 1), -128);  // wraps
  ref::TSHRS(sd.ref(), s.ref(), int8_t(9));
  EXPECT_EQ(sd(0, 0), -1);
  EXPECT_EQ(sd(0, 1), 0);
  ref::TANDS(sd.ref(), s.ref(), int8_t(0x0F));
  EXPECT_EQ(sd(0, 2), 15);
  Buf<bool> p(1, 2), q(1, 2), r(1, 2);
  set_row(p, 0, {true, false});
  set_row(q, 0, {true, true});
  ref::TAND(r.ref(), p.ref(), q.ref());
  EXPECT_TRUE(r(0, 0) && !r(0, 1));
  ref::TNOT(r.ref(), p.ref());
  EXPECT_TRUE(!r(0, 0) && r(0, 1));
  ref::TXOR(r.ref(), p.ref(), q.ref());
  EXPECT_TRUE(!r(0, 0) && r(0, 1));
}

TEST(PtoRefMore, TernaryAndRelus) {
  Buf<float> a(1, 3), b(1, 3), c(1, 3), d(1, 3);
  set_row(a, 0, {1.0f, -2.0f, 1.0f + 0x1p-12f});
  set_row(b, 0, {2.0f, 3.0f, 1.0f - 0x1p-12f});
  set_row(c, 0, {10.0f, 1.0f, -1.0f});
  ref::TADDC(d.ref(), a.ref(), b.ref(), c.ref());
  EXPECT_EQ(d(0, 0), 13.0f);
  ref::TSUBC(d.ref(), a.ref(), b.ref(), c.ref());
  EXPECT_EQ(d(0, 1), -4.0f);
  ref::TFUSEDMULADD(d.ref(), a.ref(), b.ref(), c.ref());
  EXPECT_EQ(d(0, 0), 12.0f);
  EXPECT_EQ(d(0, 2), -0x1p-24f);  // fused: (1+e)(1-e) - 1 = -e^2 exactly
  ref::TMOV(d.ref(), c.ref());
  ref::TAXPY(d.ref(), a.ref(), 2.0f);  // d = 2a + d
  EXPECT_EQ(d(0, 0), 12.0f);
  EXPECT_EQ(d(0, 1), -3.0f);
  ref::TLRELU(d.ref(), a.ref(), 0.5f);
  EXPECT_EQ(d(0, 0), 1.0f);
  EXPECT_EQ(d(0, 1), -1.0f);
  ref::TPRELU(d.ref(), a.ref(), c.ref());
  EXPECT_EQ(d(0, 1), -2.0f);
}

TEST(PtoRefMore, CompareSelect) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buf<float> a(2, 3), b(2, 3), d(2, 3);
  set_row(a, 0, {1, 2, 3});
  set_row(a, 1, {nan, 5, -1});
  set_row(b, 0, {1, 3, 2});
  set_row(b, 1, {0, nan, -1});
  Buf<bool> m(2, 3);
  const struct {
    CmpMode mode;
    bool want[6];
  } cases[] = {{CmpMode::EQ, {1, 0, 0, 0, 0, 1}}, {CmpMode::NE, {0, 1, 1, 1, 1, 0}},
               {CmpMode::LT, {0, 1, 0, 0, 0, 0}}, {CmpMode::LE, {1, 1, 0, 0, 0, 1}},
               {CmpMode::GT, {0, 0, 1, 0, 0, 0}}, {CmpMode::GE, {1, 0, 1, 0, 0, 1}}};
  for (const auto& cs : cases) {
    ref::TCMP(m.ref(), a.ref(), b.ref(), cs.mode);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(m(i / 3, i % 3), cs.want[i]) << int(cs.mode) << i;
  }
  ref::TCMP(m.ref(), a.ref(), b.ref(), CmpMode::GE);
  ref::TSEL(d.ref(), m.ref(), a.ref(), b.ref());  // max without NaN propagation
  EXPECT_EQ(d(0, 1), 3);
  EXPECT_EQ(d(0, 2), 3);
  EXPECT_EQ(d(1, 0), 0);
  ref::TSELS(d.ref(), a.ref(), b.ref(), 1);  // the whole of a
  EXPECT_EQ(d(0, 1), 2);
  ref::TSELS(d.ref(), a.ref(), b.ref(), 0);  // the whole of b
  EXPECT_EQ(d(0, 1), 3);
  ref::TADDSC(d.ref(), a.ref(), 10.0f, b.ref());
  EXPECT_EQ(d(0, 2), 15);
  ref::TSUBSC(d.ref(), a.ref(), 10.0f, b.ref());
  EXPECT_EQ(d(0, 2), -5);
  Buf<uint8_t> mu(2, 3);
  ref::TCMPS(mu.ref(), a.ref(), 2.0f, CmpMode::GT);
  EXPECT_EQ(mu(0, 2), 1);
  EXPECT_EQ(mu(0, 1), 0);
  EXPECT_EQ(mu(1, 1), 1);
}

TEST(PtoRefMore, ProdArgmaxExpdif) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Buf<float> s(3, 4);
  set_row(s, 0, {1, 5, 5, -2});
  set_row(s, 1, {-1, -3, -3, 0});
  set_row(s, 2, {1, nan, 9, nan});
  Buf<int32_t> idx(3, 1);
  ref::TROWARGMAX(idx.ref(), s.ref());
  EXPECT_EQ(idx(0, 0), 1);  // first of the ties
  EXPECT_EQ(idx(1, 0), 3);
  EXPECT_EQ(idx(2, 0), 1);  // first NaN
  ref::TROWARGMIN(idx.ref(), s.ref());
  EXPECT_EQ(idx(0, 0), 3);
  EXPECT_EQ(idx(1, 0), 1);
  EXPECT_EQ(idx(2, 0), 1);
  Buf<float> p(3, 1);
  ref::TROWPROD(p.ref(), s.ref());
  EXPECT_EQ(p(0, 0), -50.0f);
  EXPECT_EQ(p(1, 0), 0.0f);
  Buf<int16_t> is(2, 2), ip(1, 2);
  is(0, 0) = 300, is(1, 0) = 300, is(0, 1) = -2, is(1, 1) = 7;
  ref::TCOLPROD(ip.ref(), is.ref());
  EXPECT_EQ(ip(0, 0), int16_t(90000 - 65536 * 1));  // wraps
  EXPECT_EQ(ip(0, 1), -14);
  // The fused form equals TROWEXPANDSUB followed by TEXP, bit for bit (here in fp16).
  std::mt19937 rng(3);
  Buf<half> x(5, 19, 4, 17), m(5, 1, 4, 1), e1(5, 19, 4, 17), e2(5, 19, 4, 17);
  fill_random(x, rng, -8, 8);
  ref::TROWMAX(m.ref(), x.ref());
  ref::TROWEXPANDEXPDIF(e1.ref(), x.ref(), m.ref());
  ref::TROWEXPANDSUB(e2.ref(), x.ref(), m.ref());
  ref::TEXP(e2.ref(), e2.ref());
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 17; ++c) ASSERT_EQ(e1(r, c).bits, e2(r, c).bits);
  EXPECT_TRUE(e1.padding_untouched());
}

TEST(PtoRefMore, Matmul) {
  Buf<float> a(2, 3), b(3, 2), c(2, 2), bias(1, 2);
  set_row(a, 0, {1, 2, 3});
  set_row(a, 1, {4, 5, 6});
  set_row(b, 0, {7, 8});
  set_row(b, 1, {9, 10});
  set_row(b, 2, {11, 12});
  set_row(bias, 0, {0.5f, -0.5f});
  ref::TMATMUL(c.ref(), a.ref(), b.ref());
  EXPECT_EQ(c(0, 0), 58);
  EXPECT_EQ(c(0, 1), 64);
  EXPECT_EQ(c(1, 0), 139);
  EXPECT_EQ(c(1, 1), 154);
  ref::TMATMUL_ACC(c.ref(), a.ref(), b.ref());
  EXPECT_EQ(c(1, 1), 308);
  ref::TMATMUL_BIAS(c.ref(), a.ref(), b.ref(), bias.ref());
  EXPECT_EQ(c(0, 0), 58.5f);
  EXPECT_EQ(c(1, 1), 153.5f);
  auto row = c.ref();
  row.valid_rows = 1;
  ref::TGEMV(row, a.ref(), b.ref());
  EXPECT_EQ(c(0, 1), 64);
  Buf<int8_t> ia(1, 2), ib(2, 1);
  Buf<int32_t> ic(1, 1);
  ia(0, 0) = -128, ia(0, 1) = 127, ib(0, 0) = -128, ib(1, 0) = 127;
  ref::TMATMUL(ic.ref(), ia.ref(), ib.ref());
  EXPECT_EQ(ic(0, 0), 16384 + 16129);
  // Mixed precision: fp16 inputs, fp32 accumulation, tail K (A valid cols 5 of 8).
  Buf<half> ha(3, 8, 3, 5), hb(8, 4, 5, 4);
  Buf<float> hc(3, 4);
  std::mt19937 rng(5);
  fill_random(ha, rng, -1, 1);
  fill_random(hb, rng, -1, 1);
  ref::TMATMUL(hc.ref(), ha.ref(), hb.ref());
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 4; ++n) {
      double want = 0;
      for (int k = 0; k < 5; ++k) want += dbl(ha(m, k)) * dbl(hb(k, n));
      EXPECT_EQ(hc(m, n), float(want));
    }
  auto short_k = b.ref();
  short_k.valid_rows = 2;  // B does not cover K = 3
  EXPECT_THROW(ref::TMATMUL(c.ref(), a.ref(), short_k), pto::Error);
}

TEST(PtoRefMore, Movement) {
  Buf<int32_t> s(4, 5);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) s(r, c) = 10 * r + c;
  Buf<int32_t> e(2, 3);
  ref::TEXTRACT(e.ref(), s.ref(), 2, 1);
  EXPECT_EQ(e(0, 0), 21);
  EXPECT_EQ(e(1, 2), 33);
  EXPECT_THROW(ref::TEXTRACT(e.ref(), s.ref(), 3, 0), pto::Error);
  Buf<int32_t> big(4, 5);
  ref::TEXPANDS(big.ref(), 0);
  ref::TINSERT(big.ref(), e.ref(), 1, 2);
  EXPECT_EQ(big(1, 2), 21);
  EXPECT_EQ(big(2, 4), 33);
  EXPECT_EQ(big(0, 0), 0);
  Buf<int32_t> t(5, 4);
  ref::TTRANS(t.ref(), s.ref());
  EXPECT_EQ(t(4, 3), 34);
  EXPECT_EQ(t(1, 2), 21);
  Buf<int32_t> rs(2, 10);
  ref::TRESHAPE(rs.ref(), s.ref());
  EXPECT_EQ(rs(1, 0), 20);
  EXPECT_EQ(rs(0, 7), 12);
  Buf<float> pf(3, 4, 2, 3), full(3, 4);
  ref::TEXPANDS(pf.ref(), 1.0f);
  ref::TFILLPAD(full.ref(), pf.ref(), -INFINITY);
  EXPECT_EQ(full(1, 2), 1.0f);
  EXPECT_TRUE(std::isinf(full(2, 0)) && std::isinf(full(0, 3)));
  Buf<int32_t> cc(4, 9);
  ref::TCONCAT(cc.ref(), s.ref(), t.ref());
  EXPECT_EQ(cc(3, 4), 34);
  EXPECT_EQ(cc(3, 5), 3);
  EXPECT_EQ(cc(3, 8), 33);
}

TEST(PtoRefMore, GatherScatterCiTri) {
  Buf<float> s(2, 4);
  set_row(s, 0, {10, 11, 12, 13});
  set_row(s, 1, {20, 21, 22, 23});
  Buf<int32_t> ix(2, 3);
  set_row(ix, 0, {3, 0, 7});  // flat indices into the 2 x 4 source
  set_row(ix, 1, {5, 8, -1});
  Buf<float> g(2, 3);
  ref::TGATHER(g.ref(), s.ref(), ix.ref());
  EXPECT_EQ(g(0, 0), 13);
  EXPECT_EQ(g(0, 2), 23);
  EXPECT_EQ(g(1, 0), 21);
  EXPECT_EQ(g(1, 1), 0);  // out of range -> 0
  EXPECT_EQ(g(1, 2), 0);
  Buf<float> sc(2, 4);
  ref::TEXPANDS(sc.ref(), -1.0f);
  ref::TSCATTER(sc.ref(), g.ref(), ix.ref());
  EXPECT_EQ(sc(0, 3), 13);
  EXPECT_EQ(sc(0, 0), 10);
  EXPECT_EQ(sc(1, 3), 23);
  EXPECT_EQ(sc(1, 1), 21);
  EXPECT_EQ(sc(0, 1), -1);  // untouched
  Buf<int32_t> ci(2, 3);
  ref::TCI(ci.ref(), 100);
  EXPECT_EQ(ci(1, 2), 105);
  ref::TCI(ci.ref(), 100, true);
  EXPECT_EQ(ci(1, 0), 97);
  Buf<half> tri(3, 3);
  ref::TTRI(tri.ref(), 0, false);
  EXPECT_EQ(float(tri(0, 1)), 0.0f);
  EXPECT_EQ(float(tri(2, 1)), 1.0f);
  ref::TTRI(tri.ref(), 1, true);
  EXPECT_EQ(float(tri(0, 1)), 1.0f);
  EXPECT_EQ(float(tri(1, 1)), 0.0f);
}

TEST(PtoRefMore, SortAndMerge) {
  std::mt19937 rng(9);
  const int n = 70;  // two full blocks and a tail
  Buf<float> s(2, n), v(2, n), m(2, n);
  Buf<int32_t> vi(2, n), mi(2, n);
  fill_random(s, rng, -5, 5);
  s(0, 3) = s(0, 4);  // a tie
  ref::TSORT32(v.ref(), s.ref(), vi.ref());
  for (int r = 0; r < 2; ++r)
    for (int b = 0; b < n; b += 32)
      for (int i = b; i < std::min(b + 32, n); ++i) {
        EXPECT_EQ(v(r, i), s(r, vi(r, i)));
        EXPECT_GE(vi(r, i), b);
        if (i > b) {
          EXPECT_GE(v(r, i - 1), v(r, i));
          if (v(r, i - 1) == v(r, i)) EXPECT_LT(vi(r, i - 1), vi(r, i));
        }
      }
  ref::TMRGSORT(m.ref(), mi.ref(), v.ref(), vi.ref(), 32);
  ref::TMRGSORT(v.ref(), vi.ref(), m.ref(), mi.ref(), 64);
  for (int r = 0; r < 2; ++r) {
    std::vector<int> seen(n, 0);
    for (int i = 0; i < n; ++i) {
      ++seen[vi(r, i)];
      EXPECT_EQ(v(r, i), s(r, vi(r, i)));
      if (i) EXPECT_GE(v(r, i - 1), v(r, i));
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1);
  }
}

TEST(PtoRefMore, QuantDequant) {
  Buf<float> x(2, 3), scale(2, 1);
  set_row(x, 0, {1.0f, -2.5f, 100.0f});
  set_row(x, 1, {0.25f, 0.75f, -0.125f});
  scale(0, 0) = 2.0f, scale(1, 0) = 10.0f;
  Buf<int8_t> q(2, 3);
  ref::TQUANT(q.ref(), x.ref(), scale.ref());
  EXPECT_EQ(q(0, 0), 2);
  EXPECT_EQ(q(0, 1), -5);
  EXPECT_EQ(q(0, 2), 127);  // saturates
  EXPECT_EQ(q(1, 0), 2);    // 2.5 -> 2 (ties to even)
  EXPECT_EQ(q(1, 1), 8);    // 7.5 -> 8
  Buf<uint8_t> qu(2, 3);
  ref::TQUANT(qu.ref(), x.ref(), scale.ref(), 128.0f);
  EXPECT_EQ(qu(0, 1), 123);
  EXPECT_EQ(qu(0, 2), 255);
  Buf<float> inv(2, 1), y(2, 3);
  inv(0, 0) = 0.5f, inv(1, 0) = 0.1f;
  ref::TDEQUANT(y.ref(), q.ref(), inv.ref());
  EXPECT_EQ(y(0, 1), -2.5f);
  EXPECT_EQ(y(1, 1), 8 * 0.1f);
  Buf<half> yh(2, 3);
  ref::TDEQUANT(yh.ref(), qu.ref(), inv.ref(), 128.0f);
  EXPECT_EQ(float(yh(0, 1)), -2.5f);
}

TEST(PtoRefMore, MemoryExtras) {
  std::vector<float> g(12);
  for (int i = 0; i < 12; ++i) g[i] = float(i);
  auto gv = pto::make_global_2d(g.data(), 3, 4, 4);
  Buf<float> t(3, 4);
  ref::TLOAD(t.ref(), gv);
  ref::TPREFETCH(gv);
  ref::TSTORE(gv, t.ref(), pto::AtomicMode::ADD);
  EXPECT_EQ(g[11], 22.0f);
  Buf<int32_t> ix(1, 3);
  set_row(ix, 0, {11, 0, 5});
  Buf<float> d(1, 3);
  ref::MGATHER(d.ref(), gv, ix.ref());
  EXPECT_EQ(d(0, 0), 22.0f);
  EXPECT_EQ(d(0, 2), 10.0f);
  ref::TEXPANDS(d.ref(), -1.0f);
  ref::MSCATTER(gv, d.ref(), ix.ref());
  EXPECT_EQ(g[0], -1.0f);
  EXPECT_EQ(g[1], 2.0f);
  ix(0, 1) = 12;
  EXPECT_THROW(ref::MGATHER(d.ref(), gv, ix.ref()), pto::Error);
  // Atomic accumulation in fp16 rounds like TADD.
  std::vector<half> h(1, half(2048.0f));
  Buf<half> one(1, 1);
  one(0, 0) = half(1.0f);
  ref::TSTORE(pto::make_global_2d(h.data(), 1, 1, 1), one.ref(), pto::AtomicMode::ADD);
  EXPECT_EQ(float(h[0]), 2048.0f);  // 2049 ties to even
}

}  // namespace

namespace {
using namespace pto_test;

TEST(PtoSync, FlagsAreChecked) {
  using pto::Pipe;
  pto::core_flags().reset();
  pto::set_flag(Pipe::MTE2, Pipe::V, 0);
  pto::set_flag(Pipe::MTE2, Pipe::V, 0);
  pto::wait_flag(Pipe::MTE2, Pipe::V, 0);
  EXPECT_EQ(pto::core_flags().pending(), 1);
  pto::wait_flag(Pipe::MTE2, Pipe::V, 0);
  EXPECT_THROW(pto::wait_flag(Pipe::MTE2, Pipe::V, 0), pto::Error);  // would deadlock
  EXPECT_THROW(pto::wait_flag(Pipe::V, Pipe::MTE3, 1), pto::Error);
  EXPECT_THROW(pto::set_flag(Pipe::V, Pipe::MTE3, pto::kNumEvents), pto::Error);
  pto::pipe_barrier(Pipe::ALL);
  EXPECT_EQ(pto::core_flags().pending(), 0);
}

TEST(PtoSync, TileFifoBetweenThreads) {
  // A "cube" thread pushes 50 tiles of varying valid shape through a depth-2 FIFO; the
  // "vector" thread pops them in order.
  pto::TileFifo<float> fifo(2, 8, 16);
  std::thread producer([&] {
    for (int i = 0; i < 50; ++i) {
      pto::VecTile<float, 8, 16, pto::DYNAMIC, pto::DYNAMIC> t(1 + i % 8, 1 + i % 16);
      pto::TEXPANDS(t, float(i));
      pto::TPUSH(fifo, t);
    }
    fifo.close();
  });
  for (int i = 0; i < 50; ++i) {
    Buf<float> t(8, 16, 1 + i % 8, 1 + i % 16);
    ASSERT_TRUE(pto::TPOP(t.ref(), fifo));
    EXPECT_EQ(t(t.vr - 1, t.vc - 1), float(i));
    EXPECT_TRUE(t.padding_untouched());
  }
  Buf<float> t(8, 16);
  EXPECT_FALSE(pto::TPOP(t.ref(), fifo));  // closed and drained
  producer.join();
  pto::TileFifo<int8_t> small(1, 2, 2);
  Buf<int8_t> big(3, 3);
  EXPECT_THROW(pto::TPUSH(small, big.ref()), pto::Error);
}

}  // namespace
