// The C++ API's tensors, symbolic scalars, options and runs. The recording scopes (FUNCTION,
// LOOP, IF/ELSE, UNROLL) are in scopes.cpp, the ops in ops.cpp. Everything records through the Recorder the Python
// frontend uses, and compiles with the same pipeline (passes/pipeline.h) and runtime.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "api/recording.h"
#include "ir/dtype.h"
#include "passes/pipeline.h"
#include "runtime/runtime.h"

namespace pypto {

// --- symbolic scalars -------------------------------------------------------------------------

int64_t SymbolicScalar::Concrete() const {
  if (auto c = e_.as_const()) return *c;
  throw UserError("the symbolic value " + e_.str() + " is only known when the function runs", {},
                  "use it in LOOP bounds, View offsets or IF; IsConcrete() tells whether it is known now");
}

SymbolicScalar operator+(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(a.expr() + b.expr());
}
SymbolicScalar operator-(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(a.expr() - b.expr());
}
SymbolicScalar operator*(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(a.expr() * b.expr());
}
SymbolicScalar operator/(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(FloorDiv(a.expr(), b.expr()));
}
SymbolicScalar operator%(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Mod(a.expr(), b.expr()));
}
SymbolicScalar operator-(const SymbolicScalar& a) { return SymbolicScalar(-a.expr()); }
SymbolicScalar operator<(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Compare(a.expr(), b.expr(), CmpOp::LT));
}
SymbolicScalar operator<=(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Compare(a.expr(), b.expr(), CmpOp::LE));
}
SymbolicScalar operator>(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Compare(a.expr(), b.expr(), CmpOp::GT));
}
SymbolicScalar operator>=(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Compare(a.expr(), b.expr(), CmpOp::GE));
}
SymbolicScalar operator==(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Compare(a.expr(), b.expr(), CmpOp::EQ));
}
SymbolicScalar operator!=(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Compare(a.expr(), b.expr(), CmpOp::NE));
}
SymbolicScalar operator&&(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Min(Truth(a.expr()), Truth(b.expr())));
}
SymbolicScalar operator||(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(Max(Truth(a.expr()), Truth(b.expr())));
}
SymbolicScalar operator!(const SymbolicScalar& a) { return SymbolicScalar(Expr(1) - Truth(a.expr())); }
SymbolicScalar CeilDiv(const SymbolicScalar& a, const SymbolicScalar& b) {
  return SymbolicScalar(pypto::CeilDiv(a.expr(), b.expr()));
}
SymbolicScalar IsLoopBegin(const SymbolicScalar& index, const SymbolicScalar& begin) { return index == begin; }
SymbolicScalar IsLoopEnd(const SymbolicScalar& index, const SymbolicScalar& end) { return index + 1 == end; }

