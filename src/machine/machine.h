// Machine descriptions: the capacities a program must fit and, for the NPU models, the rates
// the simulator predicts a schedule from. "a2a3" follows an Ascend 910B-class chip (CANN's
// Ascend910B1 platform config), "a5" an Ascend 950PR; "cpu" is this host, where a core's private
// L2 plays the part of UB. Every number's source is in docs/sim.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pypto {

/// Rates of an NPU model (all per core unless said). Zero clock: no performance model.
struct MachinePerf {
  double clock_ghz = 0;                 // AI core clock
  double hbm_gbps = 0;                  // global memory bandwidth of the chip (GB/s)
  int64_t l2_bytes = 0;                 // chip L2 cache
  double gm_bytes_per_cycle = 0;        // one core's global-memory rate (read or write)
  double l2_bytes_per_cycle = 0;        // one core's L2 read rate
  double l2_gbps = 0;                   // L2 read bandwidth of the chip, all cores together (GB/s)
  double gm_read_latency_cycles = 0;    // a TLOAD's first bytes
  double gm_write_latency_cycles = 0;   // a TSTORE's
  double mte1_a_bytes_per_cycle = 0;    // L1 -> L0A
  double mte1_b_bytes_per_cycle = 0;    // L1 -> L0B
  double ub_to_gm_bytes_per_cycle = 0;  // MTE3 issue rate (bounded by gm_bytes_per_cycle)
  double fix_bytes_per_cycle = 0;       // L0C -> global memory (fixpipe)
  double cube_macs_per_cycle = 0;       // fp16/bf16 multiply-adds per cycle (int8: 2x, fp32: 1/4)
  double vec_bytes_per_cycle = 0;       // a simple vector instruction (tile-scalar, cast, copy)
  double vec_instr_cycles = 0;          // fixed cost of each vector instruction (issue, head)
  double cube_instr_cycles = 0;         // fixed cost of each cube / MTE1 / fixpipe instruction
  int schedulers = 0;                   // AICPU threads dispatching tasks
  double dispatch_us = 0;               // one task's dispatch on one scheduler
  bool has_model() const { return clock_ghz > 0; }
};

struct MachineModel {
  std::string name;
  int64_t ub_bytes;   // vector core unified buffer
  int64_t l1_bytes;   // cube core L1
  int64_t l0a_bytes, l0b_bytes, l0c_bytes;
  int aiv_cores, aic_cores;
  int64_t ub_align;   // byte alignment of tiles in UB
  bool npu;           // an NPU model: tile rows must be whole 32-byte blocks
  MachinePerf perf;   // the simulator's rates (NPU models only)
};

/// Known names: "cpu" (default: this host), "a2a3", "a5" (NPU models). Throws UserError for
/// others.
const MachineModel& GetMachine(const std::string& name);
std::vector<std::string> MachineNames();

}  // namespace pypto
