#include "runtime/runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "codegen/cpp_codegen.h"
#include "runtime/call_state.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernel_cache.h"
#include "runtime/output_coverage.h"

namespace pypto {

RunMode ParseRunMode(const std::string& name, const std::string& what) {
  if (name == "cpu") return RunMode::Native;
  if (name == "interp") return RunMode::Interp;
  throw UserError(what + "=\"" + name + "\" is not a run mode", {},
                  "use \"cpu\" (the generated native kernels) or \"interp\" (the interpreter)");
}

SchedMode ParseSchedMode(const std::string& name, const std::string& what) {
  if (name == "fifo") return SchedMode::Fifo;
  if (name == "lifo") return SchedMode::Lifo;
  throw UserError(what + "=\"" + name + "\" is not a scheduling mode", {}, "use \"fifo\" or \"lifo\"");
}

const char* RunModeName(RunMode m) { return m == RunMode::Native ? "cpu" : "interp"; }
const char* SchedModeName(SchedMode m) { return m == SchedMode::Fifo ? "fifo" : "lifo"; }

using rt::CallPlan;
using rt::CallState;
using rt::Dims;

struct Runtime::Native {
  GeneratedModule module;
  KernelLibrary library;
};

Runtime::Runtime(std::shared_ptr<const CompiledProgram> program) : program_(std::move(program)) {}

const Runtime::Native& Runtime::GetNative(double* compile_ms) const {
  std::lock_guard<std::mutex> lock(native_mu_);
  // A different CPU level (PYPTO_CPU_ISA changed since) loads the kernels compiled for it.
  if (!native_ || native_->library.entries.empty() || native_->library.isa_flags != ChooseCpuIsa().flags) {
    auto n = native_;
    if (!n || !n->library.entries.empty()) {
      if (n) retired_.push_back(n);
      n = std::make_shared<Native>();
      if (native_) n->module = native_->module;
    }
    if (n->module.source.empty()) n->module = GenerateCpp(program_->exec_graph.fn, program_->exec_graph.kernels);
    native_ = n;
    n->library = LoadKernelLibrary(n->module.source, n->module.entry_points);
    if (compile_ms) *compile_ms = n->library.compile_ms;
  }
  return *native_;
}

std::string Runtime::NativeCubePaths() const {
  std::lock_guard<std::mutex> lock(native_mu_);
  return native_ ? native_->library.cube_paths : "";
}

const std::string& Runtime::NativeSource() const {
  std::lock_guard<std::mutex> lock(native_mu_);
  if (!native_) {
    native_ = std::make_shared<Native>();
    native_->module = GenerateCpp(program_->exec_graph.fn, program_->exec_graph.kernels);
  }
  return native_->module.source;
}

SymEnv Runtime::BindShapes(const std::vector<HostTensor>& params) const {
  const Function& fn = program_->tensor_graph;
  if (params.size() != fn.param_values.size())
    throw UserError("@" + fn.name + " takes " + std::to_string(fn.param_values.size()) + " tensor arguments, got " +
                    std::to_string(params.size()));
  SymEnv env;
  for (size_t i = 0; i < params.size(); ++i) {
    const Value& v = fn.value(fn.param_values[i]);
    const HostTensor& t = params[i];
    // Messages are built only on failure: this runs on every call.
    auto expected_str = [&] { return std::string(DataTypeName(v.dtype)) + ShapeStr(v.shape); };
    auto given_str = [&] { return std::string(DataTypeName(t.dtype)) + Dims(t.shape); };
    if (t.dtype != v.dtype)
      throw UserError("@" + fn.name + ": parameter '" + fn.params[i] + "' expects dtype " + DataTypeName(v.dtype) +
                          ", got " + DataTypeName(t.dtype) + " (expected " + expected_str() + ", given " + given_str() +
                          ")",
                      v.loc,
                      v.dtype == DataType::BF16
                          ? "pass a torch.bfloat16 tensor, or bf16 bit patterns as numpy uint16: pypto.to_bf16(x)"
                          : std::string("convert the array to ") + DataTypeName(v.dtype) + ", e.g. with x.astype(...)");
    if (t.shape.size() != v.shape.size())
      throw UserError("@" + fn.name + ": parameter '" + fn.params[i] + "' expects rank " +
                          std::to_string(v.shape.size()) + " " + expected_str() + ", got " + given_str(),
                      v.loc);
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const Expr& e = v.shape[d];
      if (e.kind() == ExprKind::Var && !env.count(e.var_name())) {
        // A dynamic dim may be 0 (an empty batch): Run then makes empty outputs, as numpy does.
        env[e.var_name()] = t.shape[d];
        continue;
      }
      int64_t want = e.Eval(env);
      if (want != t.shape[d])
        throw UserError("@" + fn.name + ": parameter '" + fn.params[i] + "' expects shape " + expected_str() +
                            ", got " + Dims(t.shape) + ", which does not match the shape of the annotation (dim " +
                            std::to_string(d) + " should be " + std::to_string(want) + ")",
                        v.loc, "pass an array of the annotated shape, or mark the dim pypto.DYNAMIC");
    }
  }
  for (const DimAssumption& a : fn.assumptions) {
    int64_t l = a.lhs.Eval(env), r = a.rhs.Eval(env);
    if (l != r)
      throw UserError("@" + fn.name + ": " + a.what + ": " + a.lhs.str() + " = " + std::to_string(l) + " but " +
                          a.rhs.str() + " = " + std::to_string(r) + " in this call",
                      a.loc, "pass arrays whose shapes agree");
  }
  return env;
}

