// Left / Right packings shared by the tasks of one launch. A matmul's grid points in one row of
// output blocks read the same A windows (one per step of K), those in one column the same B
// windows; packed per point, a 2048^3 matmul in 256 x 256 blocks packs each operand 8 times over
// (128 MiB of packing for bf16). Shared, each window is packed once, by the first task that needs
// it, and read by the others; a task that needs it while it is being packed packs its own copy
// rather than wait (the packer may be preempted: never spin on another thread). The table lives
// in the launch's PyptoShared slot and is freed when its last task ends. Past a budget of bytes
// (all launches together) a task packs into its own buffer as before.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "pypto/cube_pack_right.hpp"
#include "pypto/kernel_abi.h"

namespace pypto_kernel {

class SharedPacks {
 public:
  /// What identifies a packed window within a launch: Left or Right and the element type
  /// (PackKind), the window's first element, its strides, valid extents and (Left) row stride.
  using Key = std::tuple<int, const void*, int64_t, int64_t, int64_t, int64_t, int64_t>;
  struct Entry {
    void* buf = nullptr;
    std::atomic<int> ready{0};  // 1 once packed
    int min_exp = 0;            // bf16: Bf16PackInfo's
  };

  /// The table of a launch, made by the first caller.
  static SharedPacks* Of(PyptoShared* s) {
    void* t = __atomic_load_n(&s->table, __ATOMIC_ACQUIRE);
    if (t) return static_cast<SharedPacks*>(t);
    auto* mine = new SharedPacks(s);
    void* expected = nullptr;
    if (__atomic_compare_exchange_n(&s->table, &expected, static_cast<void*>(mine), false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      s->release = &SharedPacks::Release;
      return mine;
    }
    delete mine;
    return static_cast<SharedPacks*>(expected);
  }
  static void Release(void* t) { delete static_cast<SharedPacks*>(t); }

  explicit SharedPacks(const PyptoShared* s) : alloc_(s->alloc), free_(s->free) {}
  SharedPacks(const SharedPacks&) = delete;
  SharedPacks& operator=(const SharedPacks&) = delete;
  ~SharedPacks() {
    for (auto& [p, bytes] : blocks_) {
      if (free_)
        free_(p, static_cast<size_t>(bytes));
      else
        std::free(p);
      Budget().fetch_sub(bytes, std::memory_order_relaxed);
    }
  }

  /// The entry for `key` and whether the caller is to pack it (then it calls Done). Returns
  /// nullptr when the budget has no room for `bytes` more.
  Entry* Find(const Key& key, int64_t bytes, bool& pack) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      pack = false;
      return &it->second;
    }
    void* buf = Take((bytes + 63) / 64 * 64);
    if (!buf) return nullptr;
    Entry& e = entries_[key];
    e.buf = buf;
    pack = true;
    return &e;
  }
  static void Done(Entry* e) { e->ready.store(1, std::memory_order_release); }
  static bool Ready(const Entry* e) { return e->ready.load(std::memory_order_acquire) != 0; }

 private:
  static constexpr int64_t kBudgetBytes = int64_t(512) << 20;  // all launches together
  static constexpr int64_t kChunk = int64_t(4) << 20;          // packings share blocks of up to this size
  static constexpr int64_t kFirstChunk = int64_t(256) << 10;   // a launch's first block
  static std::atomic<int64_t>& Budget() {
    static std::atomic<int64_t> bytes{0};
    return bytes;
  }
  // `bytes` (a multiple of 64) from the current block, or a new one (the runtime's host memory:
  // 2 MiB pages, kept mapped from call to call); nullptr past the budget. Blocks double from
  // kFirstChunk to kChunk (powers of two: whole pages), so a small matmul's packings take about
  // their size, not 4 MiB. (Packings are carved, never given a block of their exact size: kernels
  // read a little past a packing, into the rest of its block.)
  void* Take(int64_t bytes) {
    if (used_ > 0 && bytes <= cur_ - used_) {
      void* p = static_cast<char*>(blocks_.back().first) + used_;
      used_ += bytes;
      return p;
    }
    int64_t chunk = cur_ == 0 ? kFirstChunk : std::min(kChunk, 2 * cur_);
    while (chunk < bytes && chunk < kChunk) chunk *= 2;
    const int64_t size = bytes > kChunk ? bytes : chunk;
    if (Budget().fetch_add(size, std::memory_order_relaxed) + size > kBudgetBytes) {
      Budget().fetch_sub(size, std::memory_order_relaxed);
      return nullptr;
    }
    void* p = alloc_ ? alloc_(static_cast<size_t>(size)) : std::aligned_alloc(64, static_cast<size_t>(size));
    if (!p) {
      Budget().fetch_sub(size, std::memory_order_relaxed);
      return nullptr;
    }
    if (bytes > kChunk) {  // a block of its own, before the current one (which stays current)
      blocks_.insert(blocks_.empty() ? blocks_.end() : blocks_.end() - 1, {p, size});
      return p;
    }
    blocks_.push_back({p, size});
    cur_ = size;
    used_ = bytes;
    return p;
  }

