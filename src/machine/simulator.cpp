#include "machine/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>

#include "ir/dtype.h"
#include "ir/error.h"

namespace pypto {

const char* PipeName(Pipe p) {
  switch (p) {
    case Pipe::MTE2:
      return "MTE2";
    case Pipe::MTE1:
      return "MTE1";
    case Pipe::M:
      return "M";
    case Pipe::FIX:
      return "FIX";
    case Pipe::V:
      return "V";
    case Pipe::MTE3:
      return "MTE3";
  }
  return "?";
}

namespace {

int P(Pipe p) { return static_cast<int>(p); }

/// What one grid point of a kernel does, in cycles per pipe and bytes per global tensor.
struct PointCost {
  std::array<double, kNumPipes> cycles{};
  std::map<int, double> read_bytes;  // by memory root
  double write_bytes = 0;
  double cube_flops = 0;
  int loads = 0, stores = 0;
  double load_bytes = 0;  // all TLOADs from global memory
};

// Vector instruction cost classes (cycles per element on top of a fixed cost), after pto-isa's
// fitted A2/A3 cost model (docs/sim.md): simple ops stream vec_bytes_per_cycle, tile-tile ops at
// half that, transcendental ones ~32 elements per cycle, division ~13, row reductions ~18.
enum class VecClass { Simple, TileTile, Transcendental, Math, Divide, RowReduce, Irregular };

VecClass ClassOf(Opcode op) {
  switch (op) {
    case Opcode::TEXP:
    case Opcode::TLOG:
    case Opcode::TSQRT:
    case Opcode::TRSQRT:
    case Opcode::TROWEXPANDEXPDIF:
    case Opcode::TCOLEXPANDEXPDIF:
      return VecClass::Transcendental;
    case Opcode::TDIV:
    case Opcode::TDIVS:
    case Opcode::TRECIP:
    case Opcode::TROWEXPANDDIV:
    case Opcode::TCOLEXPANDDIV:
    case Opcode::TREM:
    case Opcode::TREMS:
      return VecClass::Divide;
    case Opcode::TROWSUM:
    case Opcode::TROWMAX:
    case Opcode::TROWMIN:
    case Opcode::TROWPROD:
      return VecClass::RowReduce;
    case Opcode::TROWARGMAX:
    case Opcode::TROWARGMIN:
    case Opcode::TCOLARGMAX:
    case Opcode::TCOLARGMIN:
    case Opcode::TROWCUMSUM:
    case Opcode::TROWCUMPROD:
    case Opcode::TCOLCUMSUM:
    case Opcode::TCOLCUMPROD:
    case Opcode::TROWTOPK:
    case Opcode::TROWTOPKIDX:
    case Opcode::TCOLGATHER:
    case Opcode::TGATHER:
    case Opcode::TSCATTER:
    case Opcode::TSORT32:
    case Opcode::TMRGSORT:
    case Opcode::TSCATTERND:
    case Opcode::TGATHERND:
    case Opcode::TPHILOX:
    case Opcode::MGATHER:
    case Opcode::MSCATTER:
    case Opcode::TCI:
    case Opcode::TTRI:
      return VecClass::Irregular;
    default:
      break;
  }
  switch (FormOf(op)) {
    case InstrForm::Binary:
    case InstrForm::RowExpandBinary:
    case InstrForm::ColExpandBinary:
    case InstrForm::ColReduce:
    case InstrForm::Ternary:
    case InstrForm::Concat:
      return VecClass::TileTile;
    case InstrForm::Unary:
      // The math list beyond exp/log/sqrt (tanh, sin, erf, ...) is a short polynomial chain.
      return op == Opcode::TABS || op == Opcode::TNEG || op == Opcode::TRELU || op == Opcode::TNOT ? VecClass::Simple
                                                                                                   : VecClass::Math;
    default:
      return VecClass::Simple;
  }
}

class Simulator {
 public:
  Simulator(const ExecGraph& g, const MachineModel& m) : g_(g), m_(m), f_(m.perf) {}

