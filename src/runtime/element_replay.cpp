#include "runtime/element_replay.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <pto/simd_math.hpp>
#include <type_traits>

#include "runtime/worker_pool.h"

namespace pypto::rt {
namespace {

using pto::bfloat16;
using pto::half;
namespace simd = pto::simd;

// Calls f(T{}) with the C++ type of `t`.
template <class F>
decltype(auto) WithType(ElemType t, F&& f) {
  switch (t) {
    case ElemType::F32:
      return f(float{});
    case ElemType::F16:
      return f(half{});
    case ElemType::BF16:
      return f(bfloat16{});
    case ElemType::I32:
      return f(int32_t{});
    case ElemType::I8:
      return f(int8_t{});
    case ElemType::U8:
      return f(uint8_t{});
    case ElemType::I16:
      return f(int16_t{});
    case ElemType::U16:
      return f(uint16_t{});
    case ElemType::U32:
      return f(uint32_t{});
    case ElemType::I64:
      return f(int64_t{});
    case ElemType::U64:
      return f(uint64_t{});
    case ElemType::F64:
      return f(double{});
  }
  throw std::logic_error("element replay: unknown type");
}

template <class T>
inline constexpr bool kFloat = std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// One operand: element i is at base + (idx ? idx[i] : i) * sizeof(T).
struct Operand {
  char* base = nullptr;
  const int64_t* idx = nullptr;
  template <class T>
  T* at(int64_t i) const {
    return reinterpret_cast<T*>(base) + (idx ? idx[i] : i);
  }
};

// A scalar as numpy's astype gives it: floats round (once, from the double), integers wrap;
// a non-integer into an integer truncates, a NaN or infinity gives 0.
template <class T>
T FromDouble(double v) {
  if constexpr (kFloat<T>) {
    return static_cast<T>(v);
  } else {
    if (!std::isfinite(v) || std::fabs(v) >= 0x1p63) return T(0);
    return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
}

template <class T>
double ToDouble(const T& v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
    return static_cast<float>(v);
  else
    return static_cast<double>(v);
}

thread_local std::vector<float> tls_f[3];
thread_local std::vector<int64_t> tls_i[3];

template <class B>
B* Buffer(std::vector<B>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

template <class T, class C>
void Gather(const Operand& o, int64_t n, C* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<C>(ToDouble(*o.at<T>(i)));
}

template <class T>
void ScatterFloat(const Operand& o, int64_t n, const float* r) {
  for (int64_t i = 0; i < n; ++i) *o.at<T>(i) = static_cast<T>(r[i]);
}

template <class T>
void ScatterInt(const Operand& o, int64_t n, const int64_t* r) {
  for (int64_t i = 0; i < n; ++i) *o.at<T>(i) = static_cast<T>(static_cast<uint64_t>(r[i]));
}

// numpy's maximum / minimum: NaN wins.
template <class C>
C Max(C a, C b) {
  return (a != a || a > b) ? a : b;
}
template <class C>
C Min(C a, C b) {
  return (a != a || a < b) ? a : b;
}

template <class F>
void MapVec(const float* x, float* r, int64_t n, F f) {
  int64_t i = 0;
  for (; i + simd::kW <= n; i += simd::kW) {
    simd::vf v;
    std::memcpy(&v, x + i, sizeof v);
    v = f(v);
    std::memcpy(r + i, &v, sizeof v);
  }
  if (i < n) {
    simd::vf v = simd::splat(1.0f);
    std::memcpy(&v, x + i, sizeof(float) * static_cast<size_t>(n - i));
    v = f(v);
    std::memcpy(r + i, &v, sizeof(float) * static_cast<size_t>(n - i));
  }
}

// Elementwise on floats (16-bit ones widened): r = op(x, y or s).
void FloatOp(ElemOp op, const float* x, const float* y, float s, float* r, int64_t n) {
  switch (op) {
    case ElemOp::Add:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] + y[i];
      break;
    case ElemOp::Sub:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] - y[i];
      break;
    case ElemOp::Mul:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] * y[i];
      break;
    case ElemOp::Div:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] / y[i];
      break;
    case ElemOp::Max:
      for (int64_t i = 0; i < n; ++i) r[i] = Max(x[i], y[i]);
      break;
    case ElemOp::Min:
      for (int64_t i = 0; i < n; ++i) r[i] = Min(x[i], y[i]);
      break;
    case ElemOp::AddRelu:
      for (int64_t i = 0; i < n; ++i) {
        float t = x[i] + y[i];
        r[i] = t > 0.f ? t : 0.f;
      }
      break;
    case ElemOp::AddS:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] + s;
      break;
    case ElemOp::MulS:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] * s;
      break;
    case ElemOp::MaxS:
      for (int64_t i = 0; i < n; ++i) r[i] = Max(x[i], s);
      break;
    case ElemOp::MinS:
      for (int64_t i = 0; i < n; ++i) r[i] = Min(x[i], s);
      break;
    case ElemOp::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] >= 0.f ? x[i] : x[i] * s;
      break;
    case ElemOp::Abs:
      for (int64_t i = 0; i < n; ++i) r[i] = std::fabs(x[i]);
      break;
    case ElemOp::Relu:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] > 0.f ? x[i] : 0.f;
      break;
    case ElemOp::Sqrt:
      for (int64_t i = 0; i < n; ++i) r[i] = std::sqrt(x[i]);
      break;
    case ElemOp::Rsqrt:
      for (int64_t i = 0; i < n; ++i) r[i] = 1.f / std::sqrt(x[i]);
      break;
    case ElemOp::Reciprocal:
      for (int64_t i = 0; i < n; ++i) r[i] = 1.f / x[i];
      break;
    case ElemOp::Exp:
      MapVec(x, r, n, [](simd::vf v) { return simd::math::exp(v); });
      break;
    case ElemOp::Ln:
      MapVec(x, r, n, [](simd::vf v) { return simd::math::log(v); });
      break;
    default:
      throw std::logic_error("element replay: not a float operation");
  }
}

