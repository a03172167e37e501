// Level 0: the tensor graph, as recorded from the user's program. Ops act on whole (global
// memory) tensors with symbolic shapes; the recorder infers shapes as it records, so errors
// point at the user's line.
#pragma once

#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/error.h"
#include "ir/region.h"
#include "ir/symbolic.h"

namespace pypto {

enum class ValueKind : uint8_t {
  Input,    // a parameter read by the function
  Output,   // a parameter written in place, or a returned tensor
  Created,  // pypto.tensor(...) inside the function: global memory owned by the call
  Temp,     // the result of an op; lives on chip unless a pass materializes it
  View,     // a window of another tensor (slicing, assemble target)
  Reshape,  // the same dense memory as `base` (a tensor or a workspace) with another shape
};

const char* ValueKindName(ValueKind k);

struct Value {
  int id = -1;
  std::string name;
  DataType dtype = DataType::FP32;
  std::vector<Expr> shape;
  ValueKind kind = ValueKind::Temp;
  // View: the root tensor (never itself a View) and the offsets of the window in it.
  // Reshape: the value whose memory it reads with its own shape (never a View or a Reshape).
  int base = -1;
  std::vector<Expr> offsets;
  // Temp: set by Partition when the value must live in global memory (a workspace),
  // because a later kernel reads it.
  bool materialized = false;
  SourceLoc loc;

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_storage() const { return kind == ValueKind::Input || kind == ValueKind::Output || kind == ValueKind::Created; }
};

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<Expr>, DataType>;

struct Attrs {
  std::map<std::string, AttrValue> map;

  bool has(const std::string& k) const { return map.count(k) > 0; }
  template <class T>
  const T& get(const std::string& k) const {
    auto it = map.find(k);
    PYPTO_CHECK(it != map.end(), "missing attribute '", k, "'");
    const T* p = std::get_if<T>(&it->second);
    PYPTO_CHECK(p, "attribute '", k, "' has another type");
    return *p;
  }
  template <class T>
  void set(const std::string& k, T v) { map[k] = AttrValue(std::move(v)); }
  /// A list attribute of dims: ints or symbolic expressions.
  std::vector<Expr> exprs(const std::string& k) const;
  std::string str() const;
};

/// One op of the tensor graph. `assemble` has no output: it writes into inputs[1].
struct OpCall {
  int id = -1;
  std::string op;
  std::vector<int> inputs;
  int output = -1;
  Attrs attrs;
  std::vector<int64_t> tile_shape;  // the vec tile shape in force when the op was recorded
  std::string label;                // PyPTO's semantic label in force (set_semantic_label), for the dumps
  SourceLoc loc;
};

/// A fact about dynamic dims the program relies on, checked when a call binds its parameters:
/// `out[:] = x` with x [x_dim0, 8] and out [out_dim0, 8] needs x_dim0 == out_dim0.
struct DimAssumption {
  Expr lhs, rhs;
  std::string what;  // what needs it, for the error: "the value assigned to %out[...]"
  SourceLoc loc;
};

struct Function {
  std::string name;
  std::vector<Value> values;
  std::vector<int> inputs;   // Input values in parameter order
  std::vector<int> outputs;  // Output values: in-place parameters first, then returned ones
  std::vector<std::string> params;  // parameter names in order (inputs and in-place outputs)
  std::vector<int> param_values;    // the value of each parameter
  std::vector<int> returns;         // Output values returned, in order
  std::vector<std::string> dynamic_vars;  // symbolic dims bound from input shapes at call time
  std::vector<DimAssumption> assumptions;  // checked at call time, once dims are bound
  Region<OpCall> body;

  Value& value(int id) { return values.at(id); }
  const Value& value(int id) const { return values.at(id); }
  /// The value whose memory `id` denotes: itself, or the base of a view or a reshape.
  int Root(int id) const {
    const Value& v = values.at(id);
    return v.kind == ValueKind::View || v.kind == ValueKind::Reshape ? v.base : id;
  }
  /// The value that owns the memory `id` reads: Root, followed through a view of a reshape.
  int MemoryRoot(int id) const {
    int r = Root(id);
    return r == id ? id : MemoryRoot(r);
  }
  /// The ids of the ops whose work can reach memory the caller sees: an op that writes in place
  /// (assemble, scatter), one whose result is not an intermediate (a returned tensor, a view),
  /// and every op computing what such an op, or a scalar read, reads. The others are dead: their
  /// results are never read (`pypto.topk(x, k)[1]` needs no values), so they are not expanded.
  std::set<int> LiveOps() const;
  int AddValue(Value v) {
    v.id = static_cast<int>(values.size());
    values.push_back(std::move(v));
    return values.back().id;
  }
};

/// Text form of the tensor graph.
std::string PrintTensorGraph(const Function& f);
std::string ValueDecl(const Function& f, const Value& v);

}  // namespace pypto
