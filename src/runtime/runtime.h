// The runtime: binds the caller's buffers, walks the control program (runtime loops and
// launches), turns every launch into tasks (one per chunk of grid points) whose dependencies
// follow from the tensor regions they read and write, and runs them on worker threads.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/program.h"
#include "pypto/host_tensor.h"

namespace pypto {
namespace rt {
struct CallPlan;
}

/// How a call's kernels run: the generated native code ("cpu") or the block interpreter
/// ("interp"). Parsed from its name once (ParseRunMode), at the front doors.
enum class RunMode : uint8_t { Native, Interp };
/// The ready queue's policy ("fifo" or "lifo").
enum class SchedMode : uint8_t { Fifo, Lifo };

/// RunMode of "cpu" / "interp", SchedMode of "fifo" / "lifo": a UserError naming `what` and
/// the values otherwise. The one place these names are checked.
RunMode ParseRunMode(const std::string& name, const std::string& what = "run_mode");
SchedMode ParseSchedMode(const std::string& name, const std::string& what = "sched_mode");
const char* RunModeName(RunMode m);
const char* SchedModeName(SchedMode m);

struct RunOptions {
  int workers = 0;                         // 0: one per hardware thread
  SchedMode sched_mode = SchedMode::Fifo;  // ready-queue policy
  bool trace = false;                      // record a TaskEvent per task
  RunMode run_mode = RunMode::Native;      // generated native kernels, or the interpreter
  double timeout_s = 0;                    // > 0: cancel the call after this long (UserError)
  // Polled on the calling thread about every 50 ms while the call runs (the control program's
  // walk included); returning true cancels the call with Interrupted. Python's Ctrl-C check.
  std::function<bool()> interrupted;
};

/// A call cancelled by RunOptions::interrupted (the caller knows why: e.g. a pending
/// KeyboardInterrupt). Tasks already started finish; the runtime is usable for the next call.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("the call was interrupted") {}
};

/// One executed task, for swimlanes.
struct TaskEvent {
  int worker;
  int launch;  // launch instance id (in call order)
  int kernel;
  int64_t first_point, num_points;  // grid points the task ran
  int64_t start_ns, end_ns;         // since the start of the run
};

/// One launch instance as the control program made it (with trace): what a machine model needs
/// to replay the call (its kernel, evaluated grid and the symbols bound then).
struct LaunchRecord {
  int kernel = -1;
  std::vector<int64_t> grid;
  SymEnv env;
};

struct RunStats {
  double compile_ms = 0;  // kernel compilation in this call (0 when cached)
  int64_t tasks = 0;
  int64_t launches = 0;
  int64_t pointwise_links = 0;  // dependencies waited for point by point (chunk i on chunk i)
  // build_ms: from the call to the first task (binding; the control program too unless it
  // overlaps execution); control_ms: walking the control program (making the launches);
  // exec_ms: from the first task on (trace times count from there).
  double build_ms = 0, exec_ms = 0, control_ms = 0;
  bool control_overlapped = false;  // many launches: the control program ran beside the workers
  std::vector<TaskEvent> events;
  std::vector<std::vector<int>> deps;            // with trace: the launches each launch waited for
  std::vector<std::vector<int>> pointwise_deps;  // with trace: those of `deps` waited for point-wise
  std::vector<LaunchRecord> launch_records;      // with trace: each launch instance, by id
};

class Runtime {
 public:
  explicit Runtime(std::shared_ptr<const CompiledProgram> program);

  /// Checks the parameters' dtypes and shapes against the signature and binds the dynamic
  /// dims. Throws UserError naming the parameter, the expected and the given shape.
  SymEnv BindShapes(const std::vector<HostTensor>& params) const;
  /// True when a dynamic dim is 0 and every output is empty (Run then runs nothing); throws
  /// UserError when a dynamic dim is 0 but an output is not empty.
  bool HasEmptyDim(const SymEnv& env) const;
  /// Shapes of the returned tensors for these dynamic dims.
  std::vector<std::vector<int64_t>> ReturnShapes(const SymEnv& env) const;
  /// For each returned tensor: whether a call with these dims stores to every element of it
  /// (output_coverage.h), so its buffer need not start zeroed. Remembered per set of dims.
  std::vector<bool> ReturnsWrittenWhole(const SymEnv& env) const;
  /// Runs the function. `params` in parameter order; `returns` preallocated with ReturnShapes.
  /// `env`: what BindShapes gave for these params, when the caller has it (else bound here).
  RunStats Run(const std::vector<HostTensor>& params, const std::vector<HostTensor>& returns,
               const RunOptions& opts = {}, const SymEnv* env = nullptr) const;

  const CompiledProgram& program() const { return *program_; }
  /// The generated C++ of every kernel (generates it on first use).
  const std::string& NativeSource() const;
  /// The cube paths the loaded kernels were compiled with (their pypto_cube_paths(); "" before
  /// the first native call).
  std::string NativeCubePaths() const;

 private:
  struct Native;
  const Native& GetNative(double* compile_ms) const;
  static std::vector<int64_t> PlanKey(const std::vector<HostTensor>& params, const std::vector<HostTensor>& returns,
                                      const SymEnv& env, const RunOptions& opts);
  static constexpr size_t kMaxPlans = 16;               // sets of dims kept per program
  static constexpr int64_t kMaxPlanLaunches = 1 << 16;  // instances a kept plan may hold

  std::shared_ptr<const CompiledProgram> program_;
  mutable std::mutex coverage_mu_;
  mutable std::map<std::vector<std::pair<std::string, int64_t>>, std::vector<bool>> coverage_;
  // Call plans (call_state.h), by workers, scheduling mode, parameter layouts and dims.
  mutable std::mutex plans_mu_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<rt::CallPlan>> plans_;
  mutable std::atomic<int> plannable_{-1};  // CallState::Plannable, once
  mutable std::mutex native_mu_;
  mutable std::shared_ptr<Native> native_;
  // Kernels of an earlier CPU level (PYPTO_CPU_ISA changed): kept, a call may still run them.
  mutable std::vector<std::shared_ptr<Native>> retired_;
};

}  // namespace pypto