// Elementwise on integers in C (int64 when widened, else the type itself): add, sub and mul
// wrap (computed unsigned).
template <class C>
void IntOp(ElemOp op, const C* x, const C* y, C s, C* r, int64_t n) {
  using U = std::make_unsigned_t<C>;
  switch (op) {
    case ElemOp::Add:
      for (int64_t i = 0; i < n; ++i) r[i] = static_cast<C>(U(x[i]) + U(y[i]));
      break;
    case ElemOp::Sub:
      for (int64_t i = 0; i < n; ++i) r[i] = static_cast<C>(U(x[i]) - U(y[i]));
      break;
    case ElemOp::Mul:
      for (int64_t i = 0; i < n; ++i) r[i] = static_cast<C>(U(x[i]) * U(y[i]));
      break;
    case ElemOp::Max:
      for (int64_t i = 0; i < n; ++i) r[i] = std::max(x[i], y[i]);
      break;
    case ElemOp::Min:
      for (int64_t i = 0; i < n; ++i) r[i] = std::min(x[i], y[i]);
      break;
    case ElemOp::And:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] & y[i];
      break;
    case ElemOp::Or:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] | y[i];
      break;
    case ElemOp::AddRelu:
      for (int64_t i = 0; i < n; ++i) {
        C t = static_cast<C>(U(x[i]) + U(y[i]));
        r[i] = t > 0 ? t : C(0);
      }
      break;
    case ElemOp::AddS:
      for (int64_t i = 0; i < n; ++i) r[i] = static_cast<C>(U(x[i]) + U(s));
      break;
    case ElemOp::MulS:
      for (int64_t i = 0; i < n; ++i) r[i] = static_cast<C>(U(x[i]) * U(s));
      break;
    case ElemOp::MaxS:
      for (int64_t i = 0; i < n; ++i) r[i] = std::max(x[i], s);
      break;
    case ElemOp::MinS:
      for (int64_t i = 0; i < n; ++i) r[i] = std::min(x[i], s);
      break;
    case ElemOp::Abs:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] < 0 ? static_cast<C>(U(0) - U(x[i])) : x[i];
      break;
    case ElemOp::Relu:
      for (int64_t i = 0; i < n; ++i) r[i] = x[i] > 0 ? x[i] : C(0);
      break;
    case ElemOp::Not:
      for (int64_t i = 0; i < n; ++i) r[i] = ~x[i];
      break;
    default:
      throw std::logic_error("element replay: not an integer operation");
  }
}

