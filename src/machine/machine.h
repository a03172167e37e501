// Machine descriptions: the capacities a program must fit. The "a2a3" model follows an
// Ascend 910B-class AI core (per-core UB and L0/L1 buffers); "cpu" is this host, where a
// core's private L2 plays the part of UB.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pypto {

struct MachineModel {
  std::string name;
  int64_t ub_bytes;   // vector core unified buffer
  int64_t l1_bytes;   // cube core L1
  int64_t l0a_bytes, l0b_bytes, l0c_bytes;
  int aiv_cores, aic_cores;
  int64_t ub_align;   // byte alignment of tiles in UB
  bool npu;           // an NPU model: tile rows must be whole 32-byte blocks
};

/// Known names: "cpu" (default: this host), "a2a3", "a5" (NPU models). Throws UserError for
/// others.
const MachineModel& GetMachine(const std::string& name);
std::vector<std::string> MachineNames();

}  // namespace pypto
