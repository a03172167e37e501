// The tensor windows earlier task groups of a call read and wrote, per allocation, indexed by
// their start along dim 0, so finding the groups a new access depends on costs a logarithmic
// search plus the overlapping entries, not a scan of every earlier access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "runtime/small_vec.h"

namespace pypto {

/// A box [lo, hi) in the coordinates of one allocation.
struct Access {
  int alloc = -1;
  DimVec lo, hi;
  bool write = false;
};

class AccessIndex {
 public:
  /// Appends to `deps` the owners of earlier accesses that conflict with `a` (overlap, and one
  /// of the two writes).
  void Conflicts(const Access& a, std::vector<int>& deps) const;
  /// Records that `owner` makes access `a`. A write retires the parts of the entries it
  /// overlaps (an entry it overlaps partly stays as the boxes outside it): any later access
  /// overlapping those parts overlaps the write, which is ordered after them. Without the cut, a
  /// buffer written in blocks and read whole gathered every read of the call, and each block
  /// write scanned them all (quadratic; PyPTO's gated-delta-rule test).
  void Add(const Access& a, int owner);

 private:
  struct Entry {
    DimVec lo, hi;
    int owner;
  };
  struct Side {
    std::multimap<int64_t, Entry> by_lo;  // keyed by lo[0]
    int64_t max_extent = 0;               // largest hi[0] - lo[0] ever added
  };
  struct PerAlloc {
    Side reads, writes;
  };
  static void Scan(const Side& s, const Access& a, std::vector<int>& deps);
  static void Retire(Side& s, const Access& a);
  std::unordered_map<int, PerAlloc> allocs_;
};

}  // namespace pypto
