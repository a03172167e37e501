// JSON printers of the four IR levels. Every region is a list of entries; an entry is either
// an item object (with "kind") or {"kind": "loop", "var", "name", "start", "stop", "step",
// "loc", "body": [...]}. Values, kernels and source locations appear with every field the
// text printers show, so a tool never needs to parse the text form.
#include "ir/json_printer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace pypto {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  return out + "\"";
}

namespace {

// A minimal streaming writer: objects and arrays insert their own commas.
class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(const std::string& k) {
    Comma();
    os_ << JsonString(k) << ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& Str(const std::string& s) { return Raw(JsonString(s)); }
  JsonWriter& Int(int64_t v) { return Raw(std::to_string(v)); }
  JsonWriter& Bool(bool b) { return Raw(b ? "true" : "false"); }
  JsonWriter& Null() { return Raw("null"); }
  JsonWriter& Double(double v) {
    if (!std::isfinite(v)) return Str(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    // A JSON number without '.' or an exponent reads back as an integer: -0.0 would be 0.
    if (!std::strpbrk(buf, ".e")) std::strcat(buf, ".0");
    return Raw(buf);
  }
  JsonWriter& Expr(const pypto::Expr& e) { return e.defined() ? Str(e.str()) : Null(); }
  JsonWriter& Exprs(const std::vector<pypto::Expr>& v) {
    BeginArray();
    for (auto& e : v) Expr(e);
    return EndArray();
  }
  JsonWriter& Ints(const std::vector<int64_t>& v) {
    BeginArray();
    for (auto x : v) Int(x);
    return EndArray();
  }
  JsonWriter& Ints(const std::vector<int>& v) {
    BeginArray();
    for (auto x : v) Int(x);
    return EndArray();
  }
  JsonWriter& Loc(const SourceLoc& l) {
    if (!l.known()) return Null();
    BeginObject();
    Key("file").Str(l.file).Key("line").Int(l.line).Key("column").Int(l.column).Key("text").Str(l.text);
    return EndObject();
  }
  std::string str() const { return os_.str() + "\n"; }

 private:
  JsonWriter& Raw(const std::string& s) {
    Comma();
    os_ << s;
    return *this;
  }
  void Comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) os_ << ',';
      first_.back() = false;
    }
  }
  JsonWriter& Open(char c) {
    Comma();
    os_ << c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char c) {
    os_ << c;
    first_.pop_back();
    return *this;
  }
  std::ostringstream os_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

void AttrJson(JsonWriter& w, const AttrValue& a) {
  struct V {
    JsonWriter& w;
    void operator()(int64_t v) const { w.Int(v); }
    void operator()(double v) const { w.Double(v); }
    void operator()(const std::string& v) const { w.Str(v); }
    void operator()(const std::vector<int64_t>& v) const { w.Ints(v); }
    void operator()(const std::vector<pypto::Expr>& v) const { w.Exprs(v); }
    void operator()(DataType v) const { w.Str(DataTypeName(v)); }
  };
  std::visit(V{w}, a);
}

void AttrsJson(JsonWriter& w, const Attrs& attrs) {
  w.BeginObject();
  for (auto& [k, v] : attrs.map) {
    w.Key(k);
    AttrJson(w, v);
  }
  w.EndObject();
}

void FunctionHeader(JsonWriter& w, const char* level, const Function& f) {
  w.Key("level").Str(level).Key("function").Str(f.name);
  w.Key("params").BeginArray();
  for (size_t i = 0; i < f.param_values.size(); ++i)
    w.BeginObject()
        .Key("name")
        .Str(i < f.params.size() ? f.params[i] : "")
        .Key("value")
        .Int(f.param_values[i])
        .EndObject();
  w.EndArray();
  w.Key("inputs").Ints(f.inputs).Key("outputs").Ints(f.outputs).Key("returns").Ints(f.returns);
  w.Key("dynamic_vars").BeginArray();
  for (auto& d : f.dynamic_vars) w.Str(d);
  w.EndArray();
  w.Key("values").BeginArray();
  for (auto& v : f.values) {
    w.BeginObject().Key("id").Int(v.id).Key("name").Str(v.name).Key("dtype").Str(DataTypeName(v.dtype));
    w.Key("shape").Exprs(v.shape).Key("kind").Str(ValueKindName(v.kind));
    if (v.kind == ValueKind::View) w.Key("base").Int(v.base).Key("offsets").Exprs(v.offsets);
    if (v.kind == ValueKind::Reshape) w.Key("base").Int(v.base);
    w.Key("materialized").Bool(v.materialized).Key("loc").Loc(v.loc).EndObject();
  }
  w.EndArray();
}

