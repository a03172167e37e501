// The host memory's counters (pypto.memory_stats()): live, the peak since a reset, the pool.
#include <gtest/gtest.h>

#include "runtime/host_memory.h"

namespace pypto {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

TEST(HostMemory, CountsLivePeakAndPool) {
  ReleaseHostPool();
  ResetHostPeak();
  const size_t live0 = GetHostMemoryStats().live;
  void* a = AllocHost(4 * kMiB);
  void* b = AllocHost(6 * kMiB);
  HostMemoryStats s = GetHostMemoryStats();
  EXPECT_EQ(s.live, live0 + 10 * kMiB);
  EXPECT_EQ(s.peak, live0 + 10 * kMiB);
  FreeHost(a, 4 * kMiB);  // into the pool: no longer live, still held
  s = GetHostMemoryStats();
  EXPECT_EQ(s.live, live0 + 6 * kMiB);
  EXPECT_EQ(s.peak, live0 + 10 * kMiB);
  EXPECT_EQ(s.pooled, 4 * kMiB);
  EXPECT_EQ(s.held, s.live + s.pooled);
  // The same size again comes from the pool.
  const uint64_t allocs = s.allocs, reuses = s.reuses;
  void* c = AllocHost(4 * kMiB);
  s = GetHostMemoryStats();
  EXPECT_EQ(s.allocs, allocs);
  EXPECT_EQ(s.reuses, reuses + 1);
  EXPECT_EQ(s.pooled, 0u);
  // A reset starts the peak at what is live.
  FreeHost(c, 4 * kMiB);
  FreeHost(b, 6 * kMiB);
  ResetHostPeak();
  s = GetHostMemoryStats();
  EXPECT_EQ(s.live, live0);
  EXPECT_EQ(s.peak, live0);
  EXPECT_EQ(ReleaseHostPool(), 10 * kMiB);
  EXPECT_EQ(GetHostMemoryStats().held, GetHostMemoryStats().live);
}

TEST(HostMemory, CountsBytesAllocatedElsewhere) {
  const size_t live0 = ResetHostPeak().live;
  CountHostBytes(int64_t(3 * kMiB));
  EXPECT_EQ(GetHostMemoryStats().peak, GetHostMemoryStats().live);
  CountHostBytes(-int64_t(3 * kMiB));
  EXPECT_EQ(GetHostMemoryStats().live, live0);
  EXPECT_GE(GetHostMemoryStats().peak, live0 + 3 * kMiB);
}

}  // namespace
}  // namespace pypto