std::vector<std::vector<int64_t>> Runtime::ReturnShapes(const SymEnv& env) const {
  const Function& fn = program_->tensor_graph;
  std::vector<std::vector<int64_t>> out;
  for (int r : fn.returns) {
    std::vector<int64_t> s;
    for (auto& d : fn.value(r).shape) s.push_back(d.Eval(env));
    out.push_back(s);
  }
  return out;
}

std::vector<bool> Runtime::ReturnsWrittenWhole(const SymEnv& env) const {
  std::vector<std::pair<std::string, int64_t>> key(env.begin(), env.end());
  std::sort(key.begin(), key.end());
  {
    std::lock_guard<std::mutex> lock(coverage_mu_);
    if (auto it = coverage_.find(key); it != coverage_.end()) return it->second;
  }
  std::vector<bool> whole = pypto::ReturnsWrittenWhole(program_->exec_graph, env);
  std::lock_guard<std::mutex> lock(coverage_mu_);
  if (coverage_.size() >= 64) coverage_.clear();  // (dims that change every call: keep it small)
  coverage_[key] = whole;
  return whole;
}

bool Runtime::HasEmptyDim(const SymEnv& env) const {
  const Function& fn = program_->tensor_graph;
  bool empty_dim = false;
  for (auto& name : fn.dynamic_vars)
    if (auto it = env.find(name); it != env.end() && it->second == 0) empty_dim = true;
  if (!empty_dim) return false;
  // An op that turns an empty input into a non-empty result reduces over the empty dim (numpy:
  // 0 for sum, an error for max; a matmul with K = 0): refused, naming the op. A shape that
  // depends on a loop index has no value here; such an op is checked by the runtime's windows.
  auto elements = [&](int v) -> int64_t {
    int64_t n = 1;
    try {
      for (auto& d : fn.value(v).shape) n *= d.Eval(env);
    } catch (const UserError&) {
      return -1;
    }
    return n;
  };
  fn.body.ForEach([&](const OpCall& op) {
    if (op.output < 0 || elements(op.output) <= 0) return;
    for (int in : op.inputs) {
      if (elements(in) != 0) continue;
      throw UserError("@" + fn.name + ": pypto." + op.op + " of %" + fn.value(in).name + " " +
                          ShapeStr(fn.value(in).shape) + " gives %" + fn.value(op.output).name + " " +
                          ShapeStr(fn.value(op.output).shape) +
                          ", which is not empty, while a dynamic dim is 0: reductions over an empty dim are not "
                          "supported",
                      op.loc, "skip the call for an empty input, or give the dim at least one element");
    }
  });
  // Every output empty: nothing to compute, no kernel runs; else the call runs and its empty
  // windows launch nothing.
  for (int o : fn.outputs)
    if (elements(o) != 0) return false;
  return true;
}