template <class Item, class F>
void RegionJson(JsonWriter& w, const Region<Item>& r, F&& item) {
  w.BeginArray();
  for (auto& e : r.entries) {
    if (e.loop) {
      const LoopInfo& l = e.loop->info;
      w.BeginObject().Key("kind").Str("loop").Key("var").Str(l.var).Key("name").Str(l.name);
      w.Key("start").Expr(l.start).Key("stop").Expr(l.stop).Key("step").Expr(l.step).Key("loc").Loc(l.loc);
      if (l.read) {  // a scalar read: `var` = tensor[index], the body runs once
        w.Key("read").BeginObject().Key("value").Int(l.read->value).Key("tensor").Str(l.read->tensor);
        w.Key("index").BeginArray();
        for (const Expr& x : l.read->index) w.Expr(x);
        w.EndArray().EndObject();
      }
      w.Key("body");
      RegionJson(w, *e.loop->body, item);
      w.EndObject();
    } else {
      w.BeginObject();
      item(*e.item);
      w.EndObject();
    }
  }
  w.EndArray();
}

void InstrsJson(JsonWriter& w, const std::vector<Instr>& body) {
  w.BeginArray();
  for (auto& in : body) {
    w.BeginObject().Key("opcode").Str(OpcodeName(in.opcode));
    if (in.opcode == Opcode::LOOP) {
      w.Key("var").Str(in.var.empty() ? kReduceVar : in.var).Key("trip").Expr(in.trip).Key("body");
      InstrsJson(w, in.body);
    } else {
      w.Key("dst").Int(in.dst).Key("srcs").Ints(in.srcs);
      if (in.param >= 0) w.Key("param").Int(in.param).Key("coord").Exprs(in.coord);
      if (in.opcode == Opcode::TEXTRACT) w.Key("at").Exprs(in.coord).Key("transpose").Bool(in.transpose);
      if (in.scalar_expr.defined())
        w.Key("scalar_expr").Expr(in.scalar_expr);
      else if (in.has_scalar)
        w.Key("scalar").Double(in.scalar);
      if (in.scalar_int) w.Key("scalar_int").Int(*in.scalar_int);
      if (in.scalar_first) w.Key("scalar_first").Bool(true);
      if (in.atomic_add) w.Key("atomic_add").Bool(true);
      if (in.opcode == Opcode::TCVT) w.Key("dtype").Str(DataTypeName(in.dtype));
      if (in.opcode == Opcode::TCVT) w.Key("round").Str(RoundModeName(in.round));
      if (in.opcode == Opcode::TCMP || in.opcode == Opcode::TCMPS || in.opcode == Opcode::TWAIT)
        w.Key("cmp").Str(CmpModeName(in.cmp));
      if (in.opcode == Opcode::TNOTIFY || in.opcode == Opcode::TWAIT) w.Key("notify").Str(NotifyOpName(in.notify));
      if (in.axis >= 0) w.Key("axis").Int(in.axis);
    }
    w.Key("loc").Loc(in.loc).EndObject();
  }
  w.EndArray();
}

