// The loop structure shared by every IR level: a region is an ordered list of entries, each
// either an item of that level (a tensor op, a tile op, a kernel launch) or a runtime loop
// (`pypto.loop`) whose body is a region of the same level. The body of a loop is compiled
// once; the loop index is a symbolic variable.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/symbolic.h"

namespace pypto {

/// One element of an integer input tensor read as a symbolic scalar (PyPTO's `seq_lens[b]`):
/// the control program reads it when it gets there, so it can bound loops and place windows.
struct ScalarRead {
  int value = -1;            // the tensor: an input parameter, or a view of one
  std::string tensor;        // its name, for the dumps and errors
  std::vector<Expr> index;   // the element, one index per dim of `value`
};

struct LoopInfo {
  std::string var;   // the index variable's name (a symbolic Var)
  std::string name;  // the user's loop name, e.g. "LOOP_L0_bIdx"
  Expr start, stop, step;
  SourceLoc loc;
  // Set for a binding, not a loop: the body runs once with `var` = that element (start, stop
  // and step are 0, 1, 1, so every level counts one trip). Its body is the rest of the region
  // the read was made in, so the symbol is in scope wherever the user's Python name is.
  std::optional<ScalarRead> read;
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

/// Prints a region as text: each loop as `loop i in range(a, b, s) "name" {` ... `}` around its
/// body, each item with print_item(item, indent, os). The printers of every level use it.
template <class Item, class F>
void PrintRegionText(const Region<Item>& r, int indent, std::ostream& os, F&& print_item,
                     const std::string& loop_note = "") {
  std::string pad(indent * 2, ' ');
  for (auto& e : r.entries) {
    if (e.item) {
      print_item(*e.item, indent, os);
      continue;
    }
    const LoopInfo& l = e.loop->info;
    if (l.read) {
      os << pad << "let " << l.var << " = %" << l.read->tensor << "[";
      for (size_t i = 0; i < l.read->index.size(); ++i) os << (i ? ", " : "") << l.read->index[i].str();
      os << "] {\n";
    } else {
      os << pad << "loop " << l.var << " in range(" << l.start.str() << ", " << l.stop.str() << ", "
         << l.step.str() << ") \"" << l.name << "\" {" << loop_note << "\n";
    }
    PrintRegionText(*e.loop->body, indent + 1, os, print_item, loop_note);
    os << pad << "}\n";
  }
}

}  // namespace pypto
