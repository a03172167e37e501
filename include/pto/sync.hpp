// Synchronization: set_flag / wait_flag / pipe_barrier inside one core, and TPUSH / TPOP tile
// FIFOs between a cube program and a vector program.
//
// On the CPU one thread runs all pipes of a core in program order, so flags carry no data; they
// are checked instead: a wait_flag with no matching set_flag would hang the NPU, and here it
// throws. TPUSH / TPOP really move tiles between threads.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "pto/ref/common.hpp"
#include "pto/types.hpp"

namespace pto {

// The NPU pipes: scalar, vector, cube, the three memory-transfer engines, fixpipe.
enum class Pipe { S, V, M, MTE1, MTE2, MTE3, FIX, ALL };
inline constexpr int kNumPipes = 8;
inline constexpr int kNumEvents = 16;

// Per-core (per-thread) counts of flags set and not yet waited for.
class FlagState {
 public:
  void set(Pipe src, Pipe dst, int event) { ++slot(src, dst, event); }
  void wait(Pipe src, Pipe dst, int event) {
    int& n = slot(src, dst, event);
    PTO_CHECK(n > 0, "wait_flag(" + std::to_string(int(src)) + ", " + std::to_string(int(dst)) +
                         ", " + std::to_string(event) + ") has no matching set_flag (deadlock)");
    --n;
  }
  // Flags set and never waited for (harmless on the NPU only if the program resets them).
  int pending() const {
    int total = 0;
    for (int c : count_) total += c;
    return total;
  }
  void reset() { std::fill(std::begin(count_), std::end(count_), 0); }

 private:
  int& slot(Pipe src, Pipe dst, int event) {
    PTO_CHECK(event >= 0 && event < kNumEvents, "event id out of range");
    return count_[(int(src) * kNumPipes + int(dst)) * kNumEvents + event];
  }
  int count_[kNumPipes * kNumPipes * kNumEvents] = {};
};

inline FlagState& core_flags() {
  thread_local FlagState state;
  return state;
}
inline void set_flag(Pipe src, Pipe dst, int event) { core_flags().set(src, dst, event); }
inline void wait_flag(Pipe src, Pipe dst, int event) { core_flags().wait(src, dst, event); }
// All earlier instructions of the pipe complete before later ones start: always true here.
inline void pipe_barrier(Pipe) {}

// A bounded FIFO of tiles (the cube <-> vector channel). Each slot holds up to max_rows x
// max_cols elements plus the pushed tile's valid dims.
template <class T>
class TileFifo {
 public:
  TileFifo(int depth, int max_rows, int max_cols)
      : depth_(depth), max_rows_(max_rows), max_cols_(max_cols),
        data_(new T[size_t(depth) * max_rows * max_cols]), dims_(depth) {
    PTO_CHECK(depth > 0 && max_rows > 0 && max_cols > 0, "bad TileFifo shape");
  }

  // Copies src's valid region into the next slot; blocks while the FIFO is full.
  void push(TileRef<T> src) {
    ref::detail::check_tile(src, "src");
    PTO_CHECK(src.valid_rows <= max_rows_ && src.valid_cols <= max_cols_,
              "tile larger than the FIFO slot");
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return size_ < depth_ || closed_; });
    PTO_CHECK(!closed_, "TPUSH on a closed FIFO");
    const int slot = (head_ + size_) % depth_;
    T* out = data_.get() + size_t(slot) * max_rows_ * max_cols_;
    for (int r = 0; r < src.valid_rows; ++r)
      std::copy_n(src.row(r), src.valid_cols, out + size_t(r) * max_cols_);
    dims_[slot] = {src.valid_rows, src.valid_cols};
    ++size_;
    not_empty_.notify_one();
  }

  // Copies the oldest tile into dst, whose valid region must have the pushed tile's shape;
  // blocks while the FIFO is empty. Returns false if the FIFO was closed and drained.
  bool pop(TileRef<T> dst) {
    ref::detail::check_tile(dst, "dst");
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return size_ > 0 || closed_; });
    if (size_ == 0) return false;
    const auto [rows, cols] = dims_[head_];
    PTO_CHECK(dst.valid_rows == rows && dst.valid_cols == cols,
              "TPOP dst valid region " + std::to_string(dst.valid_rows) + "x" +
                  std::to_string(dst.valid_cols) + " != pushed " + std::to_string(rows) + "x" +
                  std::to_string(cols));
    const T* in = data_.get() + size_t(head_) * max_rows_ * max_cols_;
    for (int r = 0; r < rows; ++r) std::copy_n(in + size_t(r) * max_cols_, cols, dst.row(r));
    head_ = (head_ + 1) % depth_;
    --size_;
    not_full_.notify_one();
    return true;
  }

  // Producer is done: pending tiles can still be popped, then pop returns false.
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  struct Dims {
    int rows = 0, cols = 0;
  };
  const int depth_, max_rows_, max_cols_;
  std::unique_ptr<T[]> data_;  // not std::vector: vector<bool> has no data()
  std::vector<Dims> dims_;
  int head_ = 0, size_ = 0;
  bool closed_ = false;
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
};

template <class T>
void TPUSH(TileFifo<T>& fifo, TileRef<T> src) {
  fifo.push(src);
}
template <class T>
bool TPOP(TileRef<T> dst, TileFifo<T>& fifo) {
  return fifo.pop(dst);
}

}  // namespace pto