void KernelsJson(JsonWriter& w, const std::vector<Kernel>& kernels) {
  w.Key("kernels").BeginArray();
  for (auto& k : kernels) {
    w.BeginObject().Key("id").Int(k.id).Key("name").Str(k.name).Key("core").Str(CoreKindName(k.core));
    w.Key("grid").Exprs(k.grid).Key("ub_bytes").Int(k.ub_bytes).Key("reason").Str(k.reason);
    if (k.fence) w.Key("fence").Bool(true);
    w.Key("tile_ops").Ints(k.tile_ops);
    w.Key("params").BeginArray();
    for (auto& p : k.params)
      w.BeginObject()
          .Key("value")
          .Int(p.value)
          .Key("read")
          .Bool(p.read)
          .Key("write")
          .Bool(p.write)
          .Key("dim_map")
          .Ints(p.dim_map)
          .EndObject();
    w.EndArray();
    w.Key("bufs").BeginArray();
    for (auto& b : k.bufs)
      w.BeginObject()
          .Key("id")
          .Int(b.id)
          .Key("name")
          .Str(b.name)
          .Key("loc")
          .Str(MemSpaceName(b.space))
          .Key("dtype")
          .Str(DataTypeName(b.dtype))
          .Key("shape")
          .Ints(b.shape)
          .Key("valid")
          .Exprs(b.valid)
          .Key("value")
          .Int(b.value)
          .Key("offset")
          .Int(b.offset)
          .Key("bytes")
          .Int(b.bytes())
          .EndObject();
    w.EndArray();
    w.Key("body");
    InstrsJson(w, k.body);
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string TensorGraphJson(const Function& f) {
  JsonWriter w;
  w.BeginObject();
  FunctionHeader(w, "tensor_graph", f);
  w.Key("body");
  RegionJson(w, f.body, [&](const OpCall& op) {
    w.Key("kind").Str("op").Key("id").Int(op.id).Key("op").Str(op.op).Key("inputs").Ints(op.inputs);
    w.Key("output").Int(op.output).Key("attrs");
    AttrsJson(w, op.attrs);
    w.Key("tile_shape").Ints(op.tile_shape).Key("loc").Loc(op.loc);
    if (!op.label.empty()) w.Key("label").Str(op.label);
  });
  w.EndObject();
  return w.str();
}

std::string TileGraphJson(const TileGraph& g) {
  JsonWriter w;
  w.BeginObject();
  FunctionHeader(w, "tile_graph", g.fn);
  w.Key("body");
  RegionJson(w, g.body, [&](const TileOp& t) {
    w.Key("kind").Str("tile_op").Key("id").Int(t.id).Key("tensor_op").Int(t.tensor_op).Key("op").Str(t.op);
    w.Key("inputs").BeginArray();
    for (auto& in : t.inputs) {
      w.BeginObject().Key("value").Int(in.value).Key("broadcast").BeginArray();
      for (bool b : in.broadcast) w.Bool(b);
      w.EndArray().EndObject();
    }
    w.EndArray();
    w.Key("output").Int(t.output).Key("attrs");
    AttrsJson(w, t.attrs);
    w.Key("extent").Exprs(t.extent).Key("tile").Ints(t.tile).Key("tile_reason").Str(t.tile_reason);
    if (t.tile.size() == t.extent.size()) w.Key("grid").Exprs(t.counts());
    w.Key("reduce_axis").Int(t.reduce_axis).Key("keepdim").Bool(t.keepdim).Key("loc").Loc(t.loc);
    if (t.is_matmul()) w.Key("k_extent").Expr(t.k_extent).Key("cube").Ints(t.cube);
  });
  w.Key("dead_ops").BeginArray();  // tensor op ids not expanded: their results are never read
  for (int id : g.dead_ops) w.Int(id);
  w.EndArray();
  w.EndObject();
  return w.str();
}

std::string BlockGraphJson(const BlockGraph& g) {
  JsonWriter w;
  w.BeginObject();
  FunctionHeader(w, "block_graph", g.fn);
  KernelsJson(w, g.kernels);
  w.Key("body");
  RegionJson(w, g.body,
             [&](const Launch& l) { w.Key("kind").Str("launch").Key("id").Int(l.id).Key("kernel").Int(l.kernel); });
  w.EndObject();
  return w.str();
}

std::string ExecGraphJson(const ExecGraph& g) {
  JsonWriter w;
  w.BeginObject();
  FunctionHeader(w, "exec_graph", g.fn);
  KernelsJson(w, g.kernels);
  w.Key("num_launches").Int(g.num_launches).Key("body");
  RegionJson(w, g.body, [&](const LaunchNode& n) {
    w.Key("kind").Str("launch").Key("id").Int(n.id).Key("kernel").Int(n.kernel);
    w.Key("reads").Ints(n.reads).Key("writes").Ints(n.writes).Key("deps").Ints(n.deps);
    w.Key("pointwise_after").Ints(n.pointwise_after);
  });
  w.Key("single_buffer").Ints(std::vector<int>(g.single_buffer.begin(), g.single_buffer.end()));
  w.EndObject();
  return w.str();
}

}  // namespace pypto
