#include "frontend/row_locality.h"

#include <set>

#include "ir/op_registry.h"

namespace pypto {

std::string FirstRowMixingOp(const Function& f, const std::vector<int>& row_values) {
  for (const auto& e : f.body.entries)
    if (e.loop) return "a loop";
  std::set<int> rows(row_values.begin(), row_values.end());
  std::string mixing;
  // A value that reads a row-aligned value: itself, or a view / reshape of its whole extent.
  auto row_aligned = [&](int id) -> bool {
    const Value& v = f.value(id);
    if (rows.count(id)) return true;
    if ((v.kind == ValueKind::View || v.kind == ValueKind::Reshape) && v.base >= 0 && rows.count(v.base)) {
      const Value& b = f.value(v.base);
      bool whole = v.kind == ValueKind::View && b.rank() == v.rank();
      for (int d = 0; whole && d < v.rank(); ++d)
        whole = v.shape[d].same_as(b.shape[d]) && (v.offsets.empty() || v.offsets[d].as_const() == 0);
      if (!whole && mixing.empty()) mixing = "a slice or reshape of %" + b.name;
      return true;
    }
    return false;
  };
  f.body.ForEach([&](const OpCall& c) {
    if (!mixing.empty()) return;
    const OpDef& def = GetOpDef(c.op);
    bool any = false;
    for (int in : c.inputs) any = row_aligned(in) || any;
    if (!mixing.empty() || !any) return;
    const Value& x = f.value(c.inputs[0]);
    auto along_rows = [&] {
      if (!c.attrs.has("dim")) return false;
      int64_t d = c.attrs.get<int64_t>("dim");
      return d < 0 ? d != -1 : d != x.rank() - 1;
    };
    switch (def.kind) {
      case OpKind::Reduce:
      case OpKind::ArgReduce:
      case OpKind::Scan:
      case OpKind::Gather:
      case OpKind::Scatter:
        if (along_rows() || def.kind == OpKind::Scatter) mixing = "pypto." + c.op + " across rows";
        break;
      case OpKind::Signal:
        mixing = "a signal (pypto." + c.op + ")";
        break;
      case OpKind::Permute:
        mixing = "pypto." + c.op;
        break;
      case OpKind::Matmul:
        if (row_aligned(c.inputs[1]) || c.attrs.get<int64_t>("a_trans") != 0)
          mixing = "pypto.matmul with a tile as its right operand (or transposed)";
        break;
      default:
        break;
    }
    if (mixing.empty() && c.output >= 0) rows.insert(c.output);
  });
  return mixing;
}

}  // namespace pypto
