// nanobind glue: the Python package is a thin layer over these bindings. Keep this file in
// step with python/pypto/_core.pyi.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings/bind_common.h"
#include "bindings/dist_bindings.h"
#include "bindings/sim_bindings.h"
#include "ir/json_printer.h"
#include "ir/op_registry.h"
#include "passes/pipeline.h"
#include "runtime/cpu_isa.h"
#include "runtime/element_replay.h"
#include "runtime/host_memory.h"
#include "runtime/kernel_cache.h"
#include "runtime/runtime.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pypto {
namespace {

DataType FromDlpack(nb::dlpack::dtype dt) {
  using nb::dlpack::dtype_code;
  auto code = static_cast<dtype_code>(dt.code);
  if (code == dtype_code::Float && dt.bits == 32) return DataType::FP32;
  if (code == dtype_code::Float && dt.bits == 16) return DataType::FP16;
  if (code == dtype_code::Bfloat && dt.bits == 16) return DataType::BF16;
  if (code == dtype_code::Int && dt.bits == 8) return DataType::INT8;
  if (code == dtype_code::Int && dt.bits == 16) return DataType::INT16;
  if (code == dtype_code::Int && dt.bits == 32) return DataType::INT32;
  if (code == dtype_code::Int && dt.bits == 64) return DataType::INT64;
  if (code == dtype_code::UInt && dt.bits == 8) return DataType::UINT8;
  if (code == dtype_code::UInt && dt.bits == 16) return DataType::UINT16;
  if (code == dtype_code::UInt && dt.bits == 32) return DataType::UINT32;
  if (code == dtype_code::UInt && dt.bits == 64) return DataType::UINT64;
  if (code == dtype_code::Bool) return DataType::BOOL;
  throw UserError("unsupported array dtype (code " + std::to_string(dt.code) + ", " + std::to_string(dt.bits) +
                  " bits)");
}

nb::dlpack::dtype ToDlpack(DataType t) {
  using nb::dlpack::dtype_code;
  switch (t) {
    case DataType::FP32:
      return nb::dtype<float>();
    case DataType::FP16:
      return {static_cast<uint8_t>(dtype_code::Float), 16, 1};
    case DataType::BF16:
      return {static_cast<uint8_t>(dtype_code::Bfloat), 16, 1};
    case DataType::INT8:
      return nb::dtype<int8_t>();
    case DataType::INT16:
      return nb::dtype<int16_t>();
    case DataType::INT32:
      return nb::dtype<int32_t>();
    case DataType::INT64:
      return nb::dtype<int64_t>();
    case DataType::UINT8:
      return nb::dtype<uint8_t>();
    case DataType::BOOL:
      return nb::dtype<bool>();
    case DataType::UINT16:
      return nb::dtype<uint16_t>();
    case DataType::UINT32:
      return nb::dtype<uint32_t>();
    case DataType::UINT64:
      return nb::dtype<uint64_t>();
    case DataType::FP8E4M3:
    case DataType::FP8E5M2:
    case DataType::FP8E8M0:
    case DataType::FP4E2M1X2:
    case DataType::HF8:
    case DataType::FP4E1M2X2:
      return nb::dtype<uint8_t>();  // the MX formats' bytes (torch views them as float8)
  }
  return nb::dtype<float>();
}

using Array = nb::ndarray<nb::numpy, nb::device::cpu>;
// Arguments may be read-only (np.broadcast_to, a read-only mmap of weights): the Python front
// end refuses a read-only array for a parameter the program writes.
using ArgArray = nb::ndarray<nb::ro, nb::numpy, nb::device::cpu>;

HostTensor ToHost(const ArgArray& a) {
  HostTensor t;
  t.data = const_cast<void*>(a.data());
  t.dtype = FromDlpack(a.dtype());
  for (size_t i = 0; i < a.ndim(); ++i) {
    t.shape.push_back(static_cast<int64_t>(a.shape(i)));
    t.strides.push_back(static_cast<int64_t>(a.stride(i)));
  }
  return t;
}

// A SymbolicScalar operator: with an int or another symbolic scalar, the expression; with a
// float the TypeError says what is expected; with anything else (a pypto Tensor) NotImplemented,
// so Python asks the other operand (`i * 5 - x` is the tensor's reflected subtraction).
template <class F>
auto SymArith(F f) {
  return [f](const Expr& a, nb::handle b) -> nb::object {
    if (!nb::isinstance<Expr>(b) && !nb::isinstance<nb::int_>(b) && !nb::isinstance<nb::float_>(b))
      return nb::borrow(Py_NotImplemented);
    return nb::cast(f(a, ToExpr(b)));
  };
}

nb::object CompareSym(const Expr& a, const Expr& b, CmpOp m);

// A SymbolicScalar comparison: with an int or another symbolic scalar, the 0/1 expression (a
// constant when both are known); with anything else NotImplemented (a pypto Tensor compares itself,
// other objects are unequal), as SymArith.
auto SymCompare(CmpOp m) {
  return [m](const Expr& a, nb::handle b) -> nb::object {
    bool ordering = m != CmpOp::EQ && m != CmpOp::NE;  // a float is unequal, but not orderable
    if (!nb::isinstance<Expr>(b) && !nb::isinstance<nb::int_>(b) && !(ordering && nb::isinstance<nb::float_>(b)))
      return nb::borrow(Py_NotImplemented);
    return CompareSym(a, ToExpr(b), m);
  };
}

// A comparison of symbolic integers as a 0/1 expression (a predicate for pypto's runtime
// branches), or a Python bool when both sides are known.
// PyPTO's comparisons give a SymbolicScalar even when both values are known (`(a < 6).concrete()`);
// `if` and `assert` read it through __bool__.
nb::object CompareSym(const Expr& a, const Expr& b, CmpOp m) { return nb::cast(Compare(a, b, m)); }

}  // namespace

