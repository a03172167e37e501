#include "runtime/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace pypto {

namespace {

constexpr size_t kHuge = size_t(2) << 20;
constexpr size_t kPooled = size_t(64) << 10;    // blocks from this size on are kept for reuse
constexpr size_t kPoolLimit = size_t(1) << 30;  // bytes kept for reuse at most
constexpr size_t kPerSize = 16;                 // blocks kept per size at most (a call's workspaces)

size_t Rounded(size_t bytes) {
  if (bytes >= kHuge) return (bytes + kHuge - 1) / kHuge * kHuge;
  return (bytes + 63) / 64 * 64;
}

struct Pool {
  std::mutex mu;
  std::multimap<size_t, void*> free;
  size_t held = 0;
};
Pool& GetPool() {
  static Pool* p = new Pool;  // never destroyed: blocks may be freed during interpreter exit
  return *p;
}

// The counters of HostMemoryStats: relaxed atomics (a few per allocation), so reading them never
// takes the pool's lock and a block allocated while a reader looks is counted a moment later.
struct Counters {
  std::atomic<int64_t> live{0}, peak{0}, pooled{0}, held{0}, peak_held{0};
  std::atomic<uint64_t> allocs{0}, reuses{0};
};
Counters& GetCounters() {
  static Counters* c = new Counters;  // never destroyed, as the pool
  return *c;
}

void RaiseTo(std::atomic<int64_t>& peak, int64_t v) {
  int64_t cur = peak.load(std::memory_order_relaxed);
  while (v > cur && !peak.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// `live` and `held` move by `dl` and `dh` bytes; the peaks follow them up.
void Count(int64_t dl, int64_t dh) {
  Counters& c = GetCounters();
  if (dl) {
    int64_t live = c.live.fetch_add(dl, std::memory_order_relaxed) + dl;
    if (dl > 0) RaiseTo(c.peak, live);
  }
  if (dh) {
    int64_t held = c.held.fetch_add(dh, std::memory_order_relaxed) + dh;
    if (dh > 0) RaiseTo(c.peak_held, held);
  }
}

}  // namespace

// The machine's physical memory: a block larger than that can never be filled (with overcommit
// the allocation may succeed and the process be killed when the pages are touched).
size_t PhysicalBytes() {
  static const size_t b = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : ~size_t(0);
  }();
  return b;
}

void* AllocHost(size_t bytes) {
  size_t size = Rounded(bytes == 0 ? 1 : bytes);
  if (size > PhysicalBytes()) throw std::bad_alloc();
  if (size >= kPooled) {
    Pool& pool = GetPool();
    std::lock_guard<std::mutex> lock(pool.mu);
    auto it = pool.free.find(size);
    if (it != pool.free.end()) {
      void* p = it->second;
      pool.free.erase(it);
      pool.held -= size;
      GetCounters().pooled.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
      GetCounters().reuses.fetch_add(1, std::memory_order_relaxed);
      Count(static_cast<int64_t>(size), 0);
      return p;
    }
  }
  void* p = std::aligned_alloc(size >= kHuge ? kHuge : 64, size);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (size >= kHuge) madvise(p, size, MADV_HUGEPAGE);
#endif
  GetCounters().allocs.fetch_add(1, std::memory_order_relaxed);
  Count(static_cast<int64_t>(size), static_cast<int64_t>(size));
  return p;
}

void* AllocHostZeroed(size_t bytes) {
  void* p = AllocHost(bytes);
  std::memset(p, 0, bytes == 0 ? 1 : bytes);
  return p;
}

size_t ReleaseHostPool() {
  Pool& pool = GetPool();
  std::lock_guard<std::mutex> lock(pool.mu);
  size_t released = pool.held;
  for (auto& [size, p] : pool.free) std::free(p);
  pool.free.clear();
  pool.held = 0;
  GetCounters().pooled.fetch_sub(static_cast<int64_t>(released), std::memory_order_relaxed);
  Count(0, -static_cast<int64_t>(released));
  return released;
}

void FreeHost(void* p, size_t bytes) {
  if (!p) return;
  size_t size = Rounded(bytes == 0 ? 1 : bytes);
  if (size >= kPooled) {
    Pool& pool = GetPool();
    std::lock_guard<std::mutex> lock(pool.mu);
    if (pool.held + size <= kPoolLimit && pool.free.count(size) < kPerSize) {
      pool.free.emplace(size, p);
      pool.held += size;
      GetCounters().pooled.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
      Count(-static_cast<int64_t>(size), 0);
      return;
    }
  }
  std::free(p);
  Count(-static_cast<int64_t>(size), -static_cast<int64_t>(size));
}

HostMemoryStats GetHostMemoryStats() {
  Counters& c = GetCounters();
  auto u = [](const std::atomic<int64_t>& a) { return static_cast<size_t>(std::max<int64_t>(0, a.load())); };
  HostMemoryStats s;
  s.live = u(c.live);
  s.peak = u(c.peak);
  s.pooled = u(c.pooled);
  s.held = u(c.held);
  s.peak_held = u(c.peak_held);
  s.allocs = c.allocs.load();
  s.reuses = c.reuses.load();
  return s;
}

HostMemoryStats ResetHostPeak() {
  HostMemoryStats before = GetHostMemoryStats();
  Counters& c = GetCounters();
  c.peak.store(c.live.load());
  c.peak_held.store(c.held.load());
  // A block allocated between the two loads above is still in the new peak.
  RaiseTo(c.peak, c.live.load());
  RaiseTo(c.peak_held, c.held.load());
  return before;
}

void CountHostBytes(int64_t delta) { Count(delta, delta); }

}  // namespace pypto