namespace api {

namespace {
std::mutex g_mu;  // the registry, options and source cache
std::map<std::string, std::shared_ptr<RecordedFunction>>& Registry() {
  static std::map<std::string, std::shared_ptr<RecordedFunction>> r;
  return r;
}
thread_local std::vector<std::unique_ptr<Recording>> t_recordings;
std::atomic<uint64_t> g_serial{0};

// The text of line `line` of `file`, for the caret of an error (files are read once).
std::string SourceLine(const std::string& file, int line) {
  static std::map<std::string, std::vector<std::string>> cache;
  static std::mutex mu;  // not g_mu: errors made while holding it read lines too
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(file);
  if (it == cache.end()) {
    std::vector<std::string> lines;
    std::ifstream in(file);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    it = cache.emplace(file, std::move(lines)).first;
  }
  return line >= 1 && line <= static_cast<int>(it->second.size()) ? it->second[line - 1] : "";
}
}  // namespace

uint64_t NextSerial() { return ++g_serial; }

SourceLoc ToLoc(const Loc& loc) {
  SourceLoc s;
  s.file = loc.file_name();
  s.line = static_cast<int>(loc.line());
  s.column = loc.column() > 0 ? static_cast<int>(loc.column()) - 1 : -1;
  s.text = SourceLine(s.file, s.line);
  if (s.column >= static_cast<int>(s.text.size())) s.column = -1;
  return s;
}

Recording* CurrentOrNull() { return t_recordings.empty() ? nullptr : t_recordings.back().get(); }

Recording& Current(const char* op, const Loc& loc) {
  if (t_recordings.empty())
    throw UserError(std::string("pypto::") + op + ": ops are recorded inside a FUNCTION(...) { ... } body", ToLoc(loc));
  return *t_recordings.back();
}

int Id(const Tensor& t, const char* op, const Loc& loc) {
  Recording& r = Current(op, loc);
  if (t.IsEmpty())
    throw UserError(std::string("pypto::") + op + ": the tensor is empty (default-constructed)", ToLoc(loc));
  const auto& impl = *t.impl();
  if (!impl.poison.empty()) throw UserError(std::string("pypto::") + op + ": " + impl.poison, ToLoc(loc));
  if (impl.serial != r.serial || impl.id < 0)
    throw UserError(std::string("pypto::") + op + ": the tensor " + (impl.name.empty() ? "" : "'" + impl.name + "' ") +
                        "is not part of the function '" + r.name + "' being recorded",
                    ToLoc(loc), "list it among FUNCTION's inputs or outputs, or compute it inside the body");
  return impl.id;
}

Tensor Wrap(int id) {
  Recording* r = CurrentOrNull();
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->serial = r->serial;
  impl->id = id;
  const Value& v = r->rec.value(id);
  impl->dtype = v.dtype;
  impl->shape = v.shape;
  impl->name = v.name;
  return Tensor(std::move(impl));
}

Options& GlobalOptions() {
  static Options o;
  return o;
}

std::string Options::Key() const {
  return machine + "|" + std::to_string(reciprocal_division) + "|" + dump_dir + "|" + std::to_string(dump_passes);
}

std::shared_ptr<RecordedFunction> Lookup(const std::string& name, const Loc& loc) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Registry().find(name);
  if (it == Registry().end()) {
    std::string known;
    for (auto& [n, f] : Registry()) known += (known.empty() ? "" : ", ") + n;
    throw UserError("no function named '" + name + "' was recorded", ToLoc(loc),
                    known.empty() ? "record it with FUNCTION(\"" + name + "\", {inputs}, {outputs}) { ... } first"
                                  : "recorded functions: " + known);
  }
  return it->second;
}

std::vector<std::string> Names() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> names;
  for (auto& [n, f] : Registry()) names.push_back(n);
  return names;
}

std::vector<Expr> ShapeOf(const detail::TensorImpl& t) {
  Recording* r = CurrentOrNull();
  if (r && t.serial == r->serial && t.id >= 0) return r->rec.value(t.id).shape;
  return t.shape;
}

void Register(const std::string& name, std::shared_ptr<RecordedFunction> f) {
  std::lock_guard<std::mutex> lock(g_mu);
  Registry()[name] = std::move(f);
}

void Begin(std::unique_ptr<Recording> r) { t_recordings.push_back(std::move(r)); }

std::unique_ptr<Recording> End() {
  auto r = std::move(t_recordings.back());
  t_recordings.pop_back();
  return r;
}

std::vector<int64_t>& DefaultVecTile() {
  static thread_local std::vector<int64_t> t;
  return t;
}

std::vector<std::vector<int64_t>>& DefaultCubeTile() {
  static thread_local std::vector<std::vector<int64_t>> t;
  return t;
}

}  // namespace api

std::vector<std::string> FunctionNames() { return api::Names(); }

// --- tensors ----------------------------------------------------------------------------------

namespace {

std::shared_ptr<detail::TensorImpl> Declare(DataType dtype, std::vector<Expr> shape, const std::string& name,
                                            TileOpFormat format, const Loc& loc) {
  if (api::Recording* r = api::CurrentOrNull()) {
    // Inside FUNCTION: PyPTO's intermediate tensor in global memory.
    for (auto& d : shape)
      if (d.as_const() == std::optional<int64_t>(DYNAMIC))
        throw UserError("Tensor '" + name +
                            "': DYNAMIC dims belong to FUNCTION's parameters; inside the body give "
                            "the size (e.g. GetInputShape(x, 0))",
                        api::ToLoc(loc));
    int id = r->rec.CreateTensor(shape, dtype, name, api::ToLoc(loc));
    auto impl = std::make_shared<detail::TensorImpl>();
    impl->dtype = dtype;
    impl->shape = r->rec.value(id).shape;
    impl->name = r->rec.value(id).name;
    impl->format = format;
    impl->serial = r->serial;
    impl->id = id;
    return impl;
  }
  for (auto& d : shape) {
    auto c = d.as_const();
    if (!c)
      throw UserError("Tensor '" + name + "': a parameter's dims are ints or DYNAMIC, got " + d.str(), api::ToLoc(loc));
    if (*c <= 0 && *c != DYNAMIC)
      throw UserError("Tensor '" + name + "': dim " + std::to_string(*c) + " is not positive (or DYNAMIC)",
                      api::ToLoc(loc));
  }
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->dtype = dtype;
  impl->shape = std::move(shape);
  impl->name = name;
  impl->format = format;
  return impl;
}

std::vector<Expr> Exprs(const std::vector<SymbolicScalar>& v) {
  std::vector<Expr> out;
  for (auto& s : v) out.push_back(s.expr());
  return out;
}

}  // namespace