SourceLoc MakeLoc(const nb::handle& h) {
  SourceLoc loc;
  if (h.is_none()) return loc;
  auto t = nb::cast<nb::tuple>(h);
  loc.file = nb::cast<std::string>(t[0]);
  loc.line = nb::cast<int>(t[1]);
  loc.column = nb::cast<int>(t[2]);
  loc.text = nb::cast<std::string>(t[3]);
  return loc;
}

Expr ToExpr(const nb::handle& h) {
  if (nb::isinstance<Expr>(h)) return nb::cast<Expr>(h);
  if (nb::isinstance<nb::bool_>(h)) throw nb::type_error("a bool is not a shape or index value");
  if (nb::isinstance<nb::int_>(h)) return Expr(nb::cast<int64_t>(h));
  throw nb::type_error(
      ("expected an int or a SymbolicScalar, got " + nb::cast<std::string>(nb::str(h.type().attr("__name__"))))
          .c_str());
}

std::vector<Expr> ToExprs(const nb::handle& seq) {
  std::vector<Expr> out;
  for (auto h : seq) out.push_back(ToExpr(h));
  return out;
}

// Op attributes from a Python dict: bool/int, float, str, DataType, a list of ints, or a list of
// dims (ints and SymbolicScalars).
Attrs ToAttrs(const nb::dict& d) {
  Attrs a;
  for (auto [k, v] : d) {
    std::string key = nb::cast<std::string>(k);
    if (nb::isinstance<nb::bool_>(v) || nb::isinstance<nb::int_>(v)) {
      a.set(key, nb::cast<int64_t>(v));
    } else if (nb::isinstance<nb::float_>(v)) {
      a.set(key, nb::cast<double>(v));
    } else if (nb::isinstance<nb::str>(v)) {
      a.set(key, nb::cast<std::string>(v));
    } else if (nb::isinstance<DataType>(v)) {
      a.set(key, nb::cast<DataType>(v));
    } else if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
      bool ints = true;
      for (auto h : v) ints = ints && nb::isinstance<nb::int_>(h);
      if (ints) {
        std::vector<int64_t> xs;
        for (auto h : v) xs.push_back(nb::cast<int64_t>(h));
        a.set(key, std::move(xs));
      } else {
        a.set(key, ToExprs(v));
      }
    } else {
      throw InternalError("op attribute '" + key + "' has an unsupported type");
    }
  }
  return a;
}

}  // namespace pypto