  void* (*alloc_)(size_t);
  void (*free_)(void*, size_t);
  std::mutex mu_;
  std::map<Key, Entry> entries_;                   // (node-based: entries do not move)
  std::vector<std::pair<void*, int64_t>> blocks_;  // the last is the current block, `used_` bytes of it taken
  int64_t used_ = 0;
  int64_t cur_ = 0;  // the current block's size (0: none yet)
};

/// The first field of a packing's key: Left (0) or Right (1) and the element type (a bitcast
/// view may read the same bytes as another type).
template <class In>
constexpr int PackKind(int side) {
  const int type = std::is_same_v<In, float>           ? 1
                   : std::is_same_v<In, pto::bfloat16> ? 2
                   : std::is_same_v<In, int8_t>        ? 3
                                                       : 4 + static_cast<int>(sizeof(In));
  return side * 16 + type;
}

/// Left packed into the launch's shared table (or, without room, into `own`): the buffer to read.
template <class In>
inline const CubeT<In>* PackLeftShared(PyptoShared* shared, CubeT<In>* own, int64_t ldl, const In* base, int64_t ms,
                                       int64_t ks, int64_t vm, int64_t vk) {
  using CT = CubeT<In>;
  bool pack = false;
  SharedPacks::Entry* e = SharedPacks::Of(shared)->Find({PackKind<In>(0), base, ms, ks, vm, vk, ldl},
                                                        ArenaBytes<CT>((vm + kRowSlack) * ldl), pack);
  if (!e || (!pack && !SharedPacks::Ready(e))) {  // no room, or another task is packing it now
    PackLeft<In>(own, ldl, base, ms, ks, vm, vk);
    return own;
  }
  CT* buf = static_cast<CT*>(e->buf);
  if (pack) {
    PackLeft<In>(buf, ldl, base, ms, ks, vm, vk);
#if PYPTO_CUBE_BF16_PAIRS
    if constexpr (std::is_same_v<CT, pto::bfloat16>) e->min_exp = Bf16PackMinExp(buf);
#endif
    SharedPacks::Done(e);
  } else {
#if PYPTO_CUBE_BF16_PAIRS
    if constexpr (std::is_same_v<CT, pto::bfloat16>) NoteBf16Pack(buf, e->min_exp);
#endif
  }
  return buf;
}

/// Right packed into the launch's shared table (or, without room, into `own`).
template <class In>
inline const CubeT<In>* PackRightShared(PyptoShared* shared, CubeT<In>* own, const In* base, int64_t ks, int64_t ns,
                                        int64_t vk, int64_t vn) {
  using CT = CubeT<In>;
  bool pack = false;
  SharedPacks::Entry* e = SharedPacks::Of(shared)->Find({PackKind<In>(1), base, ks, ns, vk, vn, 0},
                                                        ArenaBytes<CT>(RightElems<In>(vk, vn)), pack);
  if (!e || (!pack && !SharedPacks::Ready(e))) {  // no room, or another task is packing it now
    PackRight<In>(own, base, ks, ns, vk, vn);
    return own;
  }
  CT* buf = static_cast<CT*>(e->buf);
  if (pack) {
    PackRight<In>(buf, base, ks, ns, vk, vn);
#if PYPTO_CUBE_BF16_PAIRS
    if constexpr (std::is_same_v<CT, pto::bfloat16>) e->min_exp = Bf16PackMinExp(buf);
#endif
    SharedPacks::Done(e);
  } else {
#if PYPTO_CUBE_BF16_PAIRS
    if constexpr (std::is_same_v<CT, pto::bfloat16>) NoteBf16Pack(buf, e->min_exp);
#endif
  }
  return buf;
}

}  // namespace pypto_kernel