  SimResult Run(const std::vector<SimLaunch>& launches) {
    SimResult r;
    r.machine = m_.name;
    for (auto& k : g_.kernels) {
      SimKernelStats s;
      s.kernel = k.id;
      s.name = k.name;
      s.core = k.core;
      r.kernels.push_back(s);
    }
    const double hz = f_.clock_ghz * 1e9;
    std::vector<double> free_aic(m_.aic_cores, 0), free_aiv(m_.aiv_cores, 0);
    std::vector<int> last_aic(m_.aic_cores, -1), last_aiv(m_.aiv_cores, -1);
    std::vector<double> sched_free(std::max(1, f_.schedulers), 0);
    std::vector<double> launch_end(launches.size(), 0);
    std::map<int, double> touched;  // bytes of each memory root touched so far (L2 residency)
    double vector_cycles = 0, cube_cycles = 0;

    for (size_t li = 0; li < launches.size(); ++li) {
      const SimLaunch& L = launches[li];
      const Kernel& k = g_.kernels.at(L.kernel);
      SimKernelStats& ks = r.kernels.at(L.kernel);
      ks.launches++;
      double ready = 0;
      for (int d : L.deps)
        if (d >= 0 && static_cast<size_t>(d) < li) ready = std::max(ready, launch_end[d]);
      int64_t points = 1;
      for (int64_t e : L.grid) points *= std::max<int64_t>(e, 0);
      if (points == 0) {
        launch_end[li] = ready;
        continue;
      }
      bool cube = k.core == CoreKind::AIC;
      std::vector<double>& free = cube ? free_aic : free_aiv;
      std::vector<int>& last = cube ? last_aic : last_aiv;
      int cores = static_cast<int>(free.size());
      if (cores == 0) throw UserError("machine " + m_.name + " has no " + CoreKindName(k.core) + " cores");
      // Cores streaming at once share the chip's bandwidth.
      double active = static_cast<double>(std::min<int64_t>(points, cores));
      double share_bpc = f_.hbm_gbps * 1e9 / hz / active;  // bytes per cycle per core
      double l2_bpc = std::min(f_.l2_bytes_per_cycle, f_.l2_gbps * 1e9 / hz / active);

      // Costs: per point, memoized by the tail pattern of its grid coordinates (interior
      // points of a grid cost the same; a point at the end of a dim may have a partial tile).
      std::map<std::vector<int>, PointCost> memo;
      std::vector<const PointCost*> point_cost(points);
      for (int64_t p = 0; p < points; ++p) {
        std::vector<int64_t> c(L.grid.size());
        int64_t rest = p;
        for (size_t d = L.grid.size(); d-- > 0;) {
          c[d] = rest % L.grid[d];
          rest /= L.grid[d];
        }
        std::vector<int> key;
        bool exact = points <= 4096;  // small grids: every point exactly
        for (size_t d = 0; d < c.size(); ++d)
          key.push_back(exact ? static_cast<int>(c[d]) : (c[d] == 0 ? 0 : c[d] + 1 == L.grid[d] ? 2 : 1));
        auto it = memo.find(key);
        if (it == memo.end()) {
          SymEnv env = L.env;
          for (size_t d = 0; d < c.size(); ++d) env[GridVar(static_cast<int>(d))] = c[d];
          it = memo.emplace(key, CostOf(k, env)).first;
        }
        point_cost[p] = &it->second;
      }
      // Global-memory bytes of the launch, split into first touches (HBM) and re-reads of
      // tensors that fit L2.
      std::map<int, double> launch_reads;
      for (int64_t p = 0; p < points; ++p)
        for (auto& [root, b] : point_cost[p]->read_bytes) launch_reads[root] += b;
      // Re-reads hit L2 while what the launch reads fits it together; beyond, a matching share
      // of them goes to HBM again (an LRU cache streaming a larger working set).
      double footprint = 0;
      for (auto& [root, b] : launch_reads) {
        double size = RootBytes(root, L.env);
        footprint += size >= 0 ? size : std::numeric_limits<double>::infinity();
      }
      double hit = footprint <= static_cast<double>(f_.l2_bytes) ? 1.0 : static_cast<double>(f_.l2_bytes) / footprint;
      std::map<int, double> hbm_fraction;
      for (auto& [root, b] : launch_reads) {
        double size = RootBytes(root, L.env);  // < 0: unknown here, taken as too big for L2
        double before = touched[root];
        bool fits = size >= 0 && size <= static_cast<double>(f_.l2_bytes);
        double first = fits ? std::max(0.0, std::min(b, size - before)) : b;
        double again = (b - first) * (1 - hit);  // re-reads evicted before they came
        hbm_fraction[root] = b > 0 ? (first + again) / b : 1.0;
        touched[root] = fits ? std::min(size, before + b) : 0;
      }
      for (auto& p : k.params)  // what a launch writes stays in L2 for its readers (when it fits)
        if (p.write) touched[g_.fn.MemoryRoot(p.value)] = std::max(0.0, RootBytes(g_.fn.MemoryRoot(p.value), L.env));

      double end = ready;
      for (int64_t p = 0; p < points; ++p) {
        const PointCost& pc = *point_cost[p];
        double hbm = 0, l2 = 0;
        for (auto& [root, b] : pc.read_bytes) {
          double fr = hbm_fraction.count(root) ? hbm_fraction[root] : 1.0;
          hbm += b * fr;
          l2 += b * (1 - fr);
        }
        std::array<double, kNumPipes> cyc = pc.cycles;
        double rd_rate = std::min(f_.gm_bytes_per_cycle, share_bpc);
        cyc[P(Pipe::MTE2)] += hbm / rd_rate + l2 / l2_bpc;
        double wr_core = cube ? f_.fix_bytes_per_cycle : std::min(f_.ub_to_gm_bytes_per_cycle, f_.gm_bytes_per_cycle);
        double wr = pc.write_bytes / std::min(wr_core, share_bpc);
        cyc[P(cube ? Pipe::FIX : Pipe::MTE3)] += wr;
        // Reads and writes share the chip's bandwidth; each pipe runs beside the others.
        double gm = std::max({hbm / rd_rate + wr, (hbm + pc.write_bytes) / share_bpc});
        double steady = gm;
        for (int q = 0; q < kNumPipes; ++q)
          if (q != P(Pipe::MTE2) && q != P(Pipe::MTE3) && q != P(Pipe::FIX)) steady = std::max(steady, cyc[q]);
        steady = std::max(steady, cyc[P(Pipe::MTE2)]);
        // The first tile's load and the last's store do not overlap anything in a cold task.
        double fill = (pc.loads ? f_.gm_read_latency_cycles + pc.load_bytes / pc.loads / rd_rate : 0) +
                      (pc.stores ? f_.gm_write_latency_cycles : 0);
        // Dispatch: the earliest free scheduler hands the task out.
        auto s = std::min_element(sched_free.begin(), sched_free.end());
        double dispatched = std::max(*s, ready) + f_.dispatch_us;
        *s = dispatched;
        int c = static_cast<int>(std::min_element(free.begin(), free.end()) - free.begin());
        double start = std::max({free[c], ready, dispatched});
        bool warm = last[c] == static_cast<int>(li) && free[c] >= start - 1e-9;
        double dur_us = (steady + (warm ? 0 : fill)) / hz * 1e6;
        SimTask t;
        t.core = c;
        t.kind = k.core;
        t.launch = static_cast<int>(li);
        t.kernel = k.id;
        t.point = p;
        t.start_us = start;
        t.end_us = start + dur_us;
        for (int q = 0; q < kNumPipes; ++q) t.pipe_us[q] = cyc[q] / hz * 1e6;
        free[c] = t.end_us;
        last[c] = static_cast<int>(li);
        end = std::max(end, t.end_us);
        ks.tasks++;
        ks.busy_us += dur_us;
        for (int q = 0; q < kNumPipes; ++q) {
          ks.pipe_us[q] += t.pipe_us[q];
          r.pipe_us[q] += t.pipe_us[q];
        }
        ks.hbm_read_bytes += hbm;
        ks.l2_read_bytes += l2;
        ks.write_bytes += pc.write_bytes;
        ks.cube_flops += pc.cube_flops;
        (cube ? cube_cycles : vector_cycles) += cube ? cyc[P(Pipe::M)] : cyc[P(Pipe::V)];
        r.tasks.push_back(t);
      }
      launch_end[li] = end;
      r.total_us = std::max(r.total_us, end);
    }
    for (auto& k : r.kernels) {
      r.hbm_read_bytes += k.hbm_read_bytes;
      r.l2_read_bytes += k.l2_read_bytes;
      r.write_bytes += k.write_bytes;
      r.cube_flops += k.cube_flops;
    }
    // Global memory: HBM, or the L2 in front of it, whichever feeds the cores slower.
    r.memory_us =
        std::max((r.hbm_read_bytes + r.write_bytes) / (f_.hbm_gbps * 1e9), r.l2_read_bytes / (f_.l2_gbps * 1e9)) * 1e6;
    r.cube_us = m_.aic_cores ? cube_cycles / (m_.aic_cores * hz) * 1e6 : 0;
    r.vector_us = m_.aiv_cores ? vector_cycles / (m_.aiv_cores * hz) * 1e6 : 0;
    r.dispatch_us = static_cast<double>(r.tasks.size()) * f_.dispatch_us / std::max(1, f_.schedulers);
    r.bound = "memory";
    double best = r.memory_us;
    for (auto [name, v] :
         {std::pair<const char*, double>{"cube", r.cube_us}, {"vector", r.vector_us}, {"dispatch", r.dispatch_us}})
      if (v > best) {
        best = v;
        r.bound = name;
      }
    double busy_aic = 0, busy_aiv = 0;
    for (auto& t : r.tasks) (t.kind == CoreKind::AIC ? busy_aic : busy_aiv) += t.end_us - t.start_us;
    if (r.total_us > 0) {
      r.utilization_aic = m_.aic_cores ? busy_aic / (m_.aic_cores * r.total_us) : 0;
      r.utilization_aiv = m_.aiv_cores ? busy_aiv / (m_.aiv_cores * r.total_us) : 0;
    }
    return r;
  }