Tensor::Tensor(DataType dtype, std::initializer_list<SymbolicScalar> shape, const std::string& name,
               TileOpFormat format, Loc loc)
    : Tensor(dtype, std::vector<SymbolicScalar>(shape), name, format, loc) {}

Tensor::Tensor(DataType dtype, const std::vector<int64_t>& shape, const std::string& name, TileOpFormat format, Loc loc)
    : impl_(Declare(dtype, std::vector<Expr>(shape.begin(), shape.end()), name, format, loc)) {}

Tensor::Tensor(DataType dtype, const std::vector<SymbolicScalar>& shape, const std::string& name, TileOpFormat format,
               Loc loc)
    : impl_(Declare(dtype, Exprs(shape), name, format, loc)) {}

DataType Tensor::GetDataType() const { return impl_ ? impl_->dtype : DataType::FP32; }

std::vector<int64_t> Tensor::GetShape() const {
  std::vector<int64_t> out;
  if (!impl_) return out;
  for (auto& d : impl_->shape) out.push_back(d.as_const().value_or(DYNAMIC));
  return out;
}

int64_t Tensor::GetShape(int axis) const {
  auto s = GetShape();
  int n = static_cast<int>(s.size());
  if (axis < -n || axis >= n)
    throw UserError("Tensor::GetShape(" + std::to_string(axis) + ") of a rank-" + std::to_string(n) + " tensor");
  return s[axis < 0 ? axis + n : axis];
}

std::vector<SymbolicScalar> Tensor::GetValidShape() const {
  std::vector<SymbolicScalar> out;
  if (!impl_) return out;
  for (auto& d : api::ShapeOf(*impl_)) out.emplace_back(d);
  return out;
}

uint64_t Tensor::Dim() const { return impl_ ? impl_->shape.size() : 0; }
std::string Tensor::GetName() const { return impl_ ? impl_->name : ""; }
TileOpFormat Tensor::Format() const { return impl_ ? impl_->format : TileOpFormat::TILEOP_ND; }

SymbolicScalar GetInputShape(const Tensor& t, int dim, Loc loc) {
  int n = static_cast<int>(t.Dim());
  if (dim < -n || dim >= n)
    throw UserError("GetInputShape: dim " + std::to_string(dim) + " of a rank-" + std::to_string(n) + " tensor",
                    api::ToLoc(loc));
  if (api::CurrentOrNull() && !t.IsEmpty() && t.impl()->id >= 0) {
    int id = api::Id(t, "GetInputShape", loc);
    return SymbolicScalar(api::CurrentOrNull()->rec.value(id).shape[dim < 0 ? dim + n : dim]);
  }
  return SymbolicScalar(t.impl()->shape[dim < 0 ? dim + n : dim]);
}

std::vector<SymbolicScalar> GetInputShape(const Tensor& t, Loc loc) {
  std::vector<SymbolicScalar> out;
  for (int d = 0; d < static_cast<int>(t.Dim()); ++d) out.push_back(GetInputShape(t, d, loc));
  return out;
}

SymbolicScalar GetTensorData(const Tensor& t, const std::vector<SymbolicScalar>& index, Loc loc) {
  api::Recording& r = api::Current("GetTensorData", loc);
  int id = api::Id(t, "GetTensorData", loc);
  return SymbolicScalar(r.rec.ReadScalar(id, Exprs(index), api::ToLoc(loc)));
}

// --- tiling and options -----------------------------------------------------------------------

TileShape& TileShape::Current() {
  static thread_local TileShape t;
  return t;
}

void TileShape::SetVecTile(const std::vector<int64_t>& tile, Loc loc) {
  if (api::Recording* r = api::CurrentOrNull())
    r->rec.SetVecTileShapes(tile, api::ToLoc(loc));
  else
    api::DefaultVecTile() = tile;
}