bool Binary(ElemOp op) { return (op >= ElemOp::Add && op <= ElemOp::AddRelu); }

struct Operands {
  Operand dst, src0, src1;
  int64_t n;
  double scalar;
};

// Whether [a, a + bytes) and [b, b + bytes) overlap without being the same range.
bool PartialOverlap(const Operand& a, const Operand& b, int64_t bytes) {
  return a.base != b.base && a.base < b.base + bytes && b.base < a.base + bytes;
}

// 4-byte operands, contiguous and not partly overlapping: the instruction runs in place.
bool InPlace(const Operands& o, bool binary) {
  return !o.dst.idx && !o.src0.idx && !(binary && o.src1.idx) && !PartialOverlap(o.dst, o.src0, o.n * 4) &&
         !(binary && PartialOverlap(o.dst, o.src1, o.n * 4));
}

template <class T>
void Elementwise(ElemOp op, const Operands& o) {
  const bool binary = Binary(op);
  const int64_t n = o.n;
  if constexpr (kFloat<T>) {
    const float s = static_cast<float>(o.scalar);
    // fp32 contiguous operands that do not partly overlap: in place, no copies.
    if (std::is_same_v<T, float> && InPlace(o, binary)) {
      FloatOp(op, reinterpret_cast<const float*>(o.src0.base),
              binary ? reinterpret_cast<const float*>(o.src1.base) : nullptr, s, reinterpret_cast<float*>(o.dst.base),
              n);
      return;
    }
    float* x = Buffer(tls_f[0], n);
    float* y = binary ? Buffer(tls_f[1], n) : nullptr;
    float* r = Buffer(tls_f[2], n);
    Gather<T>(o.src0, n, x);
    if (binary) Gather<T>(o.src1, n, y);
    FloatOp(op, x, y, s, r, n);
    ScatterFloat<T>(o.dst, n, r);
  } else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>) {
    throw std::logic_error("element replay: 64-bit integer arithmetic is interpreted");
  } else {
    const T st = FromDouble<T>(o.scalar);
    if (std::is_same_v<T, int32_t> && InPlace(o, binary)) {
      IntOp<int32_t>(op, reinterpret_cast<const int32_t*>(o.src0.base),
                     binary ? reinterpret_cast<const int32_t*>(o.src1.base) : nullptr, static_cast<int32_t>(st),
                     reinterpret_cast<int32_t*>(o.dst.base), n);
      return;
    }
    int64_t* x = Buffer(tls_i[0], n);
    int64_t* y = binary ? Buffer(tls_i[1], n) : nullptr;
    int64_t* r = Buffer(tls_i[2], n);
    Gather<T>(o.src0, n, x);
    if (binary) Gather<T>(o.src1, n, y);
    IntOp<int64_t>(op, x, y, static_cast<int64_t>(st), r, n);
    // Wrap to T (add / sub / mul of the widened values are exact mod 2^64).
    ScatterInt<T>(o.dst, n, r);
  }
}

// Ascend C's cast with a RoundMode (the `aux` of a Cast): 0 CAST_NONE, 1 RINT, 2 FLOOR, 3 CEIL,
// 4 ROUND (half away from zero), 5 TRUNC, 6 ODD (as RINT). Into integers: rounded to an integer
// (NONE too), NaN 0, saturated; into floats: NONE and RINT convert, the others round to an
// integer first.
double RoundTo(double v, int64_t mode) {
  switch (mode) {
    case 2:
      return std::floor(v);
    case 3:
      return std::ceil(v);
    case 4:
      return std::copysign(std::floor(std::fabs(v) + 0.5), v);
    case 5:
      return std::trunc(v);
    default:
      return std::nearbyint(v);
  }
}

