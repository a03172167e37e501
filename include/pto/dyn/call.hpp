// Type-erased operands for calling PTO instructions by name at run time (the assembler's
// executor, interpreters and the Python bindings know dtypes only at run time).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "pto/elem.hpp"
#include "pto/sync.hpp"
#include "pto/types.hpp"

namespace pto::dyn {

// A tile whose element type is a run-time DType.
struct AnyTile {
  DType dtype;
  void* data;
  int rows, cols, stride, valid_rows, valid_cols;

  template <class T>
  TileRef<T> as() const {
    PTO_CHECK(dtype_of<T>() == dtype, "tile dtype mismatch");
    return {static_cast<T*>(data), rows, cols, stride, valid_rows, valid_cols};
  }
};
template <class T>
AnyTile any(TileRef<T> t) {
  return {dtype_of<T>(), t.data, t.rows, t.cols, t.stride, t.valid_rows, t.valid_cols};
}

// A global-memory view whose element type is a run-time DType.
struct AnyGlobal {
  DType dtype;
  void* data;
  int64_t shape[5];
  int64_t stride[5];

  template <class T>
  GlobalRef<T> as() const {
    PTO_CHECK(dtype_of<T>() == dtype, "global tensor dtype mismatch");
    GlobalRef<T> g{static_cast<T*>(data), {}, {}};
    for (int i = 0; i < 5; ++i) g.shape[i] = shape[i], g.stride[i] = stride[i];
    return g;
  }
};

// A scalar operand: an integer (kept exact) or a floating value.
struct Scalar {
  bool is_int = false;
  int64_t i = 0;
  double f = 0;

  static Scalar of_int(int64_t v) { return {true, v, double(v)}; }
  static Scalar of_float(double v) { return {false, int64_t(v), v}; }
  template <class T>
  T as() const {
    if constexpr (is_float_v<T>) return elem::from_double<T>(is_int ? double(i) : f);
    else if constexpr (std::is_same_v<T, bool>) return is_int ? i != 0 : f != 0;
    else return is_int ? T(i) : elem::convert<T>(f, RoundMode::TRUNC);
  }
};

// A TileFifo<T> for a run-time T (the channel of TPUSH / TPOP).
struct AnyFifo {
  DType dtype;
  void* fifo;  // TileFifo<T>*
  template <class T>
  TileFifo<T>& as() const {
    PTO_CHECK(dtype_of<T>() == dtype, "fifo dtype mismatch");
    return *static_cast<TileFifo<T>*>(fifo);
  }
};

using Arg = std::variant<AnyTile, AnyGlobal, Scalar, AnyFifo>;

// Keyword attributes (cmp = gt, round = floor, atomic = add, upper = 1, descending = 1).
using Attrs = std::map<std::string, std::string>;

// One instruction call: positional operands plus attributes.
struct Call {
  std::string name;
  std::vector<Arg> args;
  Attrs attrs;

  void arity(size_t n) const {
    PTO_CHECK(args.size() == n, name + " takes " + std::to_string(n) + " operands, got " +
                                    std::to_string(args.size()));
  }
  template <class X>
  const X& get(size_t i, const char* what) const {
    PTO_CHECK(i < args.size(), name + ": missing operand " + std::to_string(i));
    const X* x = std::get_if<X>(&args[i]);
    PTO_CHECK(x != nullptr, name + ": operand " + std::to_string(i) + " must be " + what);
    return *x;
  }
  const AnyTile& tile(size_t i) const { return get<AnyTile>(i, "a tile"); }
  DType dt(size_t i) const { return tile(i).dtype; }
  template <class T>
  TileRef<T> t(size_t i) const {
    PTO_CHECK(tile(i).dtype == dtype_of<T>(),
              name + ": operand " + std::to_string(i) + " must be " + dtype_name(dtype_of<T>()) +
                  ", is " + dtype_name(tile(i).dtype));
    return tile(i).as<T>();
  }
  template <class T>
  GlobalRef<T> g(size_t i) const {
    const AnyGlobal& x = get<AnyGlobal>(i, "a global tensor");
    PTO_CHECK(x.dtype == dtype_of<T>(), name + ": global tensor dtype mismatch");
    return x.as<T>();
  }
  DType gdt(size_t i) const { return get<AnyGlobal>(i, "a global tensor").dtype; }
  template <class T>
  T scalar(size_t i) const {
    return get<Scalar>(i, "a scalar").as<T>();
  }
  int64_t integer(size_t i) const {
    const Scalar& s = get<Scalar>(i, "an integer");
    PTO_CHECK(s.is_int, name + ": operand " + std::to_string(i) + " must be an integer");
    return s.i;
  }
  const AnyFifo& fifo(size_t i) const { return get<AnyFifo>(i, "a fifo"); }
  std::string attr(const std::string& key, const std::string& dflt) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? dflt : it->second;
  }
};

// Spellings shared by the assembler and the bindings.
inline const char* short_name(DType d) { return dtype_short_name(d); }
inline DType parse_dtype(const std::string& s) {
  for (DType d : kAllDTypes)
    if (s == short_name(d) || s == dtype_name(d)) return d;
  throw Error("unknown dtype '" + s + "'");
}
inline CmpMode parse_cmp(const std::string& s) {
  static const std::map<std::string, CmpMode> m = {{"eq", CmpMode::EQ}, {"ne", CmpMode::NE},
                                                   {"lt", CmpMode::LT}, {"le", CmpMode::LE},
                                                   {"gt", CmpMode::GT}, {"ge", CmpMode::GE}};
  auto it = m.find(s);
  PTO_CHECK(it != m.end(), "unknown compare mode '" + s + "'");
  return it->second;
}
inline RoundMode parse_round(const std::string& s) {
  static const std::map<std::string, RoundMode> m = {
      {"rint", RoundMode::RINT}, {"round", RoundMode::ROUND}, {"floor", RoundMode::FLOOR},
      {"ceil", RoundMode::CEIL}, {"trunc", RoundMode::TRUNC}};
  auto it = m.find(s);
  PTO_CHECK(it != m.end(), "unknown round mode '" + s + "'");
  return it->second;
}

}  // namespace pto::dyn