RunStats Runtime::Run(const std::vector<HostTensor>& params, const std::vector<HostTensor>& returns,
                      const RunOptions& opts, const SymEnv* bound) const {
  auto t0 = std::chrono::steady_clock::now();
  SymEnv env = bound ? *bound : BindShapes(params);
  const Function& fn = program_->tensor_graph;
  auto shapes = ReturnShapes(env);
  if (returns.size() != fn.returns.size()) throw InternalError("wrong number of return buffers");
  if (HasEmptyDim(env)) return RunStats{};
  double compile_ms = 0;
  const Native* native = opts.run_mode == RunMode::Native ? &GetNative(&compile_ms) : nullptr;
  CallState call(*program_, opts, env, native ? &native->module.symbols : nullptr,
                 native ? &native->library.entries : nullptr);
  for (size_t i = 0; i < params.size(); ++i) call.BindParam(fn.param_values[i], params[i]);
  for (size_t i = 0; i < returns.size(); ++i) {
    if (returns[i].shape != shapes[i] || returns[i].dtype != fn.value(fn.returns[i]).dtype)
      throw InternalError("return buffer has the wrong shape");
    call.BindParam(fn.returns[i], returns[i]);
  }
  // A plan of an earlier call with the same layouts (call_state.h): replayed when no other call
  // holds it; recorded by the first call of its key.
  std::shared_ptr<CallPlan> plan;
  std::vector<int64_t> key;
  bool record = false;
  if (native && !opts.trace) {
    if (plannable_ < 0) plannable_ = CallState::Plannable(*program_);
    if (plannable_) {
      key = PlanKey(params, returns, env, opts);
      std::lock_guard<std::mutex> lock(plans_mu_);
      auto it = plans_.find(key);
      if (it != plans_.end())
        plan = it->second;
      else
        record = plans_.size() < kMaxPlans;
    }
  }
  std::unique_lock<std::mutex> busy;
  if (plan) {
    busy = std::unique_lock<std::mutex>(plan->busy, std::try_to_lock);
    if (!busy.owns_lock()) {
      plan.reset();  // (another call replays it: this one walks the program)
    } else if (!call.Replay(*plan)) {
      busy.unlock();  // (its instances went with a call that failed: walk)
      plan.reset();
    }
  } else if (record) {
    call.RecordPlan();
  }
  double bind_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  RunStats s;
  try {
    s = call.Execute();
  } catch (...) {
    if (plan) {  // its instances went with the failed call
      std::lock_guard<std::mutex> lock(plans_mu_);
      plans_.erase(key);
    }
    throw;
  }
  if (plan) {
    call.ReturnPlan(*plan);
  } else if (record && s.launches <= kMaxPlanLaunches) {
    std::shared_ptr<CallPlan> made = call.TakePlan();
    std::lock_guard<std::mutex> lock(plans_mu_);
    plans_.emplace(std::move(key), std::move(made));
  }
  s.build_ms += bind_ms;
  s.compile_ms = compile_ms;
  return s;
}

// What a call plan depends on besides the program: the workers (chunking), the scheduling mode,
// each parameter's dtype, shape and strides, and the values of the dims.
std::vector<int64_t> Runtime::PlanKey(const std::vector<HostTensor>& params, const std::vector<HostTensor>& returns,
                                      const SymEnv& env, const RunOptions& opts) {
  static const int kHardwareThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int64_t> key{opts.workers > 0 ? opts.workers : kHardwareThreads, static_cast<int64_t>(opts.sched_mode)};
  for (auto* list : {&params, &returns})
    for (auto& t : *list) {
      key.push_back(static_cast<int64_t>(t.dtype));
      key.push_back(static_cast<int64_t>(t.shape.size()));
      key.insert(key.end(), t.shape.begin(), t.shape.end());
      key.push_back(static_cast<int64_t>(t.strides.size()));
      key.insert(key.end(), t.strides.begin(), t.strides.end());
    }
  std::vector<std::pair<const std::string*, int64_t>> dims;
  for (auto& [name, v] : env) dims.push_back({&name, v});
  std::sort(dims.begin(), dims.end(), [](auto& a, auto& b) { return *a.first < *b.first; });
  for (auto& d : dims) key.push_back(d.second);
  return key;
}

}  // namespace pypto