template <class D, class S>
void Cast(const Operands& o, int64_t mode) {
  for (int64_t i = 0; i < o.n; ++i) {
    double v = ToDouble(*o.src0.at<S>(i));
    D out;
    if constexpr (kFloat<D>) {
      if (mode > 1) v = RoundTo(v, mode);
      out = static_cast<D>(v);
    } else {
      v = RoundTo(v, mode);
      constexpr double lo = static_cast<double>(std::numeric_limits<D>::min());
      constexpr double hi = static_cast<double>(std::numeric_limits<D>::max());
      if (v != v)
        out = D(0);
      else if (v <= lo)
        out = std::numeric_limits<D>::min();
      else if (v >= hi)
        out = std::numeric_limits<D>::max();
      else
        out = static_cast<D>(v);
    }
    *o.dst.at<D>(i) = out;
  }
}

template <class T>
void Reduce(ElemOp op, const Operands& o, int64_t group, bool cal_index) {
  const int64_t groups = group > 0 ? o.n / group : 1;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t first = g * group;
    double value = 0;
    int64_t arg = 0;
    if (group > 0) {
      if (op == ElemOp::ReduceSum) {
        if constexpr (kFloat<T>) {
          double s = 0;  // fp32 and 16-bit sums accumulate in double and round once
          for (int64_t i = 0; i < group; ++i) s += ToDouble(*o.src0.at<T>(first + i));
          value = s;
        } else {
          uint64_t s = 0;  // integers wrap
          for (int64_t i = 0; i < group; ++i)
            s += static_cast<uint64_t>(static_cast<int64_t>(*o.src0.at<T>(first + i)));
          value = static_cast<double>(static_cast<T>(s));
        }
      } else {
        const bool is_max = op == ElemOp::ReduceMax;
        value = ToDouble(*o.src0.at<T>(first));
        for (int64_t i = 1; i < group && value == value; ++i) {
          double v = ToDouble(*o.src0.at<T>(first + i));
          if (v != v || (is_max ? v > value : v < value)) value = v, arg = i;
        }
      }
    }
    *o.dst.at<T>(cal_index ? 0 : g) = FromDouble<T>(value);
    if (cal_index) {
      if constexpr (sizeof(T) == 4) {
        int32_t bits = static_cast<int32_t>(arg);
        std::memcpy(o.dst.at<T>(1), &bits, 4);
      } else {
        *o.dst.at<T>(1) = FromDouble<T>(static_cast<double>(arg));
      }
    }
  }
}

template <class T>
void Compare(const Operands& o, int64_t mode, bool with_scalar) {
  auto* out = reinterpret_cast<uint8_t*>(o.dst.base);
  std::memset(out, 0, static_cast<size_t>((o.n + 7) / 8));
  for (int64_t i = 0; i < o.n; ++i) {
    double a = ToDouble(*o.src0.at<T>(i));
    double b = with_scalar ? ToDouble(FromDouble<T>(o.scalar)) : ToDouble(*o.src1.at<T>(i));
    bool r = mode == 0   ? a < b
             : mode == 1 ? a > b
             : mode == 2 ? a == b
             : mode == 3 ? a <= b
             : mode == 4 ? a >= b
                         : a != b;
    if (r) out[i / 8] = static_cast<uint8_t>(out[i / 8] | (1u << (i % 8)));
  }
}

template <class T>
void Select(const Operands& o, const Operand& b) {
  const auto* mask = reinterpret_cast<const uint8_t*>(o.src0.base);
  const T s = FromDouble<T>(o.scalar);
  for (int64_t i = 0; i < o.n; ++i) {
    bool bit = (mask[i / 8] >> (i % 8)) & 1;
    *o.dst.at<T>(i) = bit ? *o.src1.at<T>(i) : (b.base ? *b.at<T>(i) : s);
  }
}

double Arith(int64_t kind, double a, double b) {
  switch (kind) {
    case 0:
      return a + b;
    case 1:
      return a - b;
    case 2:
      return a * b;
    case 3:
      return a / b;
    default:
      return -a;
  }
}

