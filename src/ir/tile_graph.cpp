#include "ir/tile_graph.h"

#include <algorithm>
#include <sstream>

namespace pypto {

std::vector<Expr> TileOp::counts() const {
  std::vector<Expr> c;
  for (size_t d = 0; d < extent.size(); ++d) c.push_back(CeilDiv(extent[d], Expr(tile[d])));
  return c;
}

std::vector<int64_t> TileOp::output_tile() const {
  std::vector<int64_t> t;
  for (size_t d = 0; d < tile.size(); ++d) {
    if (static_cast<int>(d) == reduce_axis) {
      if (keepdim) t.push_back(axis_out);
    } else {
      t.push_back(tile[d]);
    }
  }
  return t;
}

std::vector<int64_t> TileOp::input_tile(size_t i) const {
  std::vector<int64_t> t = tile;
  if (is_matmul()) {  // the L1 tiles: A [m1, k1] and B [k1, n1], transposed as stored
    size_t R = t.size();
    bool trans = attrs.get<int64_t>(i == 0 ? "a_trans" : "b_trans") != 0;
    int64_t rows = i == 0 ? cube[1] : cube[3], cols = i == 0 ? cube[3] : cube[5];
    t[R - 2] = trans ? cols : rows;
    t[R - 1] = trans ? rows : cols;
    return t;
  }
  for (size_t d = 0; d < t.size(); ++d) {
    if (inputs[i].broadcast[d]) t[d] = 1;
    if (d < inputs[i].whole.size() && inputs[i].whole[d] > 0) t[d] = inputs[i].whole[d];
  }
  return t;
}

static void PrintTileOp(const TileGraph& g, const TileOp& t, int indent, std::ostream& os) {
  std::string pad(indent * 2, ' ');
  const Value& out = g.fn.value(t.output);
  os << pad << "tile_op#" << t.id << " %" << out.name << ": " << DataTypeName(out.dtype) << ShapeStr(out.shape) << " = "
     << t.op << "(";
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    os << (i ? ", " : "") << "%" << g.fn.value(t.inputs[i].value).name;
    bool any = false;
    for (bool b : t.inputs[i].broadcast) any = any || b;
    if (any) {
      os << "<bcast:";
      for (size_t d = 0; d < t.inputs[i].broadcast.size(); ++d)
        if (t.inputs[i].broadcast[d]) os << d;
      os << ">";
    }
  }
  os << ")";
  std::string a = t.attrs.str();
  if (!a.empty()) os << " {" << a << "}";
  os << "\n"
     << pad << "    over " << ShapeStr(t.extent) << " tile=" << IntList(t.tile, "[", "]")
     << " grid=" << ShapeStr(t.counts());
  if (t.reduce_axis >= 0) os << " reduce_axis=" << t.reduce_axis;
  if (t.is_matmul())
    os << " K=" << t.k_extent.str() << " cube m=[" << t.cube[0] << ", " << t.cube[1] << "] k=[" << t.cube[2] << ", "
       << t.cube[3] << "] n=[" << t.cube[4] << ", " << t.cube[5] << "]";
  os << "  # tile: " << t.tile_reason;
  if (t.loc.known()) os << "; " << t.loc.str();
  os << "\n";
}

std::string PrintTileGraph(const TileGraph& g) {
  std::ostringstream os;
  os << "tile_graph @" << g.fn.name << " {\n";
  PrintRegionText(g.body, 1, os, [&](const TileOp& t, int indent, std::ostream& o) { PrintTileOp(g, t, indent, o); });
  if (!g.dead_ops.empty()) {
    os << "  # not computed, their results are never read:\n";
    g.fn.body.ForEach([&](const OpCall& c) {
      if (std::find(g.dead_ops.begin(), g.dead_ops.end(), c.id) == g.dead_ops.end()) return;
      if (c.output >= 0)
        os << "  #   %" << g.fn.value(c.output).name << " = pypto." << c.op;
      else  // a copy into a tensor nothing reads
        os << "  #   pypto." << c.op << " into %" << g.fn.value(c.inputs.back()).name;
      if (c.loc.known()) os << "; " << c.loc.str();
      os << "\n";
    });
  }
  os << "}\n";
  return os.str();
}

}  // namespace pypto