 private:
  double RootBytes(int root, const SymEnv& env) const {
    const Value& v = g_.fn.value(root);
    double n = DataTypeBytes(v.dtype);
    for (auto& d : v.shape) {
      try {
        n *= static_cast<double>(std::max<int64_t>(0, d.Eval(env)));
      } catch (const UserError&) {
        return -1;  // a shape that names symbols not bound here
      }
    }
    return n;
  }

  // The valid extent of each dim of a tile at this point (its static shape where unknown).
  std::vector<double> Valid(const TileBuf& b, const SymEnv& env) const {
    std::vector<double> out;
    for (size_t d = 0; d < b.shape.size(); ++d) {
      int64_t e = b.shape[d];
      if (d < b.valid.size() && b.valid[d].defined()) {
        try {
          e = std::clamp<int64_t>(b.valid[d].Eval(env), 0, b.shape[d]);
        } catch (const UserError&) {
        }
      }
      out.push_back(static_cast<double>(e));
    }
    return out;
  }

  double Elems(const TileBuf& b, const SymEnv& env) const {
    double n = 1;
    for (double e : Valid(b, env)) n *= e;
    return n;
  }

  PointCost CostOf(const Kernel& k, SymEnv env) const {
    PointCost c;
    Walk(k, k.body, env, 1.0, c);
    return c;
  }

