#include "bindings/sim_bindings.h"

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>

#include "machine/links.h"
#include "machine/simulator.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace pypto {

namespace {
nb::dict Pipes(const std::array<double, kNumPipes>& us) {
  nb::dict d;
  for (int q = 0; q < kNumPipes; ++q) d[PipeName(static_cast<Pipe>(q))] = us[q];
  return d;
}

nb::dict LinkDict(const LinkSpec& s) {
  nb::dict d;
  d["level"] = LinkLevelName(s.level);
  d["name"] = s.name;
  d["topology"] = LinkTopologyName(s.topology);
  d["gbps"] = s.gbps;
  d["links"] = s.links;
  d["rank_gbps"] = s.RankGbps();
  d["fabric_gbps"] = s.fabric_gbps;
  d["latency_us"] = s.latency_us;
  d["max_ranks"] = s.max_ranks;
  d["reduce_gbps"] = s.reduce_gbps;
  d["source"] = s.source;
  return d;
}

nb::list LinkSpecs(const std::string& machine) {
  nb::list l;
  for (auto& s : MachineLinks(machine)) l.append(LinkDict(s));
  return l;
}

nb::dict CollectiveTimeToDict(const std::string& op, double nbytes, int64_t nranks, const std::string& level,
                              const std::string& algorithm, const std::string& machine) {
  CollectiveEstimate e = CollectiveTime(op, algorithm, nbytes, nranks, level, machine);
  nb::dict d;
  d["machine"] = e.machine;
  d["op"] = CollectiveOpName(e.op);
  d["algorithm"] = CollectiveAlgoName(e.algorithm);
  d["level"] = LinkLevelName(e.level);
  d["nbytes"] = e.bytes;
  d["nranks"] = e.nranks;
  d["steps"] = e.steps;
  d["latency_us"] = e.latency_us;
  d["bandwidth_us"] = e.bandwidth_us;
  d["reduce_us"] = e.reduce_us;
  d["total_us"] = e.total_us;
  d["link"] = e.link;
  nb::list phases;
  for (auto& p : e.phases) {
    nb::dict q;
    q["op"] = CollectiveOpName(p.op);
    q["level"] = LinkLevelName(p.level);
    q["link"] = p.link;
    q["nranks"] = p.nranks;
    q["nbytes"] = p.bytes;
    q["steps"] = p.steps;
    q["latency_us"] = p.latency_us;
    q["bandwidth_us"] = p.bandwidth_us;
    q["reduce_us"] = p.reduce_us;
    q["total_us"] = p.total_us();
    phases.append(q);
  }
  d["phases"] = phases;
  return d;
}

}  // namespace

// pypto._core's link-model functions (pypto.sim.links / collective_time).
void BindLinks(nb::module_& m) {
  m.def("link_specs", &LinkSpecs, "machine"_a = "a2a3",
        "The link of each level of NPU machine `machine`, innermost first (src/machine/links.h).");
  m.def("collective_time", &CollectiveTimeToDict, "op"_a, "nbytes"_a, "nranks"_a, "level"_a = "HOST",
        "algorithm"_a = "ring", "machine"_a = "a2a3",
        "The link model's time of a collective (src/machine/links.h): steps, latency, bandwidth and reduce "
        "parts, the links used and the phase of each level.");
}

