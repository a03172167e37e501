#include "runtime/access_index.h"

namespace pypto {

namespace {
bool Overlap(const DimVec& alo, const DimVec& ahi, const DimVec& blo, const DimVec& bhi) {
  for (size_t d = 0; d < alo.size(); ++d)
    if (ahi[d] <= blo[d] || bhi[d] <= alo[d]) return false;
  return true;
}
}  // namespace

void AccessIndex::Scan(const Side& s, const Access& a, std::vector<int>& deps) {
  // Entries starting before a.lo[0] - max_extent cannot reach a.
  auto it = s.by_lo.lower_bound(a.lo[0] - s.max_extent + 1);
  for (; it != s.by_lo.end() && it->first < a.hi[0]; ++it)
    if (Overlap(a.lo, a.hi, it->second.lo, it->second.hi)) deps.push_back(it->second.owner);
}

void AccessIndex::Retire(Side& s, const Access& a) {
  std::vector<Entry> rest;  // the parts of overlapped entries outside a
  auto it = s.by_lo.lower_bound(a.lo[0] - s.max_extent + 1);
  while (it != s.by_lo.end() && it->first < a.hi[0]) {
    Entry& e = it->second;
    if (!Overlap(a.lo, a.hi, e.lo, e.hi)) {
      ++it;
      continue;
    }
    // Cut e along each dim in turn: the slabs below and above a's range, then the middle goes on.
    DimVec lo = e.lo, hi = e.hi;
    for (size_t d = 0; d < lo.size(); ++d) {
      if (lo[d] < a.lo[d]) {
        rest.push_back(Entry{lo, hi, e.owner});
        rest.back().hi[d] = a.lo[d];
        lo[d] = a.lo[d];
      }
      if (hi[d] > a.hi[d]) {
        rest.push_back(Entry{lo, hi, e.owner});
        rest.back().lo[d] = a.hi[d];
        hi[d] = a.hi[d];
      }
    }
    it = s.by_lo.erase(it);
  }
  for (auto& e : rest) {
    int64_t key = e.lo[0];
    s.by_lo.emplace(key, std::move(e));
  }
}

void AccessIndex::Conflicts(const Access& a, std::vector<int>& deps) const {
  auto it = allocs_.find(a.alloc);
  if (it == allocs_.end()) return;
  Scan(it->second.writes, a, deps);
  if (a.write) Scan(it->second.reads, a, deps);
}

void AccessIndex::Add(const Access& a, int owner) {
  PerAlloc& p = allocs_[a.alloc];
  if (a.write) {
    Retire(p.reads, a);
    Retire(p.writes, a);
  }
  Side& s = a.write ? p.writes : p.reads;
  s.by_lo.emplace(a.lo[0], Entry{a.lo, a.hi, owner});
  s.max_extent = std::max(s.max_extent, a.hi[0] - a.lo[0]);
}

}  // namespace pypto
