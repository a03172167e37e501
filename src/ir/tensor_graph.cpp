#include "ir/tensor_graph.h"

#include <algorithm>
#include <sstream>

#include "ir/op_registry.h"

namespace pypto {

std::set<int> Function::LiveOps() const {
  std::vector<char> read(values.size(), 0);
  // A read of a view or a reshape reads the memory of its base: the op computing it is live.
  auto mark = [&](int v) {
    for (; v >= 0 && !read.at(v);
         v = values[v].kind == ValueKind::View || values[v].kind == ValueKind::Reshape ? values[v].base : -1)
      read[v] = 1;
  };
  std::vector<const OpCall*> ops;
  auto collect = [&](auto&& self, const Region<OpCall>& r) -> void {
    for (auto& e : r.entries) {
      if (e.item) {
        ops.push_back(e.item.get());
        continue;
      }
      if (e.loop->info.read) mark(e.loop->info.read->value);
      self(self, *e.loop->body);
    }
  };
  collect(collect, body);
  std::set<int> live;
  // Backwards in program order; again until nothing changes, for reads across loop iterations.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      const OpCall& c = **it;
      if (live.count(c.id)) continue;
      // A copy into a created tensor nothing reads (the tensor a runtime branch merged a value
      // into when both paths turned out to write the same tensor in place) is dead too.
      const bool into_unread = c.op == "assemble" && c.inputs.size() == 2 &&
                               values.at(MemoryRoot(c.inputs[1])).kind == ValueKind::Created &&
                               !read[MemoryRoot(c.inputs[1])];
      bool needed = (c.output < 0 && !into_unread) || (WritesInPlace(GetOpDef(c.op).kind) && !into_unread) ||
                    (c.output >= 0 && values.at(c.output).kind != ValueKind::Temp) || (c.output >= 0 && read[c.output]);
      if (!needed) continue;
      live.insert(c.id);
      changed = true;
      // An assemble's destination is written, not read: it keeps no earlier write alive.
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (!(c.op == "assemble" && i == 1)) mark(c.inputs[i]);
    }
  }
  return live;
}

const char* ValueKindName(ValueKind k) {
  switch (k) {
    case ValueKind::Input:
      return "input";
    case ValueKind::Output:
      return "output";
    case ValueKind::Created:
      return "tensor";
    case ValueKind::Temp:
      return "temp";
    case ValueKind::View:
      return "view";
    case ValueKind::Reshape:
      return "reshape";
  }
  return "?";
}

static std::string AttrStr(const AttrValue& a) {
  struct V {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      std::ostringstream os;
      os.precision(9);
      os << v;
      return os.str();
    }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<Expr>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
      return s + "]";
    }
    std::string operator()(DataType v) const { return DataTypeName(v); }
  };
  return std::visit(V{}, a);
}

std::vector<Expr> Attrs::exprs(const std::string& k) const {
  auto it = map.find(k);
  PYPTO_CHECK(it != map.end(), "missing attribute '", k, "'");
  if (const auto* ints = std::get_if<std::vector<int64_t>>(&it->second))
    return std::vector<Expr>(ints->begin(), ints->end());
  return get<std::vector<Expr>>(k);
}

std::string Attrs::str() const {
  std::string s;
  for (auto& [k, v] : map) s += (s.empty() ? "" : ", ") + k + "=" + AttrStr(v);
  return s;
}

std::string ValueDecl(const Function& f, const Value& v) {
  std::string s = "%" + v.name + ": " + DataTypeName(v.dtype) + ShapeStr(v.shape);
  if (v.kind == ValueKind::View) s += " = view %" + f.value(v.base).name + ShapeStr(v.offsets);
  if (v.kind == ValueKind::Reshape) s += " = reshape %" + f.value(v.base).name;
  return s;
}

static void PrintOp(const Function& f, const OpCall& op, int indent, std::ostream& os) {
  os << std::string(indent * 2, ' ');
  if (op.output >= 0)
    os << "%" << f.value(op.output).name << ": " << DataTypeName(f.value(op.output).dtype)
       << ShapeStr(f.value(op.output).shape) << " = ";
  os << op.op << "(";
  for (size_t i = 0; i < op.inputs.size(); ++i) os << (i ? ", " : "") << "%" << f.value(op.inputs[i]).name;
  os << ")";
  std::string a = op.attrs.str();
  if (!a.empty()) os << " {" << a << "}";
  if (!op.tile_shape.empty()) os << " tile=" << IntList(op.tile_shape, "[", "]");
  if (!op.label.empty()) os << " label=\"" << op.label << "\"";
  if (op.loc.known()) os << "  # " << op.loc.str();
  os << "\n";
}

std::string PrintTensorGraph(const Function& f) {
  std::ostringstream os;
  os << "tensor_graph @" << f.name << "(";
  for (size_t i = 0; i < f.param_values.size(); ++i) {
    const Value& v = f.value(f.param_values[i]);
    os << (i ? ", " : "") << (v.kind == ValueKind::Output ? "inout " : "") << ValueDecl(f, v);
  }
  os << ")";
  if (!f.returns.empty()) {
    os << " -> (";
    for (size_t i = 0; i < f.returns.size(); ++i) os << (i ? ", " : "") << ValueDecl(f, f.value(f.returns[i]));
    os << ")";
  }
  os << " {\n";
  if (!f.dynamic_vars.empty()) {
    os << "  # dynamic:";
    for (auto& d : f.dynamic_vars) os << " " << d;
    os << "\n";
  }
  for (auto& a : f.assumptions) os << "  # assume " << a.lhs.str() << " == " << a.rhs.str() << " (" << a.what << ")\n";
  for (auto& v : f.values)
    if (v.kind == ValueKind::Created || v.kind == ValueKind::View || v.kind == ValueKind::Reshape ||
        (v.kind == ValueKind::Output &&
         std::find(f.param_values.begin(), f.param_values.end(), v.id) == f.param_values.end()))
      os << "  " << ValueKindName(v.kind) << " " << ValueDecl(f, v) << "\n";
  PrintRegionText(f.body, 1, os, [&](const OpCall& op, int indent, std::ostream& o) { PrintOp(f, op, indent, o); });
  os << "}\n";
  return os.str();
}

}  // namespace pypto