nb::dict SimulateToDict(const ExecGraph& g, const nb::list& launches, const std::vector<std::vector<int>>& deps,
                        const std::string& machine) {
  std::vector<SimLaunch> in;
  for (size_t i = 0; i < launches.size(); ++i) {
    nb::tuple t = nb::cast<nb::tuple>(launches[i]);
    SimLaunch l;
    l.kernel = nb::cast<int>(t[0]);
    l.grid = nb::cast<std::vector<int64_t>>(t[1]);
    for (auto& [k, v] : nb::cast<std::map<std::string, int64_t>>(t[2])) l.env[k] = v;
    if (i < deps.size()) l.deps = deps[i];
    in.push_back(std::move(l));
  }
  SimResult r;
  {
    nb::gil_scoped_release release;
    r = Simulate(g, in, GetMachine(machine));
  }
  nb::dict d;
  d["machine"] = r.machine;
  d["total_us"] = r.total_us;
  d["bound"] = r.bound;
  nb::dict bounds;
  bounds["memory"] = r.memory_us;
  bounds["cube"] = r.cube_us;
  bounds["vector"] = r.vector_us;
  bounds["dispatch"] = r.dispatch_us;
  d["bounds_us"] = bounds;
  nb::dict util;
  util["AIC"] = r.utilization_aic;
  util["AIV"] = r.utilization_aiv;
  d["utilization"] = util;
  d["hbm_read_bytes"] = r.hbm_read_bytes;
  d["l2_read_bytes"] = r.l2_read_bytes;
  d["write_bytes"] = r.write_bytes;
  d["cube_flops"] = r.cube_flops;
  d["pipes_us"] = Pipes(r.pipe_us);
  nb::list kernels;
  for (auto& k : r.kernels) {
    if (k.tasks == 0) continue;
    nb::dict e;
    e["kernel"] = k.kernel;
    e["name"] = k.name;
    e["core"] = CoreKindName(k.core);
    e["launches"] = k.launches;
    e["tasks"] = k.tasks;
    e["busy_us"] = k.busy_us;
    e["pipes_us"] = Pipes(k.pipe_us);
    e["hbm_read_bytes"] = k.hbm_read_bytes;
    e["l2_read_bytes"] = k.l2_read_bytes;
    e["write_bytes"] = k.write_bytes;
    e["cube_flops"] = k.cube_flops;
    kernels.append(e);
  }
  d["kernels"] = kernels;
  // Tasks as columns (a simulation can have many): core kind, core, launch, kernel, point,
  // start, end, then each pipe's busy time.
  std::vector<std::string> kind;
  std::vector<int> core, launch, kernel;
  std::vector<int64_t> point;
  std::vector<double> start, end;
  std::vector<std::vector<double>> pipes(kNumPipes);
  for (auto& t : r.tasks) {
    kind.push_back(CoreKindName(t.kind));
    core.push_back(t.core);
    launch.push_back(t.launch);
    kernel.push_back(t.kernel);
    point.push_back(t.point);
    start.push_back(t.start_us);
    end.push_back(t.end_us);
    for (int q = 0; q < kNumPipes; ++q) pipes[q].push_back(t.pipe_us[q]);
  }
  nb::dict tasks;
  tasks["kind"] = kind;
  tasks["core"] = core;
  tasks["launch"] = launch;
  tasks["kernel"] = kernel;
  tasks["point"] = point;
  tasks["start_us"] = start;
  tasks["end_us"] = end;
  for (int q = 0; q < kNumPipes; ++q) tasks[PipeName(static_cast<Pipe>(q))] = pipes[q];
  d["tasks"] = tasks;
  return d;
}

nb::dict MachineInfo(const std::string& name) {
  const MachineModel& m = GetMachine(name);
  const MachinePerf& f = m.perf;
  nb::dict d;
  d["name"] = m.name;
  d["npu"] = m.npu;
  d["aic_cores"] = m.aic_cores;
  d["aiv_cores"] = m.aiv_cores;
  d["ub_bytes"] = m.ub_bytes;
  d["l1_bytes"] = m.l1_bytes;
  d["l0a_bytes"] = m.l0a_bytes;
  d["l0b_bytes"] = m.l0b_bytes;
  d["l0c_bytes"] = m.l0c_bytes;
  d["has_model"] = f.has_model();
  d["clock_ghz"] = f.clock_ghz;
  d["gm_bandwidth_gbps"] = f.hbm_gbps;
  d["l2_bytes"] = f.l2_bytes;
  d["l2_bandwidth_gbps"] = f.l2_gbps;
  d["gm_bytes_per_cycle_per_core"] = f.gm_bytes_per_cycle;
  d["l2_bytes_per_cycle_per_core"] = f.l2_bytes_per_cycle;
  d["gm_read_latency_cycles"] = f.gm_read_latency_cycles;
  d["gm_write_latency_cycles"] = f.gm_write_latency_cycles;
  d["mte1_a_bytes_per_cycle"] = f.mte1_a_bytes_per_cycle;
  d["mte1_b_bytes_per_cycle"] = f.mte1_b_bytes_per_cycle;
  d["mte3_bytes_per_cycle"] = f.ub_to_gm_bytes_per_cycle;
  d["fix_bytes_per_cycle"] = f.fix_bytes_per_cycle;
  d["cube_macs_per_cycle"] = f.cube_macs_per_cycle;
  // Peaks of the whole chip (fp16/bf16; int8 twice as fast, fp32 a quarter).
  double peak = 2 * f.cube_macs_per_cycle * f.clock_ghz * 1e9 * m.aic_cores;
  d["cube_fp16_tflops"] = peak / 1e12;
  d["cube_int8_tops"] = 2 * peak / 1e12;
  d["cube_fp32_tflops"] = peak / 4 / 1e12;
  d["vec_bytes_per_cycle"] = f.vec_bytes_per_cycle;
  d["vec_instr_cycles"] = f.vec_instr_cycles;
  d["cube_instr_cycles"] = f.cube_instr_cycles;
  d["schedulers"] = f.schedulers;
  d["dispatch_us"] = f.dispatch_us;
  return d;
}

}  // namespace pypto
