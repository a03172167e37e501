// The strides of a reshape that moves no element: a strided tensor (a slice of a cache, its last
// dim cut) viewed in another shape, where each new dim falls within a run of old dims that are
// contiguous with each other. numpy's rule (_attempt_nocopy_reshape). Lets the runtime reshape a
// strided argument in place instead of the frontend staging a dense copy of it.
#pragma once

#include <cstdint>
#include <vector>

namespace pypto::rt {

/// Strides for `shape` over the elements of `old_shape` laid out with `old_strides` (in
/// elements), or an empty vector when no strides give the same elements in the same order.
/// The element counts must be equal (the caller checks).
template <class Dims>
std::vector<int64_t> ReshapeStrides(const Dims& old_shape, const Dims& old_strides, const std::vector<int64_t>& shape) {
  std::vector<int64_t> od, os;  // the old dims of size > 1: a dim of size 1 has no stride to keep
  for (size_t i = 0; i < old_shape.size(); ++i) {
    if (old_shape[i] == 0) return {};  // empty: the caller's dense strides are as good
    if (old_shape[i] != 1) {
      od.push_back(old_shape[i]);
      os.push_back(old_strides[i]);
    }
  }
  std::vector<int64_t> ns(shape.size(), 1);
  size_t oi = 0, ni = 0;
  while (oi < od.size() && ni < shape.size()) {
    // The smallest runs [oi, oj) of old dims and [ni, nj) of new ones holding the same count.
    size_t oj = oi + 1, nj = ni + 1;
    int64_t op = od[oi], np = shape[ni];
    while (op != np) {
      if (np < op) {
        if (nj >= shape.size()) return {};
        np *= shape[nj++];
      } else {
        if (oj >= od.size()) return {};
        op *= od[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k)  // the old run must be one contiguous stretch
      if (os[k] != od[k + 1] * os[k + 1]) return {};
    ns[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * shape[k];
    oi = oj;
    ni = nj;
  }
  // New dims of size 1 after the last run: any stride; the last one's keeps the layout plain.
  for (; ni < shape.size(); ++ni) ns[ni] = ni > 0 ? ns[ni - 1] : 1;
  return ns;
}

}  // namespace pypto::rt
