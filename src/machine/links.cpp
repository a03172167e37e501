#include "machine/links.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "ir/error.h"
#include "machine/machine.h"

namespace pypto {

namespace {

constexpr const char* kLevelNames[kNumLinkLevels] = {"CHIP_DIE",  "CHIP",      "HOST",  "CLUSTER_0",
                                                     "CLUSTER_1", "CLUSTER_2", "GLOBAL"};

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Lower case without '_' and '-': "All_Reduce" -> "allreduce".
std::string Squash(const std::string& s) {
  std::string r;
  for (char c : s)
    if (c != '_' && c != '-' && c != ' ') r += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string Join(const std::vector<std::string>& names) {
  std::string r;
  for (auto& n : names) r += (r.empty() ? "" : ", ") + n;
  return r;
}

// The on-die level from the chip model itself: a core group reads and writes global memory at
// its own rate, and all of them share the die's L2.
LinkSpec DieLink(const MachineModel& m) {
  const MachinePerf& f = m.perf;
  LinkSpec s;
  s.level = LinkLevel::ChipDie;
  s.name = "L2 (on-die)";
  s.topology = LinkTopology::Shared;
  s.gbps = f.gm_bytes_per_cycle * f.clock_ghz;
  s.fabric_gbps = f.l2_gbps;
  s.latency_us = f.gm_read_latency_cycles / (f.clock_ghz * 1e3);
  s.max_ranks = m.aic_cores;
  s.reduce_gbps = s.gbps / 3;  // two reads and a write per reduced byte
  s.source = "the chip model: a core's GM rate, the die's L2 bandwidth, the GM read latency";
  return s;
}

LinkSpec Link(LinkLevel level, const char* name, LinkTopology topology, double gbps, int links, double latency_us,
              int64_t max_ranks, double reduce_gbps, const char* source) {
  LinkSpec s;
  s.level = level;
  s.name = name;
  s.topology = topology;
  s.gbps = gbps;
  s.links = links;
  s.latency_us = latency_us;
  s.max_ranks = max_ranks;
  s.reduce_gbps = reduce_gbps;
  s.source = source;
  return s;
}

// Every number below is discussed, with its reference, in docs/sim.md ("Links and collectives").
// A rank is one die (the chip `pypto.sim.machine` describes) at every level above CHIP_DIE.
std::vector<LinkSpec> A2A3Links() {
  const MachineModel& m = GetMachine("a2a3");
  const double reduce = m.perf.hbm_gbps / 3;  // a die reduces at its HBM bandwidth (2 reads + 1 write)
  using L = LinkLevel;
  using T = LinkTopology;
  return {
      DieLink(m),
      Link(L::Chip, "die-to-die", T::Mesh, 224, 1, 1.0, 2, reduce,
           "assumption: the two dies of an A3's Ascend 910C; bandwidth and latency not published"),
      Link(L::Host, "HCCS", T::Mesh, 28, 7, 2.0, 8, reduce,
           "Atlas 800T A2: 8 NPUs in an HCCS full mesh, 7 links of 56 GB/s (both directions) = 392 GB/s a "
           "card; latency an assumption"),
      Link(L::Cluster0, "UB", T::Switch, 196, 1, 1.0, 768, reduce,
           "Atlas 900 A3 SuperPoD / CloudMatrix384: 384 Ascend 910C (768 dies), UB 392 GB/s per NPU and "
           "direction, under 1 us between nodes"),
      Link(L::Cluster1, "RoCE", T::Switch, 25, 1, 5.0, 8192, reduce,
           "200 GbE RDMA per die (A2: 8 x 200G per server; A3: 400 Gb/s per 910C); latency and size assumptions"),
      Link(L::Cluster2, "RoCE (3-tier)", T::Switch, 25, 1, 8.0, 131072, reduce,
           "assumption: a non-blocking third RoCE tier, more switch hops"),
      Link(L::Global, "DCN", T::Switch, 12.5, 1, 20.0, 0, reduce,
           "assumption: the data-center network, 2:1 oversubscribed"),
  };
}

std::vector<LinkSpec> A5Links() {
  const MachineModel& m = GetMachine("a5");
  const double reduce = m.perf.hbm_gbps / 3;
  using L = LinkLevel;
  using T = LinkTopology;
  return {
      DieLink(m),  // the 950 is modeled as one die: no CHIP level
      Link(L::Host, "UB", T::Switch, 1000, 1, 1.0, 8, reduce,
           "Ascend 950: 2 TB/s interconnect (both directions, 2.5x the 910C's 784 GB/s); server size and "
           "latency assumptions"),
      Link(L::Cluster0, "UB", T::Switch, 1000, 1, 1.0, 8192, reduce,
           "Atlas 950 SuperPoD: 8192 NPUs over UB; latency an assumption"),
      Link(L::Cluster1, "RoCE", T::Switch, 50, 1, 5.0, 524288, reduce,
           "Atlas 950 SuperCluster: 64 SuperPoDs (524288 NPUs); 400 Gb/s RDMA per chip and latency assumptions"),
      Link(L::Cluster2, "RoCE (3-tier)", T::Switch, 50, 1, 8.0, 4194304, reduce,
           "assumption: a non-blocking third RoCE tier"),
      Link(L::Global, "DCN", T::Switch, 12.5, 1, 20.0, 0, reduce,
           "assumption: the data-center network, 2:1 oversubscribed"),
  };
}

const std::map<std::string, std::vector<LinkSpec>>& AllLinks() {
  static const std::map<std::string, std::vector<LinkSpec>> all = {{"a2a3", A2A3Links()}, {"a5", A5Links()}};
  return all;
}

double UsFor(double bytes, double gbps) { return bytes <= 0 ? 0 : bytes / (gbps * 1e3); }  // 1 GB/s = 1e3 B/us

// A rank's bandwidth when every rank of the level sends to `k` peers at once.
double AllToPeersGbps(const LinkSpec& s, int64_t k, int64_t nranks) {
  switch (s.topology) {
    case LinkTopology::Mesh:
      return s.gbps * static_cast<double>(std::min<int64_t>(k, s.links));
    case LinkTopology::Switch:
      return s.RankGbps();
    case LinkTopology::Shared:
      return std::min(s.RankGbps(), s.fabric_gbps / static_cast<double>(nranks));
  }
  return s.RankGbps();
}

// The bandwidth out of one root sending to `k` peers (the others idle but receiving).
double RootToPeersGbps(const LinkSpec& s, int64_t k) {
  switch (s.topology) {
    case LinkTopology::Mesh:
      return s.gbps * static_cast<double>(std::min<int64_t>(k, s.links));
    case LinkTopology::Switch:
      return s.RankGbps();
    case LinkTopology::Shared:
      return std::min(s.RankGbps() * static_cast<double>(k), s.fabric_gbps);
  }
  return s.RankGbps();
}

// One collective over one level: the formulas of docs/sim.md.
CollectivePhase Flat(CollectiveOp op, CollectiveAlgo algo, double bytes, int64_t n, const LinkSpec& s) {
  CollectivePhase p;
  p.op = op;
  p.level = s.level;
  p.link = s.name;
  p.nranks = n;
  p.bytes = bytes;
  if (n <= 1) return p;
  if (op == CollectiveOp::Barrier) {  // an allreduce of nothing: only the steps
    p = Flat(CollectiveOp::AllReduce, algo, 0, n, s);
    p.op = CollectiveOp::Barrier;
    return p;
  }
  const double chunk = bytes / static_cast<double>(n), peers = static_cast<double>(n - 1);
  const double one = AllToPeersGbps(s, 1, n), all = AllToPeersGbps(s, n - 1, n);
  const bool reduces = op == CollectiveOp::AllReduce || op == CollectiveOp::ReduceScatter;
  if (algo == CollectiveAlgo::Ring) {
    // n-1 neighbour steps of one chunk per pass; allreduce and broadcast make two passes.
    const int64_t passes = (op == CollectiveOp::AllReduce || op == CollectiveOp::Broadcast) ? 2 : 1;
    p.steps = passes * (n - 1);
    p.bandwidth_us = UsFor(static_cast<double>(p.steps) * chunk, one);
    if (reduces) p.reduce_us = UsFor(peers * chunk, s.reduce_gbps);
  } else if (op == CollectiveOp::AllReduce && algo == CollectiveAlgo::Mesh) {
    p.steps = 1;  // every rank reads the whole buffer of every peer, then adds the n copies
    p.bandwidth_us = UsFor(peers * bytes, all);
    p.reduce_us = UsFor(peers * bytes, s.reduce_gbps);
  } else if (op == CollectiveOp::AllReduce) {  // fullmesh: a reduce-scatter step, an allgather step
    p.steps = 2;
    p.bandwidth_us = 2 * UsFor(peers * chunk, all);
    p.reduce_us = UsFor(peers * chunk, s.reduce_gbps);
  } else if (op == CollectiveOp::Broadcast && algo == CollectiveAlgo::Mesh) {
    p.steps = 1;  // every rank reads the root's whole buffer
    p.bandwidth_us = UsFor(peers * bytes, RootToPeersGbps(s, n - 1));
  } else if (op == CollectiveOp::Broadcast) {  // fullmesh: the root scatters chunks, then an allgather
    p.steps = 2;
    p.bandwidth_us = UsFor(peers * chunk, RootToPeersGbps(s, n - 1)) + UsFor(peers * chunk, all);
  } else {  // reduce_scatter, allgather, all_to_all: one step, a chunk to (or from) every peer
    p.steps = 1;
    p.bandwidth_us = UsFor(peers * chunk, all);
    if (reduces) p.reduce_us = UsFor(peers * chunk, s.reduce_gbps);
  }
  p.latency_us = static_cast<double>(p.steps) * s.latency_us;
  return p;
}

struct Group {
  const LinkSpec* spec;
  int64_t ranks;
};

// The levels the ranks span, innermost first: `level` holds max_ranks ranks, the next level
// holds its max_ranks / (ranks below) groups, and so on. A partial last group counts as full.
std::vector<Group> Span(const std::vector<LinkSpec>& links, LinkLevel level, int64_t nranks,
                        const std::string& machine) {
  size_t i = 0;
  while (i < links.size() && links[i].level != level) ++i;
  if (i == links.size()) {
    std::vector<std::string> have;
    for (auto& s : links) have.push_back(LinkLevelName(s.level));
    throw UserError(std::string("level ") + LinkLevelName(level) + " has no link on machine '" + machine +
                    "'; level is one of " + Join(have));
  }
  if (level == LinkLevel::ChipDie) {  // its ranks are core groups, not dies: it does not nest outward
    if (nranks > links[i].max_ranks)
      throw UserError("nranks " + std::to_string(nranks) + " at level CHIP_DIE: a die of '" + machine + "' has " +
                      std::to_string(links[i].max_ranks) + " core groups; use a level above for more ranks");
    return {{&links[i], nranks}};
  }
  std::vector<Group> groups;
  int64_t remaining = nranks, unit = 1;
  for (; i < links.size() && remaining > 1; ++i) {
    const LinkSpec& s = links[i];
    const int64_t room = s.max_ranks == 0 ? remaining : std::max<int64_t>(1, s.max_ranks / unit);
    const int64_t g = std::min(remaining, room);
    if (g > 1) groups.push_back({&s, g});
    remaining = (remaining + g - 1) / g;
    unit *= g;
  }
  if (groups.empty()) groups.push_back({&links[i < links.size() ? i : links.size() - 1], 1});
  return groups;
}

}  // namespace

const char* LinkLevelName(LinkLevel level) { return kLevelNames[static_cast<int>(level)]; }

LinkLevel ParseLinkLevel(const std::string& name) {
  static const std::map<std::string, LinkLevel> aliases = {
      {"L2CACHE", LinkLevel::ChipDie}, {"PROCESSOR", LinkLevel::Chip}, {"UMA", LinkLevel::Chip},
      {"NODE", LinkLevel::Host},       {"POD", LinkLevel::Cluster0},   {"CLOS1", LinkLevel::Cluster1},
      {"CLOS2", LinkLevel::Cluster2},
  };
  const std::string u = Upper(name);
  for (int l = 0; l < kNumLinkLevels; ++l)
    if (u == kLevelNames[l]) return static_cast<LinkLevel>(l);
  if (auto it = aliases.find(u); it != aliases.end()) return it->second;
  std::vector<std::string> names(kLevelNames, kLevelNames + kNumLinkLevels);
  if (u == "AIV" || u == "AIC" || u == "CORE_GROUP")
    throw UserError("level '" + name + "' is an in-core level and runs no collective; level is one of " + Join(names));
  throw UserError("unknown level '" + name + "'; level is one of " + Join(names) +
                  " (or POD, NODE, CLOS1, CLOS2, L2CACHE, PROCESSOR, UMA)");
}

const char* LinkTopologyName(LinkTopology topology) {
  switch (topology) {
    case LinkTopology::Shared:
      return "shared";
    case LinkTopology::Mesh:
      return "mesh";
    case LinkTopology::Switch:
      return "switch";
  }
  return "?";
}

std::vector<std::string> LinkMachineNames() {
  std::vector<std::string> n;
  for (auto& [name, links] : AllLinks()) n.push_back(name);
  return n;
}

const std::vector<LinkSpec>& MachineLinks(const std::string& machine) {
  auto& all = AllLinks();
  if (auto it = all.find(machine); it != all.end()) return it->second;
  const std::vector<std::string> all_names = MachineNames();
  const bool known = std::find(all_names.begin(), all_names.end(), machine) != all_names.end();
  throw UserError((known ? "machine '" + machine + "' has no link model" : "unknown machine '" + machine + "'") +
                  "; machine is one of " + Join(LinkMachineNames()));
}

const char* CollectiveOpName(CollectiveOp op) {
  static const char* names[] = {"allreduce", "allgather", "reduce_scatter", "broadcast", "all_to_all", "barrier"};
  return names[static_cast<int>(op)];
}

CollectiveOp ParseCollectiveOp(const std::string& name) {
  const std::string s = Squash(name);
  std::vector<std::string> names;
  for (int o = 0; o <= static_cast<int>(CollectiveOp::Barrier); ++o) {
    names.push_back(CollectiveOpName(static_cast<CollectiveOp>(o)));
    if (s == Squash(names.back())) return static_cast<CollectiveOp>(o);
  }
  throw UserError("unknown op '" + name + "'; op is one of " + Join(names));
}

const char* CollectiveAlgoName(CollectiveAlgo algo) {
  static const char* names[] = {"ring", "mesh", "fullmesh"};
  return names[static_cast<int>(algo)];
}

CollectiveAlgo ParseCollectiveAlgo(const std::string& name) {
  const std::string s = Squash(name);
  std::vector<std::string> names;
  for (int a = 0; a <= static_cast<int>(CollectiveAlgo::FullMesh); ++a) {
    names.push_back(CollectiveAlgoName(static_cast<CollectiveAlgo>(a)));
    if (s == names.back()) return static_cast<CollectiveAlgo>(a);
  }
  throw UserError("unknown algorithm '" + name + "'; algorithm is one of " + Join(names));
}

CollectiveEstimate CollectiveTime(CollectiveOp op, CollectiveAlgo algo, double bytes, int64_t nranks, LinkLevel level,
                                  const std::string& machine) {
  if (nranks < 1) throw UserError("nranks must be at least 1, got " + std::to_string(nranks));
  if (!(bytes >= 0)) throw UserError("nbytes must be a non-negative number of bytes, got " + std::to_string(bytes));
  const std::vector<LinkSpec>& links = MachineLinks(machine);
  CollectiveEstimate e;
  e.machine = machine;
  e.op = op;
  e.algorithm = algo;
  e.level = level;
  e.bytes = op == CollectiveOp::Barrier ? 0 : bytes;
  e.nranks = nranks;
  const std::vector<Group> groups = Span(links, level, nranks, machine);
  // The buffer at each level: a reduce-scatter (or allgather) over g ranks leaves bytes / g.
  std::vector<double> size(groups.size() + 1, e.bytes);
  for (size_t j = 0; j < groups.size(); ++j) size[j + 1] = size[j] / static_cast<double>(groups[j].ranks);
  const size_t k = groups.size() - 1;
  auto add = [&](CollectiveOp o, size_t j, double b) {
    e.phases.push_back(Flat(o, algo, b, groups[j].ranks, *groups[j].spec));
  };
  switch (op) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::Barrier:
      for (size_t j = 0; j < k; ++j) add(CollectiveOp::ReduceScatter, j, size[j]);
      add(op, k, size[k]);
      for (size_t j = k; j-- > 0;) add(CollectiveOp::AllGather, j, size[j]);
      break;
    case CollectiveOp::ReduceScatter:
      for (size_t j = 0; j <= k; ++j) add(op, j, size[j]);
      break;
    case CollectiveOp::AllGather:  // the outermost level gathers the smallest pieces first
      for (size_t j = k + 1; j-- > 0;) add(op, j, size[j]);
      break;
    case CollectiveOp::Broadcast:  // across the outer domains first, then inside each
      for (size_t j = k + 1; j-- > 0;) add(op, j, e.bytes);
      break;
    case CollectiveOp::AllToAll:  // one exchange per level, each moving the whole buffer
      for (size_t j = 0; j <= k; ++j) add(op, j, e.bytes);
      break;
  }
  std::vector<std::string> used;
  for (auto& p : e.phases) {
    e.steps += p.steps;
    e.latency_us += p.latency_us;
    e.bandwidth_us += p.bandwidth_us;
    e.reduce_us += p.reduce_us;
    if (std::find(used.begin(), used.end(), p.link) == used.end()) used.push_back(p.link);
  }
  e.total_us = e.latency_us + e.bandwidth_us + e.reduce_us;
  for (auto& n : used) e.link += (e.link.empty() ? "" : " + ") + n;
  return e;
}

CollectiveEstimate CollectiveTime(const std::string& op, const std::string& algo, double bytes, int64_t nranks,
                                  const std::string& level, const std::string& machine) {
  CollectiveOp o = ParseCollectiveOp(op);
  CollectiveAlgo a = ParseCollectiveAlgo(algo);
  LinkLevel l = ParseLinkLevel(level);
  MachineLinks(machine);  // the machine's error before the numbers'
  return CollectiveTime(o, a, bytes, nranks, l, machine);
}

}  // namespace pypto
