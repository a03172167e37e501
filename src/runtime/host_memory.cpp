#include "runtime/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

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
      return p;
    }
  }
  void* p = std::aligned_alloc(size >= kHuge ? kHuge : 64, size);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (size >= kHuge) madvise(p, size, MADV_HUGEPAGE);
#endif
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
      return;
    }
  }
  std::free(p);
}

}  // namespace pypto
