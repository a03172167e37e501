#include "machine/machine.h"

#include "ir/error.h"

namespace pypto {

namespace {
const std::vector<MachineModel>& Machines() {
  // Rates: docs/sim.md gives the source of each (CANN platform configs, CANN documentation,
  // pto-isa's fitted cost model) or says it is an assumption.
  MachinePerf a2a3;
  a2a3.clock_ghz = 1.85;
  a2a3.hbm_gbps = 1600;
  a2a3.l2_bytes = int64_t{192} << 20;
  a2a3.gm_bytes_per_cycle = 32;
  a2a3.l2_bytes_per_cycle = 110;
  a2a3.l2_gbps = 3700;
  a2a3.gm_read_latency_cycles = 1400;
  a2a3.gm_write_latency_cycles = 300;
  a2a3.mte1_a_bytes_per_cycle = 512;
  a2a3.mte1_b_bytes_per_cycle = 256;
  a2a3.ub_to_gm_bytes_per_cycle = 64;
  a2a3.fix_bytes_per_cycle = 32;
  a2a3.cube_macs_per_cycle = 16 * 16 * 16;
  a2a3.vec_bytes_per_cycle = 256;
  a2a3.vec_instr_cycles = 30;
  a2a3.cube_instr_cycles = 6;
  a2a3.schedulers = 6;
  a2a3.dispatch_us = 0.45;
  MachinePerf a5 = a2a3;
  a5.clock_ghz = 1.65;
  a5.l2_bytes = int64_t{128} << 20;
  a5.gm_bytes_per_cycle = 31;
  a5.l2_bytes_per_cycle = 100;
  a5.l2_gbps = 3700;
  a5.mte1_a_bytes_per_cycle = 256;
  a5.ub_to_gm_bytes_per_cycle = 128;
  a5.fix_bytes_per_cycle = 31;
  static const std::vector<MachineModel> m = {
      {"a2a3", 192 * 1024, 512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024, 48, 24, 32, true, a2a3},
      {"a5", 256 * 1024, 512 * 1024, 64 * 1024, 64 * 1024, 256 * 1024, 64, 32, 32, true, a5},
      // The host: a core's share of L2 stands for UB; tiles need no block alignment.
      {"cpu", 512 * 1024, 1024 * 1024, 256 * 1024, 256 * 1024, 256 * 1024, 0, 0, 64, false, {}},
  };
  return m;
}
}  // namespace

const MachineModel& GetMachine(const std::string& name) {
  for (auto& m : Machines())
    if (m.name == name) return m;
  std::string names;
  for (auto& n : MachineNames()) names += (names.empty() ? "" : ", ") + n;
  throw UserError("unknown machine '" + name + "'", {}, "use one of: " + names);
}

std::vector<std::string> MachineNames() {
  std::vector<std::string> n;
  for (auto& m : Machines()) n.push_back(m.name);
  return n;
}

}  // namespace pypto
