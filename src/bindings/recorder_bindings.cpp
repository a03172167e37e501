// pypto._core.Recorder: the tensor-level program a traced Python function records, op by op.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings/bind_common.h"
#include "frontend/recorder.h"
#include "frontend/row_locality.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pypto {

void BindRecorder(nb::module_& m) {
  // Opaque to Python: handed back to Recorder.rollback.
  nb::class_<Recorder::Mark>(m, "RecorderMark");
  nb::class_<Recorder>(m, "Recorder")
      .def(nb::init<const std::string&>())
      .def("add_param", [](Recorder& r, const std::string& name, nb::handle shape, DataType dt, bool out,
                           nb::handle loc) { return r.AddParam(name, ToExprs(shape), dt, out, MakeLoc(loc)); })
      .def("add_dynamic_var", &Recorder::AddDynamicVar, "hint"_a)
      .def("create_tensor", [](Recorder& r, nb::handle shape, DataType dt, const std::string& name,
                               nb::handle loc) { return r.CreateTensor(ToExprs(shape), dt, name, MakeLoc(loc)); })
      .def("mark_zero_filled", &Recorder::MarkZeroFilled, "id"_a)
      .def("unary",
           [](Recorder& r, const std::string& op, int x, nb::handle loc) { return r.Unary(op, x, MakeLoc(loc)); })
      .def("binary", [](Recorder& r, const std::string& op, int x, int y,
                        nb::handle loc) { return r.Binary(op, x, y, MakeLoc(loc)); })
      .def(
          "binary_scalar",
          [](Recorder& r, const std::string& op, int x, double s, nb::handle loc, bool scalar_first,
             std::optional<int64_t> exact) { return r.BinaryScalar(op, x, s, MakeLoc(loc), scalar_first, exact); },
          "op"_a, "x"_a, "scalar"_a, "loc"_a, "scalar_first"_a = false, "exact"_a = nb::none())
      .def("op", [](Recorder& r, const std::string& op, const std::vector<int>& inputs, const nb::dict& attrs,
                    nb::handle loc) { return r.Op(op, inputs, ToAttrs(attrs), MakeLoc(loc)); })
      .def("reduce", [](Recorder& r, const std::string& op, int x, int64_t dim, bool keepdim,
                        nb::handle loc) { return r.Reduce(op, x, dim, keepdim, MakeLoc(loc)); })
      .def(
          "cast",
          [](Recorder& r, int x, DataType dt, nb::handle loc, int round) {
            return r.Cast(x, dt, MakeLoc(loc), static_cast<RoundMode>(round));
          },
          "x"_a, "dtype"_a, "loc"_a, "round"_a = 0)
      .def(
          "matmul",
          [](Recorder& r, int a, int b, std::optional<DataType> out_dtype, bool a_trans, bool b_trans, nb::handle loc) {
            return r.Matmul(a, b, out_dtype ? static_cast<int>(*out_dtype) : -1, a_trans, b_trans, MakeLoc(loc));
          },
          nb::arg("a"), nb::arg("b"), nb::arg("out_dtype").none(), nb::arg("a_trans"), nb::arg("b_trans"),
          nb::arg("loc"))
      .def("view", [](Recorder& r, int x, nb::handle offsets, nb::handle shape,
                      nb::handle loc) { return r.View(x, ToExprs(offsets), ToExprs(shape), MakeLoc(loc)); })
      .def("remap", [](Recorder& r, int x, const std::vector<int64_t>& perm,
                       nb::handle loc) { return r.Remap(x, perm, MakeLoc(loc)); })
      .def(
          "reshape",
          [](Recorder& r, int x, nb::handle shape, nb::handle loc, bool in_memory) {
            return r.Reshape(x, ToExprs(shape), MakeLoc(loc), in_memory);
          },
          "x"_a, "shape"_a, "loc"_a, "in_memory"_a = false)
      .def(
          "view_extents",
          [](const Recorder& r, int x, nb::handle offsets, nb::handle shape, bool dynamic_dims) {
            return r.ViewExtents(x, ToExprs(offsets), ToExprs(shape), dynamic_dims);
          },
          "x"_a, "offsets"_a, "shape"_a, "dynamic_dims"_a = false)
      .def("materialize_where_made",
           [](Recorder& r, int value, nb::handle loc) { return r.MaterializeWhereMade(value, MakeLoc(loc)); })
      .def("reshapes_in_place",
           [](const Recorder& r, int x, nb::handle shape) { return r.PlanViewReshape(x, ToExprs(shape)).has_value(); })
      .def("bitcast",
           [](Recorder& r, int x, DataType dtype, nb::handle loc) { return r.Bitcast(x, dtype, MakeLoc(loc)); })
      .def(
          "assemble",
          [](Recorder& r, int src, nb::handle offsets, int dst, nb::handle loc, bool atomic_add) {
            r.Assemble(src, ToExprs(offsets), dst, MakeLoc(loc), atomic_add);
          },
          "src"_a, "offsets"_a, "dst"_a, "loc"_a, "atomic_add"_a = false)
      .def("assume_equal", [](Recorder& r, nb::handle a, nb::handle b, const std::string& what,
                              nb::handle loc) { r.AssumeEqual(ToExpr(a), ToExpr(b), what, MakeLoc(loc)); })
      .def("begin_loop",
           [](Recorder& r, const std::string& idx, const std::string& name, nb::handle start, nb::handle stop,
              nb::handle step, nb::handle loc) {
             return r.BeginLoop(idx, name, ToExpr(start), ToExpr(stop), ToExpr(step), MakeLoc(loc));
           })
      .def("begin_branch", [](Recorder& r, nb::handle cond, bool negate,
                              nb::handle loc) { return r.BeginBranch(ToExpr(cond), negate, MakeLoc(loc)); })
      .def("end_loop", &Recorder::EndLoop)
      .def("checkpoint", &Recorder::Checkpoint)
      .def("position", &Recorder::Position)
      .def("rollback", &Recorder::Rollback)
      .def("read_scalar", [](Recorder& r, int x, nb::handle index,
                             nb::handle loc) { return r.ReadScalar(x, ToExprs(index), MakeLoc(loc)); })
      .def("set_vec_tile_shapes",
           [](Recorder& r, const std::vector<int64_t>& d, nb::handle loc) { r.SetVecTileShapes(d, MakeLoc(loc)); })
      .def("vec_tile_shapes", &Recorder::vec_tile_shapes)
      .def("clear_vec_tile_shapes", &Recorder::ClearVecTileShapes)
      .def("set_label", &Recorder::SetLabel)
      .def("set_cube_tile_shapes",
           [](Recorder& r, const std::vector<int64_t>& m, const std::vector<int64_t>& k, const std::vector<int64_t>& n,
              nb::handle loc) { r.SetCubeTileShapes(m, k, n, MakeLoc(loc)); })
      .def("cube_tile_shapes", &Recorder::cube_tile_shapes)
      .def("set_return", [](Recorder& r, const std::vector<int>& v, nb::handle loc) { r.Return(v, MakeLoc(loc)); })
      .def("value_shape", [](const Recorder& r, int id) { return r.value(id).shape; })
      .def("value_dtype", [](const Recorder& r, int id) { return r.value(id).dtype; })
      .def("value_name", [](const Recorder& r, int id) { return r.value(id).name; })
      .def("value_kind", [](const Recorder& r, int id) { return std::string(ValueKindName(r.value(id).kind)); })
      .def("open_symbols", &Recorder::OpenSymbols)
      .def("root_kind",
           [](const Recorder& r, int id) {
             return std::string(ValueKindName(r.function().value(r.function().MemoryRoot(id)).kind));
           })
      .def("first_row_mixing_op",
           [](const Recorder& r, const std::vector<int>& rows) { return FirstRowMixingOp(r.function(), rows); })
      .def("print", [](const Recorder& r) { return PrintTensorGraph(r.function()); })
      .def(
          "compile",
          [](Recorder& r, const std::string& machine, const std::string& dump_dir, bool dump_passes,
             const std::vector<std::string>& dump_only, bool reciprocal_division, bool keep_snapshots) {
            CompileOptions o;
            o.keep_snapshots = keep_snapshots;
            o.reciprocal_division = reciprocal_division;
            o.machine = machine;
            o.dump_dir = dump_dir;
            o.dump_passes = dump_passes;
            o.dump_only = dump_only;
            Program p;
            p.compiled = std::make_shared<const CompiledProgram>(Compile(r.Finish(), o));
            p.runtime = std::make_shared<Runtime>(p.compiled);
            return p;
          },
          "machine"_a, "dump_dir"_a, "dump_passes"_a, "dump_only"_a, "reciprocal_division"_a,
          "keep_snapshots"_a = false);
}

}  // namespace pypto