void RunOne(const ElemInstr& in, const ElemStream& s, char* const* mem, std::vector<double>& regs) {
  auto operand = [&](int64_t m, int64_t off, int64_t idx) {
    Operand o;
    if (m >= 0) o.base = mem[m] + off;
    if (idx >= 0) o.idx = s.index_lists[static_cast<size_t>(idx)].data();
    return o;
  };
  Operands o{operand(in.dst_mem, in.dst_off, in.dst_idx), operand(in.src0_mem, in.src0_off, in.src0_idx),
             operand(in.src1_mem, in.src1_off, in.src1_idx), in.count,
             in.sreg >= 0 ? regs.at(static_cast<size_t>(in.sreg)) : in.scalar};
  switch (in.op) {
    case ElemOp::Copy:
      WithType(in.type, [&](auto t) {
        using T = decltype(t);
        if (!o.dst.idx && !o.src0.idx)
          std::memmove(o.dst.base, o.src0.base, static_cast<size_t>(o.n) * sizeof(T));
        else
          for (int64_t i = 0; i < o.n; ++i) *o.dst.at<T>(i) = *o.src0.at<T>(i);
      });
      break;
    case ElemOp::Dup:
      WithType(in.type, [&](auto t) {
        using T = decltype(t);
        const T v = FromDouble<T>(o.scalar);
        for (int64_t i = 0; i < o.n; ++i) *o.dst.at<T>(i) = v;
      });
      break;
    case ElemOp::Cast:
      WithType(in.type,
               [&](auto d) { WithType(in.src_type, [&](auto s) { Cast<decltype(d), decltype(s)>(o, in.aux); }); });
      break;
    case ElemOp::ReduceSum:
    case ElemOp::ReduceMax:
    case ElemOp::ReduceMin:
      WithType(in.type, [&](auto t) { Reduce<decltype(t)>(in.op, o, in.aux, (in.flags & 1) != 0); });
      break;
    case ElemOp::Compare:
      WithType(in.src_type, [&](auto t) { Compare<decltype(t)>(o, in.aux, (in.flags & 1) != 0); });
      break;
    case ElemOp::Select:
      WithType(in.type, [&](auto t) { Select<decltype(t)>(o, operand(in.flags - 1, in.aux, -1)); });
      break;
    case ElemOp::ScalarLoad:
      if (regs.size() <= static_cast<size_t>(in.aux)) regs.resize(static_cast<size_t>(in.aux) + 1);
      regs[static_cast<size_t>(in.aux)] =
          WithType(in.type, [&](auto t) { return ToDouble(*o.src0.at<decltype(t)>(0)); });
      break;
    case ElemOp::ScalarStore:
      WithType(in.type, [&](auto t) { *o.dst.at<decltype(t)>(0) = FromDouble<decltype(t)>(o.scalar); });
      break;
    case ElemOp::ScalarArith: {
      if (regs.size() <= static_cast<size_t>(in.aux)) regs.resize(static_cast<size_t>(in.aux) + 1);
      double a = in.src0_off >= 0 ? regs.at(static_cast<size_t>(in.src0_off)) : in.scalar;
      double b = in.src1_off >= 0 ? regs.at(static_cast<size_t>(in.src1_off)) : in.scalar;
      regs[static_cast<size_t>(in.aux)] = Arith(in.flags, a, b);
      break;
    }
    default:
      WithType(in.type, [&](auto t) { Elementwise<decltype(t)>(in.op, o); });
      break;
  }
}

}  // namespace

void RunElementStream(const ElemStream& stream, char* const* mem, std::vector<double>& regs) {
  for (const ElemInstr& in : stream.instrs) RunOne(in, stream, mem, regs);
}

void RunElementBlocks(const std::vector<ElemStream>& blocks, const std::vector<char*>& gm, int64_t ub_bytes,
                      int workers) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex mu;
  int n = std::max(1, std::min<int>(workers, static_cast<int>(blocks.size())));
  // Each worker takes blocks until none is left; a block is one job of the runtime's pool.
  WorkerPool::Get().Run(n, [&](int) {
    char* ub = WorkerScratch(ub_bytes);
    std::vector<char*> mem(gm);
    mem.push_back(ub);
    std::vector<double> regs;
    for (size_t b; (b = next.fetch_add(1)) < blocks.size();) {
      try {
        std::memset(ub, 0xA5, static_cast<size_t>(ub_bytes));  // the interpreter's garbage
        regs.clear();
        RunElementStream(blocks[b], mem.data(), regs);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace pypto::rt
