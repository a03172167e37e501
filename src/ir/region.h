// The loop structure shared by every IR level: a region is an ordered list of entries, each
// either an item of that level (a tensor op, a tile op, a kernel launch) or a runtime loop
// (`pypto.loop`) whose body is a region of the same level. The body of a loop is compiled
// once; the loop index is a symbolic variable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/symbolic.h"

namespace pypto {

struct LoopInfo {
  std::string var;   // the index variable's name (a symbolic Var)
  std::string name;  // the user's loop name, e.g. "LOOP_L0_bIdx"
  Expr start, stop, step;
  SourceLoc loc;
};

template <class Item>
struct Region;

template <class Item>
struct LoopRegion {
  LoopInfo info;
  std::shared_ptr<Region<Item>> body = std::make_shared<Region<Item>>();
};

template <class Item>
struct RegionEntry {
  // Exactly one of the two is set.
  std::shared_ptr<Item> item;
  std::shared_ptr<LoopRegion<Item>> loop;
};

template <class Item>
struct Region {
  std::vector<RegionEntry<Item>> entries;

  void Add(Item it) { entries.push_back({std::make_shared<Item>(std::move(it)), nullptr}); }
  LoopRegion<Item>& AddLoop(const LoopInfo& info) {
    auto l = std::make_shared<LoopRegion<Item>>();
    l->info = info;
    entries.push_back({nullptr, l});
    return *l;
  }
  /// Calls f(item) on every item in program order, loops included.
  template <class F>
  void ForEach(F&& f) const {
    for (auto& e : entries) {
      if (e.item) f(*e.item);
      else e.loop->body->ForEach(f);
    }
  }
};

}  // namespace pypto