NB_MODULE(_core, m) {
  using namespace pypto;
  m.doc() = "PyPTO C++ core: IR, recorder, passes, runtime";
  // Compiled programs live in the kernel caches of @pypto.jit functions, which may still be
  // reachable (a test module, a torch function mode) when the interpreter shuts down; nanobind's
  // report of them at exit is noise to a user, not a leak of a running program.
  nb::set_leak_warnings(false);

  // PyPTO's exception classes (pypto.error). Its programs catch pypto.error.FeError around a
  // call with bad arguments and PyptoRtError around a run: a UserError is raised for both (at
  // trace time and at run time), so it is both, and a ValueError as before.
  auto new_error = [&](const char* name, nb::handle base) {
    nb::object cls = nb::steal(PyErr_NewException((std::string("pypto.error.") + name).c_str(), base.ptr(), nullptr));
    m.attr(name) = cls;
    return cls;
  };
  nb::object pypto_error = new_error("PyptoError", PyExc_Exception);
  nb::object general = new_error("PyptoGeneralError", pypto_error);
  nb::object fe_error = new_error("FeError", general);
  nb::object rt_error = new_error("PyptoRtError", general);
  new_error("PassError", general);
  new_error("VerifyError", general);
  new_error("ParserError", pypto_error);
  nb::object user_bases = nb::make_tuple(fe_error, rt_error, nb::handle(PyExc_ValueError));
  static nb::exception<UserError> user_error(m, "UserError", user_bases);
  nb::exception<InternalError>(m, "InternalError", PyExc_RuntimeError);

  nb::enum_<DataType>(m, "DataType")
      .value("FP32", DataType::FP32)
      .value("FP16", DataType::FP16)
      .value("BF16", DataType::BF16)
      .value("INT8", DataType::INT8)
      .value("INT16", DataType::INT16)
      .value("INT32", DataType::INT32)
      .value("INT64", DataType::INT64)
      .value("UINT8", DataType::UINT8)
      .value("UINT16", DataType::UINT16)
      .value("UINT32", DataType::UINT32)
      .value("UINT64", DataType::UINT64)
      .value("FP8E4M3", DataType::FP8E4M3)
      .value("FP8E5M2", DataType::FP8E5M2)
      .value("FP8E8M0", DataType::FP8E8M0)
      .value("FP4E2M1X2", DataType::FP4E2M1X2)
      .value("HF8", DataType::HF8)
      .value("FP4E1M2X2", DataType::FP4E1M2X2)
      .value("BOOL", DataType::BOOL);
  m.def("dtype_name", &DataTypeName);
  m.def("dtype_bytes", &DataTypeBytes);

  auto sym_err = [](const char* what) {
    return [what](const Expr& e) -> int64_t {
      if (auto c = e.as_const()) return *c;
      throw UserError(
          std::string(what) + " of the symbolic value '" + e.str() + "': its value is only known when the kernel runs",
          {}, "keep it symbolic: use it in pypto.loop bounds, slices and shapes, not in Python control flow");
    };
  };
  // PyPTO's constructors: SymbolicScalar() (0), (10), ("x") (a symbol), ("x", 10) (a named value
  // known now: the constant), (other) (a copy).
  nb::class_<Expr>(m, "SymbolicScalar")
      .def("__init__", [](Expr* self) { new (self) Expr(int64_t{0}); })
      .def(nb::init<int64_t>())
      .def("__init__", [](Expr* self, const Expr& o) { new (self) Expr(o); })
      .def("__init__", [](Expr* self, const std::string& name) { new (self) Expr(Expr::Var(name)); })
      .def("__init__", [](Expr* self, const std::string&, int64_t value) { new (self) Expr(value); })
      .def_static("var", &Expr::Var, "name"_a)
      .def("__add__", SymArith([](const Expr& a, const Expr& b) { return a + b; }), nb::is_operator())
      .def("__radd__", SymArith([](const Expr& a, const Expr& b) { return b + a; }), nb::is_operator())
      .def("__sub__", SymArith([](const Expr& a, const Expr& b) { return a - b; }), nb::is_operator())
      .def("__rsub__", SymArith([](const Expr& a, const Expr& b) { return b - a; }), nb::is_operator())
      .def("__mul__", SymArith([](const Expr& a, const Expr& b) { return a * b; }), nb::is_operator())
      .def("__rmul__", SymArith([](const Expr& a, const Expr& b) { return b * a; }), nb::is_operator())
      .def("__floordiv__", SymArith([](const Expr& a, const Expr& b) { return FloorDiv(a, b); }), nb::is_operator())
      .def("__rfloordiv__", SymArith([](const Expr& a, const Expr& b) { return FloorDiv(b, a); }), nb::is_operator())
      .def("__mod__", SymArith([](const Expr& a, const Expr& b) { return Mod(a, b); }), nb::is_operator())
      .def("__rmod__", SymArith([](const Expr& a, const Expr& b) { return Mod(b, a); }), nb::is_operator())
      // `/` is floor division on integers, as in PyPTO.
      .def("__truediv__", SymArith([](const Expr& a, const Expr& b) { return FloorDiv(a, b); }), nb::is_operator())
      .def("__rtruediv__", SymArith([](const Expr& a, const Expr& b) { return FloorDiv(b, a); }), nb::is_operator())
      // `&`, `|` and `~` are logical (0/1), as PyPTO's && || ! on scalars.
      .def("__and__", SymArith([](const Expr& a, const Expr& b) { return Truth(a) * Truth(b); }), nb::is_operator())
      .def("__rand__", SymArith([](const Expr& a, const Expr& b) { return Truth(b) * Truth(a); }), nb::is_operator())
      .def("__or__", SymArith([](const Expr& a, const Expr& b) { return Truth(Truth(a) + Truth(b)); }),
           nb::is_operator())
      .def("__ror__", SymArith([](const Expr& a, const Expr& b) { return Truth(Truth(b) + Truth(a)); }),
           nb::is_operator())
      .def("__invert__", [](const Expr& a) { return Expr(1) - Truth(a); })
      .def("__pos__", [](const Expr& a) { return a; })
      .def("__neg__", [](const Expr& a) { return -a; })
      .def("__int__", sym_err("int()"))
      .def("__index__", sym_err("using as a Python int"))
      .def("__bool__",
           [](const Expr& e) -> bool {
             if (auto c = e.as_const()) return *c != 0;
             throw UserError("truth value of the symbolic value '" + e.str() + "' is only known when the kernel runs",
                             {},
                             "an `if` on it (or on pypto.cond(...)) in a @pypto.jit function or in the body of "
                             "a pypto.loop is a runtime branch (one with a `return`, `break` or `continue` only "
                             "in a pypto.loop body); elsewhere compare Python ints at trace time");
           })
      // Comparisons give 0/1 predicates: `if i == 0:` in a jit function is a runtime branch.
      .def("__lt__", SymCompare(CmpOp::LT), nb::is_operator())
      .def("__le__", SymCompare(CmpOp::LE), nb::is_operator())
      .def("__gt__", SymCompare(CmpOp::GT), nb::is_operator())
      .def("__ge__", SymCompare(CmpOp::GE), nb::is_operator())
      .def("__eq__", SymCompare(CmpOp::EQ), nb::is_operator())
      .def("__ne__", SymCompare(CmpOp::NE), nb::is_operator())
      .def("__hash__", [](const Expr& e) { return std::hash<std::string>()(e.str()); })
      .def("__str__", [](const Expr& e) { return e.str(); })
      .def("__repr__", [](const Expr& e) { return "SymbolicScalar(" + e.str() + ")"; })
      .def("same_as", &Expr::same_as)
      .def("is_const", &Expr::is_const)
      .def("upper_bound", &Expr::UpperBound)
      .def("eval",
           [](const Expr& e, const std::map<std::string, int64_t>& env) {
             SymEnv s(env.begin(), env.end());
             return e.Eval(s);
           })
      .def("free_vars", &Expr::FreeVars)
      // PyPTO's hint to keep a complex expression as one intermediate variable: expressions here
      // are canonical and shared already, so there is nothing to do.
      .def("as_variable", [](const Expr&) {});
  m.def("sym_min", [](nb::handle a, nb::handle b) { return Min(ToExpr(a), ToExpr(b)); });
  m.def("sym_max", [](nb::handle a, nb::handle b) { return Max(ToExpr(a), ToExpr(b)); });
  m.def("to_sym", [](nb::handle a) { return ToExpr(a); });

  BindRecorder(m);

  nb::class_<Program>(m, "Program")
      .def_prop_ro("dumps", [](const Program& p) { return p.compiled->dumps; })
      .def_prop_ro("pass_ms", [](const Program& p) { return p.compiled->pass_ms; })
      .def_prop_ro("num_kernels", [](const Program& p) { return p.compiled->block_graph.kernels.size(); })
      .def("tensor_graph", [](const Program& p) { return PrintTensorGraph(p.compiled->tensor_graph); })
      .def("tile_graph", [](const Program& p) { return PrintTileGraph(p.compiled->tile_graph); })
      .def("block_graph", [](const Program& p) { return PrintBlockGraph(p.compiled->block_graph); })
      .def("exec_graph", [](const Program& p) { return PrintExecGraph(p.compiled->exec_graph); })
      .def(
          "to_json",
          [](const Program& p, const std::string& level) {
            const CompiledProgram& c = *p.compiled;
            if (level == "tensor_graph") return TensorGraphJson(c.tensor_graph);
            if (level == "tile_graph") return TileGraphJson(c.tile_graph);
            if (level == "block_graph") return BlockGraphJson(c.block_graph);
            if (level == "exec_graph") return ExecGraphJson(c.exec_graph);
            throw UserError("unknown IR level '" + level + "'", {},
                            "use tensor_graph, tile_graph, block_graph or exec_graph");
          },
          "level"_a)
      .def(
          "simulate",
          [](const Program& p, const nb::list& launches, const std::vector<std::vector<int>>& deps,
             const std::string& machine) { return SimulateToDict(p.compiled->exec_graph, launches, deps, machine); },
          "launches"_a, "deps"_a, "machine"_a)
      .def(
          "run",
          [](const Program& p, const std::vector<ArgArray>& params, int workers, const std::string& sched_mode,
             bool trace, const std::string& run_mode, double timeout_s) {
            std::vector<HostTensor> hp;
            const Function& fn = p.compiled->tensor_graph;
            for (size_t i = 0; i < params.size(); ++i) {
              // numpy has no bf16 and no MX formats: a bf16 parameter takes its bit patterns as
              // uint16 (never int16, which is an int16 tensor's dtype), an fp8 one its bytes as uint8.
              auto dt = params[i].dtype();
              bool unsigned_bits = dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::UInt);
              DataType want = i < fn.param_values.size() ? fn.value(fn.param_values[i]).dtype : DataType::FP32;
              if (unsigned_bits &&
                  ((dt.bits == 16 && want == DataType::BF16) || (dt.bits == 8 && IsStorageOnly(want)))) {
                HostTensor t;
                t.data = const_cast<void*>(params[i].data());
                t.dtype = want;
                for (size_t d = 0; d < params[i].ndim(); ++d) {
                  t.shape.push_back(static_cast<int64_t>(params[i].shape(d)));
                  t.strides.push_back(static_cast<int64_t>(params[i].stride(d)));
                }
                hp.push_back(t);
              } else {
                hp.push_back(ToHost(params[i]));
              }
            }
            std::vector<Array> outs;
            std::vector<HostTensor> hr;
            SymEnv env = p.runtime->BindShapes(hp);
            {
              auto shapes = p.runtime->ReturnShapes(env);
              std::vector<bool> whole = p.runtime->ReturnsWrittenWhole(env);
              for (size_t i = 0; i < shapes.size(); ++i) {
                const Value& rv = fn.value(fn.returns[i]);
                DataType dt = rv.dtype;
                auto checked = TensorBytes(shapes[i], dt);
                if (!checked)
                  throw UserError("the returned %" + rv.name + " " + DataTypeName(dt) + IntList(shapes[i]) +
                                      " cannot exist: its size overflows or exceeds " +
                                      std::to_string(kMaxTensorBytes >> 40) + " TiB",
                                  rv.loc);
                // Outputs start zeroed (a program need not write all of them) unless the call
                // is known to store to every element.
                size_t bytes = static_cast<size_t>(std::max<int64_t>(1, *checked));
                char* data = nullptr;
                try {
                  data = static_cast<char*>(whole[i] ? AllocHost(bytes) : AllocHostZeroed(bytes));
                } catch (const std::bad_alloc&) {
                  throw OutOfMemory("out of memory allocating " + std::to_string(bytes) + " bytes for the returned %" +
                                    rv.name + " " + DataTypeName(dt) + IntList(shapes[i]));
                }
                auto* block = new std::pair<void*, size_t>(data, bytes);
                nb::capsule owner(block, [](void* q) noexcept {
                  auto* b = static_cast<std::pair<void*, size_t>*>(q);
                  FreeHost(b->first, b->second);
                  delete b;
                });
                std::vector<size_t> shp(shapes[i].begin(), shapes[i].end());
                // bf16 results come back as uint16 bit patterns (numpy has no bf16).
                outs.emplace_back(data, shp.size(), shp.data(), owner, nullptr,
                                  dt == DataType::BF16 ? nb::dtype<uint16_t>() : ToDlpack(dt));
                HostTensor h;
                h.data = data;
                h.dtype = dt;
                h.shape = shapes[i];
                hr.push_back(h);
              }
            }
            RunOptions o;
            o.workers = workers;
            o.sched_mode = ParseSchedMode(sched_mode);
            o.trace = trace;
            o.run_mode = ParseRunMode(run_mode);
            o.timeout_s = timeout_s;
            // Ctrl-C: the calling thread (Python's main thread) runs the signal handlers now and
            // then; a KeyboardInterrupt they raise cancels the call and is raised here.
            o.interrupted = [] {
              if (StopCallsRequested()) return true;  // a one-process distributed run ends (dist_bindings.h)
              nb::gil_scoped_acquire gil;
              return PyErr_CheckSignals() != 0;
            };
            RunStats st;
            bool interrupted = false;
            {
              nb::gil_scoped_release release;
              try {
                st = p.runtime->Run(hp, hr, o, &env);
              } catch (const Interrupted&) {
                interrupted = true;
              }
            }
            if (interrupted) {
              if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "the call was stopped: another rank of this process failed");
              throw nb::python_error();
            }
            nb::dict stats;
            stats["tasks"] = st.tasks;
            stats["launches"] = st.launches;
            stats["pointwise_links"] = st.pointwise_links;
            stats["build_ms"] = st.build_ms;
            stats["control_ms"] = st.control_ms;
            stats["control_overlapped"] = st.control_overlapped;
            stats["exec_ms"] = st.exec_ms;
            stats["compile_ms"] = st.compile_ms;
            nb::list events;
            for (auto& e : st.events)
              events.append(
                  nb::make_tuple(e.worker, e.launch, e.kernel, e.first_point, e.num_points, e.start_ns, e.end_ns));
            stats["events"] = events;
            if (trace) {
              stats["deps"] = st.deps;
              stats["pointwise_deps"] = st.pointwise_deps;
              nb::list launches;  // what the machine model replays (pypto.sim)
              for (auto& l : st.launch_records)
                launches.append(
                    nb::make_tuple(l.kernel, l.grid, std::map<std::string, int64_t>(l.env.begin(), l.env.end())));
              stats["launch_records"] = launches;
            }
            return nb::make_tuple(outs, stats);
          },
          "params"_a, "workers"_a = 0, "sched_mode"_a = "fifo", "trace"_a = false, "run_mode"_a = "cpu",
          "timeout"_a = 0.0)
      .def("native_source", [](const Program& p) { return p.runtime->NativeSource(); })
      .def_prop_ro("native_cube_paths", [](const Program& p) { return p.runtime->NativeCubePaths(); })
      .def_prop_ro("snapshot_names",
                   [](const Program& p) {
                     std::vector<std::string> n;
                     for (auto& s : p.compiled->snapshots) n.push_back(s.first);
                     return n;
                   })
      .def(
          "snapshot_program",
          [](const Program& p, size_t i) {
            if (i >= p.compiled->snapshots.size()) throw nb::index_error("no such snapshot");
            Program s;
            s.compiled = std::make_shared<const CompiledProgram>(SnapshotProgram(*p.compiled, i));
            s.runtime = std::make_shared<Runtime>(s.compiled);
            return s;
          },
          "index"_a);

  m.def("op_names", [] {
    std::vector<std::string> n;
    for (auto& d : AllOpDefs()) n.push_back(d.name);
    return n;
  });
  m.def("machine_names", &MachineNames);
  m.def("machine_ub_bytes", [](const std::string& name) { return GetMachine(name).ub_bytes; });
  // pypto.asc's native path. A stream is ([n, 16] int64 fields, n float64 scalars, the index
  // lists concatenated, their n_lists + 1 offsets) over the global arrays and the UB.
  using I64Rows = nb::ndarray<int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
  using I64Vec = nb::ndarray<int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
  using F64Vec = nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
  using AscStream = std::tuple<I64Rows, F64Vec, I64Vec, I64Vec>;
  auto to_stream = [](const AscStream& st) {
    auto& [fields, scalars, idx, offsets] = st;
    if (fields.shape(1) != rt::kElemInstrFields || scalars.shape(0) != fields.shape(0) || offsets.shape(0) < 1)
      throw InternalError("asc: a stream must be [n, 16] fields, n scalars and index lists");
    rt::ElemStream s;
    s.instrs.resize(fields.shape(0));
    const int64_t* f = fields.data();
    for (size_t i = 0; i < s.instrs.size(); ++i, f += rt::kElemInstrFields) {
      rt::ElemInstr& in = s.instrs[i];
      in.op = static_cast<rt::ElemOp>(f[0]);
      in.type = static_cast<rt::ElemType>(f[1]);
      in.src_type = static_cast<rt::ElemType>(f[2]);
      int64_t* rest[] = {&in.dst_mem, &in.dst_off,  &in.src0_mem, &in.src0_off, &in.src1_mem, &in.src1_off, &in.count,
                         &in.dst_idx, &in.src0_idx, &in.src1_idx, &in.sreg,     &in.aux,      &in.flags};
      for (int k = 0; k < 13; ++k) *rest[k] = f[3 + k];
      in.scalar = scalars.data()[i];
    }
    const int64_t* off = offsets.data();
    for (size_t k = 0; k + 1 < offsets.shape(0); ++k) {
      if (off[k] < 0 || off[k + 1] < off[k] || off[k + 1] > static_cast<int64_t>(idx.shape(0)))
        throw InternalError("asc: bad index list offsets");
      s.index_lists.emplace_back(idx.data() + off[k], idx.data() + off[k + 1]);
    }
    return s;
  };
  // The recorded streams of a launch signature, converted once and replayed per launch.
  struct AscProgram {
    std::vector<rt::ElemStream> blocks;
  };
  nb::class_<AscProgram>(m, "AscProgram")
      .def("__init__",
           [to_stream](AscProgram* p, const std::vector<AscStream>& streams) {
             new (p) AscProgram();
             for (auto& st : streams) p->blocks.push_back(to_stream(st));
           })
      .def(
          "run",
          [](const AscProgram& p, const std::vector<nb::ndarray<nb::device::cpu>>& gm, int64_t ub_bytes, int workers) {
            std::vector<char*> ptrs;
            for (auto& a : gm) ptrs.push_back(static_cast<char*>(a.data()));
            nb::gil_scoped_release release;
            rt::RunElementBlocks(p.blocks, ptrs, ub_bytes, workers);
          },
          "gm"_a, "ub_bytes"_a, "workers"_a);
  // The interpreter runs an instruction it can express natively here: one semantics for both.
  m.def(
      "asc_exec",
      [to_stream](const AscStream& stream, const std::vector<nb::ndarray<nb::device::cpu>>& mem) {
        rt::ElemStream s = to_stream(stream);
        std::vector<char*> ptrs;
        for (auto& a : mem) ptrs.push_back(static_cast<char*>(a.data()));
        std::vector<double> regs;
        nb::gil_scoped_release release;
        rt::RunElementStream(s, ptrs.data(), regs);
      },
      "stream"_a, "mem"_a);
  m.def("machine_info", &MachineInfo, "name"_a);
  m.def(
      "cpu_paths",
      [] {
        const CpuFeatures& cpu = HostCpu();
        const CpuIsaChoice c = ChooseCpuIsa();
        nb::dict d;
        d["cpu"] = cpu.model;
        d["features"] = cpu.FlagList();
        d["isa"] = CpuIsaName(c.level);
        d["best"] = CpuIsaName(c.best);
        d["requested"] = c.requested;
        d["note"] = c.note;
        d["flags"] = c.flags;
        d["amx"] = cpu.amx_usable ? std::string("usable") : "unavailable: this CPU lacks " + cpu.amx_note;
        for (auto& [dtype, path] : CubePaths(c.level)) d[dtype.c_str()] = path;
        nb::dict levels;  // level -> "" when this CPU runs it, else what it lacks
        for (auto& name : CpuIsaNames()) {
          std::string missing;
          for (CpuIsa l : {CpuIsa::Generic, CpuIsa::Avx2, CpuIsa::Avx2Vnni, CpuIsa::Avx512, CpuIsa::Avx512Vnni,
                           CpuIsa::Avx512Bf16, CpuIsa::Amx, CpuIsa::AmxEmulated})
            if (name == CpuIsaName(l)) CpuSupports(cpu, l, &missing);
          levels[name.c_str()] = missing;
        }
        d["levels"] = levels;
        return d;
      },
      "The CPU level generated kernels are compiled for ('isa': the best this CPU has, or $PYPTO_CPU_ISA) and "
      "the cube's micro-kernel per dtype ('fp32', 'fp16', 'bf16', 'int8'); 'levels' maps each level to what "
      "this CPU lacks for it ('' when it runs it).");
  m.def("pass_names", &PipelineStepNames, "The default pipeline's steps in order (src/passes/pipeline.cpp).");
  m.def("build_kernel_support", &BuildKernelSupport,
        "Builds the precompiled support every kernel includes into the package (install time); returns its "
        "directory.");
  m.def("release_memory", &ReleaseHostPool,
        "Frees the host memory kept for reuse between calls; returns the bytes released.");
  // pypto.memory_stats() / reset_peak_memory() (python/pypto/core/memory.py) wrap these two.
  auto stats_dict = [](const HostMemoryStats& s) {
    nb::dict d;
    d["live"] = s.live;
    d["peak"] = s.peak;
    d["pooled"] = s.pooled;
    d["held"] = s.held;
    d["peak_held"] = s.peak_held;
    d["allocs"] = s.allocs;
    d["reuses"] = s.reuses;
    return d;
  };
  m.def(
      "host_memory_stats", [stats_dict] { return stats_dict(GetHostMemoryStats()); },
      "pypto's host memory in bytes: live, peak (since the last reset), pooled, held (live + pooled), "
      "peak_held, and the counts allocs (from the system) and reuses (from the pool).");
  m.def(
      "reset_host_peak", [stats_dict] { return stats_dict(ResetHostPeak()); },
      "Starts a new peak (peak = live, peak_held = held); returns the stats before the reset.");
  m.def("_count_host_bytes", &CountHostBytes, "delta"_a,
        "Counts bytes the frontend allocates for a call (a dense copy of a strided argument) as pypto's live "
        "memory: + when taken, - when dropped.");
  BindDist(m);
  BindLinks(m);
}
