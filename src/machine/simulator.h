// The NPU machine model's simulation: replays the launches of a call (as the runtime made them:
// kernel, grid, bound symbols, dependencies) on a modeled chip. Each grid point is a task on a
// modeled core of its kernel's kind (AIC for cube kernels, AIV for vector ones); a task's time
// comes from the cost of each PTO instruction on its pipe (MTE2, MTE1, M, FIX, V, MTE3) from the
// machine's rates and the tiles' valid shapes; pipes overlap within a task and between the
// consecutive tasks of a launch on a core (double buffering), global-memory bandwidth is shared
// by the cores that stream at once, re-reads of a tensor that fits L2 come from L2, and tasks
// are dispatched by the AICPU schedulers. docs/sim.md describes the model and its limits.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ir/block_graph.h"
#include "machine/machine.h"

namespace pypto {

enum class Pipe : uint8_t { MTE2, MTE1, M, FIX, V, MTE3 };
constexpr int kNumPipes = 6;
const char* PipeName(Pipe p);

/// One launch instance of the call to replay.
struct SimLaunch {
  int kernel = -1;
  std::vector<int64_t> grid;
  SymEnv env;
  std::vector<int> deps;  // earlier launch instances it waits for
};

/// One task (grid point) on a modeled core.
struct SimTask {
  int core = 0;  // index among the cores of its kind
  CoreKind kind = CoreKind::AIV;
  int launch = -1, kernel = -1;
  int64_t point = 0;
  double start_us = 0, end_us = 0;
  std::array<double, kNumPipes> pipe_us{};  // busy time of each pipe within the task
};

struct SimKernelStats {
  int kernel = -1;
  std::string name;
  CoreKind core = CoreKind::AIV;
  int64_t launches = 0, tasks = 0;
  double busy_us = 0;  // sum of its tasks' durations
  std::array<double, kNumPipes> pipe_us{};
  double hbm_read_bytes = 0, l2_read_bytes = 0, write_bytes = 0, cube_flops = 0;
};

struct SimResult {
  std::string machine;
  double total_us = 0;
  // Lower bounds from each resource alone: all global-memory traffic at the chip's bandwidth,
  // all cube work at peak on every AIC, all vector work on every AIV, all tasks through the
  // schedulers. `bound` names the largest.
  double memory_us = 0, cube_us = 0, vector_us = 0, dispatch_us = 0;
  std::string bound;
  double utilization_aic = 0, utilization_aiv = 0;  // busy time / (cores x total)
  double hbm_read_bytes = 0, l2_read_bytes = 0, write_bytes = 0, cube_flops = 0;
  std::array<double, kNumPipes> pipe_us{};  // summed over all cores
  std::vector<SimTask> tasks;
  std::vector<SimKernelStats> kernels;
};

/// Replays `launches` (in creation order) of program `g` on machine `m`; UserError when `m` has
/// no performance model (the host, "cpu").
SimResult Simulate(const ExecGraph& g, const std::vector<SimLaunch>& launches, const MachineModel& m);

}  // namespace pypto
