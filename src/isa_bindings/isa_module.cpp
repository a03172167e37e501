// pypto._isa: every PTO instruction callable from Python on numpy arrays, through the run-time
// instruction table (pto::dyn), plus the PTO assembly parser / printer / executor. The
// user-facing API (output allocation, defaults, docstrings) is python/pypto/isa/__init__.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <pto/asm/exec.hpp>

#include "isa_entry.hpp"

namespace nb = nanobind;

pypto_isa::Entry pypto_isa::generic_entry() {
  return {[](const pto::dyn::Call& c) { pto::dyn::call(c); },
          [](const pto::as::Module& m, pto::as::Bindings& b) { pto::as::run(m, b); },
          pto::simd::isa_name()};
}

namespace {

// The fastest build this CPU runs.
const pypto_isa::Entry& entry() {
  static const pypto_isa::Entry e = [] {
    const pypto_isa::Entry avx2 = pypto_isa::avx2_entry();
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx2.isa && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
      return avx2;
#endif
    return pypto_isa::generic_entry();
  }();
  return e;
}

using Array = nb::ndarray<nb::numpy, nb::device::cpu>;

// numpy has no bfloat16: uint16 arrays carry bf16 bit patterns here (a DT_UINT16 tile is not
// reachable from numpy through pypto.isa; the tensor level takes uint16 by the parameter's dtype).
pto::DType dtype_of(const Array& a) {
  const nb::dlpack::dtype d = a.dtype();
  using C = nb::dlpack::dtype_code;
  const int bits = d.bits;
  if (d.code == uint8_t(C::Float) && bits == 32) return pto::DType::FP32;
  if (d.code == uint8_t(C::Float) && bits == 16) return pto::DType::FP16;
  if (d.code == uint8_t(C::Bfloat) && bits == 16) return pto::DType::BF16;
  if (d.code == uint8_t(C::Int) && bits == 8) return pto::DType::INT8;
  if (d.code == uint8_t(C::Int) && bits == 16) return pto::DType::INT16;
  if (d.code == uint8_t(C::Int) && bits == 32) return pto::DType::INT32;
  if (d.code == uint8_t(C::Int) && bits == 64) return pto::DType::INT64;
  if (d.code == uint8_t(C::UInt) && bits == 8) return pto::DType::UINT8;
  if (d.code == uint8_t(C::UInt) && bits == 16) return pto::DType::BF16;
  if (d.code == uint8_t(C::UInt) && bits == 32) return pto::DType::UINT32;
  if (d.code == uint8_t(C::UInt) && bits == 64) return pto::DType::UINT64;
  if (d.code == uint8_t(C::Bool)) return pto::DType::BOOL;
  throw pto::Error("unsupported array dtype (code " + std::to_string(d.code) + ", " +
                   std::to_string(bits) + " bits)");
}

// A 2-D array as a tile: rows contiguous, valid region given by Python.
pto::dyn::AnyTile as_tile(Array a, int valid_rows, int valid_cols) {
  PTO_CHECK(a.ndim() == 2, "tiles are 2-D arrays");
  PTO_CHECK(a.stride(1) == 1 || a.shape(1) <= 1, "tile rows must be contiguous");
  const int rows = int(a.shape(0)), cols = int(a.shape(1));
  const int stride = rows > 1 ? int(a.stride(0)) : cols;
  PTO_CHECK(stride >= cols, "tile row stride is smaller than its width");
  return {dtype_of(a), a.data(), rows, cols, stride, valid_rows, valid_cols};
}

// An array of 1 to 5 dims as a global tensor (strides in elements).
pto::dyn::AnyGlobal as_global(Array a) {
  PTO_CHECK(a.ndim() >= 1 && a.ndim() <= 5, "global tensors have 1 to 5 dims");
  pto::dyn::AnyGlobal g{dtype_of(a), a.data(), {1, 1, 1, 1, 1}, {0, 0, 0, 0, 0}};
  const int r = int(a.ndim());
  for (int i = 0; i < r; ++i) {
    g.shape[5 - r + i] = int64_t(a.shape(i));
    g.stride[5 - r + i] = a.stride(i);
  }
  return g;
}

// Operands arrive as tuples: ("tile", array, valid_rows, valid_cols), ("gm", array),
// ("int", value) or ("float", value).
pto::dyn::Arg to_arg(nb::handle h) {
  nb::tuple t = nb::cast<nb::tuple>(h);
  const std::string kind = nb::cast<std::string>(t[0]);
  if (kind == "tile")
    return as_tile(nb::cast<Array>(t[1]), nb::cast<int>(t[2]), nb::cast<int>(t[3]));
  if (kind == "gm") return as_global(nb::cast<Array>(t[1]));
  if (kind == "int") return pto::dyn::Scalar::of_int(nb::cast<int64_t>(t[1]));
  if (kind == "float") return pto::dyn::Scalar::of_float(nb::cast<double>(t[1]));
  throw pto::Error("unknown operand kind '" + kind + "'");
}

void call(const std::string& name, nb::list args, const std::map<std::string, std::string>& attrs) {
  pto::dyn::Call c;
  c.name = name;
  for (nb::handle h : args) c.args.push_back(to_arg(h));
  c.attrs = attrs;
  nb::gil_scoped_release release;  // the arrays are kept alive by the caller
  entry().call(c);
}

// (name, operands, dtypes, form) in the order of the one list (include/pto/isa_list.hpp).
std::vector<std::tuple<std::string, std::string, std::string, std::string>> instructions() {
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> out;
  const auto& reg = pto::dyn::registry();
  for (const pto::isa::Info& i : pto::isa::kInfo) {
    const auto& info = reg.at(i.name);
    out.emplace_back(i.name, info.operands, info.dtypes, pto::isa::form_name(i.form));
  }
  return out;
}

// Runs a .pto module; tensors and scalars are bound by name (with the leading '%').
void run(const std::string& text, nb::dict tensors, nb::dict scalars) {
  pto::as::Bindings b;
  for (auto [k, v] : tensors) {
    Array a = nb::cast<Array>(v);
    pto::as::Tensor t;
    t.dtype = dtype_of(a);
    t.data = a.data();
    for (size_t i = 0; i < a.ndim(); ++i) {
      t.shape.push_back(int64_t(a.shape(i)));
      t.strides.push_back(a.stride(i));
    }
    b.tensors[nb::cast<std::string>(k)] = t;
  }
  for (auto [k, v] : scalars) {
    b.scalars[nb::cast<std::string>(k)] = nb::isinstance<nb::int_>(v)
                                              ? pto::dyn::Scalar::of_int(nb::cast<int64_t>(v))
                                              : pto::dyn::Scalar::of_float(nb::cast<double>(v));
  }
  const pto::as::Module m = pto::as::parse(text);
  nb::gil_scoped_release release;
  entry().run(m, b);
}

}  // namespace

NB_MODULE(_isa, m) {
  m.doc() = "PTO-ISA instructions on numpy arrays (use pypto.isa)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const pto::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("call", &call, nb::arg("name"), nb::arg("args"), nb::arg("attrs"),
        "Runs one instruction: call('TADD', [('tile', dst, vr, vc), ...], {'cmp': 'gt'}).");
  m.def("instructions", &instructions, "(name, operands, dtypes, form) of every instruction, in the order of the ISA list.");
  m.def("run", &run, nb::arg("text"), nb::arg("tensors"), nb::arg("scalars"),
        "Runs a PTO assembly module with tensors / scalars bound by name.");
  m.def("parse_print", [](const std::string& text) { return pto::as::print(pto::as::parse(text)); },
        "The canonical text of a PTO assembly module (parse, then print).");
  m.def("isa", [] { return std::string(entry().isa); },
        "The instruction set of the fast layer in use (avx2 or generic).");
}