void TileShape::SetCubeTile(const std::vector<int64_t>& m, const std::vector<int64_t>& k, const std::vector<int64_t>& n,
                            bool /*enableSplitK*/, Loc loc) {
  if (api::Recording* r = api::CurrentOrNull())
    r->rec.SetCubeTileShapes(m, k, n, api::ToLoc(loc));
  else
    api::DefaultCubeTile() = {m, k, n};
}

std::vector<int64_t> TileShape::GetVecTile() const {
  if (api::Recording* r = api::CurrentOrNull()) return r->rec.vec_tile_shapes();
  return api::DefaultVecTile();
}

namespace config {
namespace {
// PyPTO's keys that steer the NPU: accepted and recorded, no effect on a CPU (docs/cpp-api.md).
const std::set<std::string> kNpuPassKeys = {
    "vec_nbuffer_mode",      "cube_l1_reuse_mode", "cube_nbuffer_mode", "nbuffer_merge_mode", "sg_set_scope",
    "auto_mix_partition",    "sg_set_ooo_scope",   "ooo_sched_mode",    "sg_set_tunevf_mode", "enable_slice",
    "mg_copyin_upper_bound", "pg_upper_bound",     "pg_lower_bound",    "pg_skip_partition"};
const std::set<std::string> kNpuRuntimeKeys = {"device_sched_mode",
                                               "stitch_function_max_num",
                                               "max_workspace_kb",
                                               "valid_shape_optimize",
                                               "device_sched_parallelism",
                                               "launch_sched_aicpu_num",
                                               "launch_early_mode",
                                               "machine_sched_mode",
                                               "stitch_function_inner_memory",
                                               "stitch_function_outcast_memory"};
const std::set<std::string> kNpuDebugKeys = {"runtime_debug_mode", "dump_pass_graph", "enable_pmu_trace"};

[[noreturn]] void Unknown(const std::string& group, const std::string& key, const std::set<std::string>& acting,
                          const std::set<std::string>& npu) {
  std::string known;
  for (const auto* s : {&acting, &npu})
    for (auto& k : *s) known += (known.empty() ? "" : ", ") + k;
  throw UserError("unknown " + group + " option '" + key + "'", {}, "known " + group + " options: " + known);
}

}  // namespace

void SetPassOption(const std::string& key, const std::string& value) {
  api::Options& o = api::GlobalOptions();
  if (key == "machine") {
    o.machine = value;
  } else if (kNpuPassKeys.count(key)) {
    o.recorded["pass." + key] = value;
  } else {
    Unknown("pass", key, {"machine", "reciprocal_division"}, kNpuPassKeys);
  }
}

void SetPassOption(const std::string& key, int64_t value) {
  api::Options& o = api::GlobalOptions();
  if (key == "reciprocal_division") {
    o.reciprocal_division = value != 0;
  } else if (kNpuPassKeys.count(key)) {
    o.recorded["pass." + key] = std::to_string(value);
  } else {
    Unknown("pass", key, {"machine", "reciprocal_division"}, kNpuPassKeys);
  }
}

void SetRuntimeOption(const std::string& key, const std::string& value) {
  api::Options& o = api::GlobalOptions();
  if (key == "run_mode") {
    o.run_mode = ParseRunMode(value, "runtime option run_mode");
  } else if (key == "sched_mode") {
    o.sched_mode = ParseSchedMode(value, "runtime option sched_mode");
  } else if (kNpuRuntimeKeys.count(key)) {
    o.recorded["runtime." + key] = value;
  } else {
    Unknown("runtime", key, {"run_mode", "sched_mode", "workers", "timeout"}, kNpuRuntimeKeys);
  }
}

void SetRuntimeOption(const std::string& key, int64_t value) {
  api::Options& o = api::GlobalOptions();
  if (key == "workers") {
    if (value < 0) throw UserError("runtime option workers=" + std::to_string(value) + ": an int >= 0 (0: all cores)");
    o.workers = static_cast<int>(value);
  } else if (key == "timeout") {
    if (value < 0) throw UserError("runtime option timeout=" + std::to_string(value) + ": seconds >= 0");
    o.timeout_s = static_cast<double>(value);
  } else if (kNpuRuntimeKeys.count(key)) {
    o.recorded["runtime." + key] = std::to_string(value);
  } else {
    Unknown("runtime", key, {"run_mode", "sched_mode", "workers", "timeout"}, kNpuRuntimeKeys);
  }
}

void SetDebugOption(const std::string& key, const std::string& value) {
  api::Options& o = api::GlobalOptions();
  if (key == "dump_dir") {
    o.dump_dir = value;
  } else if (kNpuDebugKeys.count(key)) {
    o.recorded["debug." + key] = value;
  } else {
    Unknown("debug", key, {"dump_dir", "dump_passes", "compile_debug_mode"}, kNpuDebugKeys);
  }
}

void SetDebugOption(const std::string& key, int64_t value) {
  api::Options& o = api::GlobalOptions();
  if (key == "dump_passes" || key == "compile_debug_mode") {
    o.dump_passes = value != 0;
    if (o.dump_passes && o.dump_dir.empty()) o.dump_dir = "pypto_dumps";
  } else if (kNpuDebugKeys.count(key)) {
    o.recorded["debug." + key] = std::to_string(value);
  } else {
    Unknown("debug", key, {"dump_dir", "dump_passes", "compile_debug_mode"}, kNpuDebugKeys);
  }
}

void ResetOptions() { api::GlobalOptions() = api::Options(); }

}  // namespace config

