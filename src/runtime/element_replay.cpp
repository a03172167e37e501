#include "runtime/element_replay.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace pypto::rt {
namespace {

template <typename T>
void Binary(ElemOp op, T* d, const T* a, const T* b, int64_t n) {
  switch (op) {
    case ElemOp::Add:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(a[i] + b[i]);
      break;
    case ElemOp::Sub:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(a[i] - b[i]);
      break;
    case ElemOp::Mul:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(a[i] * b[i]);
      break;
    case ElemOp::Div:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(a[i] / b[i]);
      break;
    // numpy's maximum / minimum: NaN wins.
    case ElemOp::Max:
      for (int64_t i = 0; i < n; ++i) d[i] = (a[i] != a[i] || a[i] > b[i]) ? a[i] : b[i];
      break;
    case ElemOp::Min:
      for (int64_t i = 0; i < n; ++i) d[i] = (a[i] != a[i] || a[i] < b[i]) ? a[i] : b[i];
      break;
    default:
      break;
  }
}

template <typename T>
void Unary(ElemOp op, T* d, const T* a, T s, int64_t n) {
  switch (op) {
    case ElemOp::Dup:
      for (int64_t i = 0; i < n; ++i) d[i] = s;
      break;
    case ElemOp::AddS:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(a[i] + s);
      break;
    case ElemOp::MulS:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(a[i] * s);
      break;
    case ElemOp::MaxS:
      for (int64_t i = 0; i < n; ++i) d[i] = (a[i] != a[i] || a[i] > s) ? a[i] : s;
      break;
    case ElemOp::MinS:
      for (int64_t i = 0; i < n; ++i) d[i] = (a[i] != a[i] || a[i] < s) ? a[i] : s;
      break;
    case ElemOp::Abs:
      for (int64_t i = 0; i < n; ++i) d[i] = a[i] < T(0) ? static_cast<T>(-a[i]) : (a[i] == T(0) ? T(0) : a[i]);
      break;
    case ElemOp::Relu:
      for (int64_t i = 0; i < n; ++i) d[i] = a[i] > T(0) ? a[i] : T(0);
      break;
    case ElemOp::Sqrt:
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<T>(std::sqrt(static_cast<float>(a[i])));
      break;
    default:
      break;
  }
}

// 16-bit floats compute in fp32 and round once, as the interpreter does.
void Half(ElemOp op, _Float16* d, const _Float16* a, const _Float16* b, double s, int64_t n, bool binary) {
  float fs = static_cast<float>(static_cast<_Float16>(s));
  for (int64_t i0 = 0; i0 < n; i0 += 256) {
    int64_t m = std::min<int64_t>(256, n - i0);
    float x[256], y[256], r[256];
    for (int64_t i = 0; i < m; ++i) x[i] = a ? static_cast<float>(a[i0 + i]) : 0.f;
    if (binary) {
      for (int64_t i = 0; i < m; ++i) y[i] = static_cast<float>(b[i0 + i]);
      Binary<float>(op, r, x, y, m);
    } else {
      Unary<float>(op, r, x, fs, m);
    }
    for (int64_t i = 0; i < m; ++i) d[i0 + i] = static_cast<_Float16>(r[i]);
  }
}

void RunOne(const ElemInstr& in, char* const* mem) {
  char* d = mem[in.dst_mem] + in.dst_off;
  const char* a = in.src0_mem >= 0 ? mem[in.src0_mem] + in.src0_off : nullptr;
  const char* b = in.src1_mem >= 0 ? mem[in.src1_mem] + in.src1_off : nullptr;
  if (in.op == ElemOp::Copy) {
    std::memmove(d, a, static_cast<size_t>(in.count));
    return;
  }
  bool binary = in.op >= ElemOp::Add && in.op <= ElemOp::Min;
  switch (in.type) {
    case ElemType::F32:
      if (binary)
        Binary<float>(in.op, reinterpret_cast<float*>(d), reinterpret_cast<const float*>(a),
                      reinterpret_cast<const float*>(b), in.count);
      else
        Unary<float>(in.op, reinterpret_cast<float*>(d), reinterpret_cast<const float*>(a),
                     static_cast<float>(in.scalar), in.count);
      break;
    case ElemType::I32:
      // Wrapping, as numpy: signed overflow is undefined in C++, so add / sub / mul run unsigned.
      if (in.op == ElemOp::Add || in.op == ElemOp::Sub || in.op == ElemOp::Mul)
        Binary<uint32_t>(in.op, reinterpret_cast<uint32_t*>(d), reinterpret_cast<const uint32_t*>(a),
                         reinterpret_cast<const uint32_t*>(b), in.count);
      else if (in.op == ElemOp::AddS || in.op == ElemOp::MulS)
        Unary<uint32_t>(in.op, reinterpret_cast<uint32_t*>(d), reinterpret_cast<const uint32_t*>(a),
                        static_cast<uint32_t>(static_cast<int32_t>(in.scalar)), in.count);
      else if (binary)
        Binary<int32_t>(in.op, reinterpret_cast<int32_t*>(d), reinterpret_cast<const int32_t*>(a),
                        reinterpret_cast<const int32_t*>(b), in.count);
      else
        Unary<int32_t>(in.op, reinterpret_cast<int32_t*>(d), reinterpret_cast<const int32_t*>(a),
                       static_cast<int32_t>(in.scalar), in.count);
      break;
    case ElemType::F16:
      Half(in.op, reinterpret_cast<_Float16*>(d), reinterpret_cast<const _Float16*>(a),
           reinterpret_cast<const _Float16*>(b), in.scalar, in.count, binary);
      break;
  }
}

}  // namespace

void RunElementBlocks(const std::vector<std::vector<ElemInstr>>& blocks, const std::vector<char*>& gm, int64_t ub_bytes,
                      int workers) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    auto ub = std::make_unique<char[]>(static_cast<size_t>(ub_bytes));
    std::vector<char*> mem(gm);
    mem.push_back(ub.get());
    for (size_t b; (b = next.fetch_add(1)) < blocks.size();) {
      try {
        for (const ElemInstr& in : blocks[b]) RunOne(in, mem.data());
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  int n = std::max(1, std::min<int>(workers, static_cast<int>(blocks.size())));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace pypto::rt