  void Walk(const Kernel& k, const std::vector<Instr>& body, SymEnv& env, double times, PointCost& c) const {
    for (const Instr& in : body) {
      if (in.opcode == Opcode::LOOP) {
        int64_t trip = 1;
        try {
          trip = std::max<int64_t>(0, in.trip.Eval(env));
        } catch (const UserError&) {
        }
        std::string var = in.var.empty() ? kReduceVar : in.var;
        if (trip <= 64) {
          for (int64_t i = 0; i < trip; ++i) {
            env[var] = i;
            Walk(k, in.body, env, times, c);
          }
        } else {  // long loops: the first and last iterations stand for the rest
          env[var] = 0;
          Walk(k, in.body, env, times * static_cast<double>(trip - 1), c);
          env[var] = trip - 1;
          Walk(k, in.body, env, times, c);
        }
        env.erase(var);
        continue;
      }
      Cost(k, in, env, times, c);
    }
  }

  void Cost(const Kernel& k, const Instr& in, const SymEnv& env, double times, PointCost& c) const {
    auto buf = [&](int id) -> const TileBuf& { return k.bufs.at(id); };
    switch (in.opcode) {
      case Opcode::TLOAD:
      case Opcode::TGATHERND: {  // a gather from memory: a load of the tile's elements
        const TileBuf& d = buf(in.dst);
        double bytes = Elems(d, env) * DataTypeBytes(d.dtype);
        c.read_bytes[g_.fn.MemoryRoot(k.params.at(in.param).value)] += bytes * times;
        c.cycles[P(Pipe::MTE2)] += f_.cube_instr_cycles * times;
        c.loads += static_cast<int>(times);
        c.load_bytes += bytes * times;
        return;
      }
      case Opcode::TSTORE:
      case Opcode::TSCATTERND: {
        const TileBuf& s = buf(in.srcs.at(0));
        c.write_bytes += Elems(s, env) * DataTypeBytes(s.dtype) * times;
        c.stores += static_cast<int>(times);
        return;
      }
      case Opcode::TMATMUL:
      case Opcode::TMATMUL_ACC:
      case Opcode::TMATMUL_BIAS:
      case Opcode::TGEMV: {
        const TileBuf& a = buf(in.srcs.at(0));  // Left [m, k]
        const TileBuf& acc = buf(in.dst);       // Acc [m, n]
        std::vector<double> va = Valid(a, env), vc = Valid(acc, env);
        double kk = va.empty() ? 0 : va.back();
        double n = vc.empty() ? 0 : vc.back();
        double m = kk > 0 ? Elems(a, env) / kk : 0;
        double rate = f_.cube_macs_per_cycle;
        if (a.dtype == DataType::INT8) rate *= 2;
        if (a.dtype == DataType::FP32) rate /= 4;
        c.cycles[P(Pipe::M)] += (m * n * kk / rate + f_.cube_instr_cycles) * times;
        c.cube_flops += 2 * m * n * kk * times;
        return;
      }
      case Opcode::TMOV:
      case Opcode::TEXTRACT: {
        const TileBuf& d = buf(in.dst);
        double bytes = Elems(d, env) * DataTypeBytes(d.dtype);
        if (d.space == MemSpace::Left || d.space == MemSpace::Right) {
          double rate = d.space == MemSpace::Left ? f_.mte1_a_bytes_per_cycle : f_.mte1_b_bytes_per_cycle;
          c.cycles[P(Pipe::MTE1)] += (bytes / rate + f_.cube_instr_cycles) * times;
          return;
        }
        if (buf(in.srcs.at(0)).space == MemSpace::Acc) {  // L0C -> UB through the fixpipe
          c.cycles[P(Pipe::FIX)] += (bytes / f_.fix_bytes_per_cycle + f_.cube_instr_cycles) * times;
          return;
        }
        break;  // a copy within UB: a vector instruction
      }
      case Opcode::TNOTIFY:
      case Opcode::TWAIT:  // one scalar access of a window (the link time is not modeled yet)
        c.cycles[P(Pipe::MTE3)] += f_.cube_instr_cycles * times;
        return;
      default:
        break;
    }
    if (in.dst < 0 && in.srcs.empty()) return;
    if (in.dst >= 0 && buf(in.dst).space == MemSpace::Acc) {  // initializing L0C: the cube's own
      c.cycles[P(Pipe::M)] += f_.cube_instr_cycles * times;
      return;
    }
    // A vector instruction: its elements are the destination's (the source's for a reduction).
    const TileBuf& shape = (IsRowReduction(in.opcode) || IsColReduction(in.opcode)) && !in.srcs.empty()
                               ? buf(in.srcs[0])
                               : buf(in.dst >= 0 ? in.dst : in.srcs[0]);
    double elems = Elems(shape, env);
    double width = DataTypeBytes(shape.dtype);
    for (int s : in.srcs) width = std::max<double>(width, DataTypeBytes(buf(s).dtype));
    double per_elem = 0;
    switch (ClassOf(in.opcode)) {
      case VecClass::Simple:
        per_elem = width / f_.vec_bytes_per_cycle;
        break;
      case VecClass::TileTile:
        per_elem = 2 * width / f_.vec_bytes_per_cycle;
        break;
      case VecClass::Transcendental:
        per_elem = 0.0314;
        break;
      case VecClass::Math:
        per_elem = 2 * 0.0314;
        break;
      case VecClass::Divide:
        per_elem = 0.0781;
        break;
      case VecClass::RowReduce:
        per_elem = 0.0547;
        break;
      case VecClass::Irregular:
        per_elem = 0.1;
        break;
    }
    c.cycles[P(Pipe::V)] += (elems * per_elem + f_.vec_instr_cycles) * times;
  }

  const ExecGraph& g_;
  const MachineModel& m_;
  const MachinePerf& f_;
};

}  // namespace

SimResult Simulate(const ExecGraph& g, const std::vector<SimLaunch>& launches, const MachineModel& m) {
  if (!m.perf.has_model())
    throw UserError("machine '" + m.name + "' has no performance model to simulate", {},
                    "simulate on an NPU model: \"a2a3\" (Ascend 910B class) or \"a5\" (Ascend 950 class)");
  return Simulator(g, m).Run(launches);
}

}  // namespace pypto