// --- compiling and running --------------------------------------------------------------------

struct CompiledFunction::Impl {
  std::string name;
  std::shared_ptr<const CompiledProgram> program;
  std::shared_ptr<Runtime> runtime;
  size_t num_inputs = 0, num_outputs = 0;
};

namespace {

std::shared_ptr<CompiledFunction::Impl> CompileRecorded(const std::string& name, const Loc& loc) {
  std::shared_ptr<api::RecordedFunction> f = api::Lookup(name, loc);
  api::Options o = api::GlobalOptions();
  std::lock_guard<std::mutex> lock(f->mu);
  auto it = f->compiled.find(o.Key());
  if (it != f->compiled.end()) return it->second;
  CompileOptions co;
  co.machine = o.machine;
  co.reciprocal_division = o.reciprocal_division;
  co.dump_dir = o.dump_dir.empty() ? "" : o.dump_dir + "/" + name;
  co.dump_passes = o.dump_passes;
  auto impl = std::make_shared<CompiledFunction::Impl>();
  impl->name = name;
  impl->program = std::make_shared<const CompiledProgram>(Compile(f->fn, co));
  impl->runtime = std::make_shared<Runtime>(impl->program);
  impl->num_inputs = f->num_inputs;
  impl->num_outputs = f->num_outputs;
  f->compiled[o.Key()] = impl;
  return impl;
}

}  // namespace

CompiledFunction Compile(const std::string& name, Loc loc) { return CompiledFunction(CompileRecorded(name, loc)); }

void CompiledFunction::Run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) const {
  const Impl& c = *impl_;
  if (inputs.size() != c.num_inputs || outputs.size() != c.num_outputs)
    throw UserError("Run(\"" + c.name + "\"): the function takes " + std::to_string(c.num_inputs) + " inputs and " +
                    std::to_string(c.num_outputs) + " outputs, got " + std::to_string(inputs.size()) + " and " +
                    std::to_string(outputs.size()));
  // The runtime takes the parameters in recorded order: FUNCTION's inputs, then its outputs.
  // (A declared input the body writes becomes an output in the IR: it stays in its place here.)
  std::vector<HostTensor> params(inputs);
  params.insert(params.end(), outputs.begin(), outputs.end());
  const api::Options& o = api::GlobalOptions();
  RunOptions ro;
  ro.workers = o.workers;
  ro.sched_mode = o.sched_mode;
  ro.run_mode = o.run_mode;
  ro.timeout_s = o.timeout_s;
  c.runtime->Run(params, {}, ro);
}

std::string CompiledFunction::TensorGraph() const { return PrintTensorGraph(impl_->program->tensor_graph); }
std::string CompiledFunction::BlockGraph() const { return PrintBlockGraph(impl_->program->block_graph); }
std::string CompiledFunction::KernelSource() const { return impl_->runtime->NativeSource(); }
int CompiledFunction::NumKernels() const { return static_cast<int>(impl_->program->block_graph.kernels.size()); }

void Run(const std::string& name, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs,
         Loc loc) {
  try {
    CompiledFunction(CompileRecorded(name, loc)).Run(inputs, outputs);
  } catch (const UserError& e) {
    if (e.loc().known()) throw;
    throw UserError(e.message(), api::ToLoc(loc), e.hint());  // name the caller's Run line
  }
}

}  // namespace pypto
