// The link model of the NPU machine models: for each level of the hierarchy (CHIP_DIE, CHIP,
// HOST, CLUSTER_0 = POD, CLUSTER_1, CLUSTER_2, GLOBAL) the link a rank uses to reach the other
// ranks of its level, and an alpha-beta estimate of a collective's time over those links:
//   time = steps x latency + bytes on the busiest link of a rank / its bandwidth
//        + bytes reduced / the rank's reduction rate.
// A collective whose ranks fill more than one domain of its level is composed over the levels
// (reduce-scatter inward to outward, the collective at the outermost level, allgather back).
// docs/sim.md ("Links and collectives") gives the source of every number, the formulas and the
// comparison with published measurements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pypto {

/// The levels a collective can run at (python/pypto/frontends/language/_types.py `Level`; the
/// in-core levels run no collective).
enum class LinkLevel : uint8_t { ChipDie, Chip, Host, Cluster0, Cluster1, Cluster2, Global };
constexpr int kNumLinkLevels = 7;
const char* LinkLevelName(LinkLevel level);  // "CHIP_DIE", "CHIP", "HOST", "CLUSTER_0", ...
/// A level by name, case-insensitive, with upstream's aliases (POD, NODE, CLOS1, ...); UserError
/// naming the argument and listing the levels otherwise.
LinkLevel ParseLinkLevel(const std::string& name);

/// How the ranks of a level are wired.
enum class LinkTopology : uint8_t {
  Shared,  // one medium all ranks share (the die's L2): a rank gets min(its rate, fabric / ranks)
  Mesh,    // a direct link to every peer (HCCS full mesh): k peers at once use k links
  Switch,  // ports into a non-blocking switch (UB, RoCE): all ports reach any peer, shared by peers
};
const char* LinkTopologyName(LinkTopology topology);  // "shared", "mesh", "switch"

struct LinkSpec {
  LinkLevel level = LinkLevel::Host;
  std::string name;  // "HCCS", "UB", "RoCE", ...
  LinkTopology topology = LinkTopology::Switch;
  double gbps = 0;         // one link, one direction, GB/s (1e9 bytes per second)
  int links = 1;           // links (ports) of one rank at this level
  double fabric_gbps = 0;  // Shared: the medium's total bandwidth; 0 otherwise
  double latency_us = 0;   // alpha: the fixed cost of one step (a transfer and its signal)
  int64_t max_ranks = 0;   // ranks one domain of this level holds, counting inner levels; 0: unbounded
  double reduce_gbps = 0;  // bytes a rank reduces per second (the local add of a reduction)
  std::string source;      // where the numbers come from (docs/sim.md has the full references)
  double RankGbps() const { return gbps * links; }  // a rank's total bandwidth, one direction
};

/// The link specs of machine `machine` ("a2a3", "a5"), innermost level first; a level the
/// machine lacks is absent. UserError for other names.
const std::vector<LinkSpec>& MachineLinks(const std::string& machine);
/// The machines with a link model.
std::vector<std::string> LinkMachineNames();

enum class CollectiveOp : uint8_t { AllReduce, AllGather, ReduceScatter, Broadcast, AllToAll, Barrier };
const char* CollectiveOpName(CollectiveOp op);            // "allreduce", "allgather", "reduce_scatter", ...
CollectiveOp ParseCollectiveOp(const std::string& name);  // underscores and case ignored

/// ring: 2(n-1) neighbour steps of bytes/n (allreduce; reduce_scatter and allgather n-1).
/// mesh: pld.tensor's mode="mesh": one step in which every rank reads what it needs from all
///   n-1 peers at once (for allreduce the whole buffer of each), then reduces locally.
/// fullmesh: HCCL's Mesh algorithm: a reduce-scatter step and an allgather step, each moving
///   bytes/n to every peer at once (n-1 links in parallel on a full mesh).
enum class CollectiveAlgo : uint8_t { Ring, Mesh, FullMesh };
const char* CollectiveAlgoName(CollectiveAlgo algo);  // "ring", "mesh", "fullmesh"
CollectiveAlgo ParseCollectiveAlgo(const std::string& name);

/// One flat collective over one level's links.
struct CollectivePhase {
  CollectiveOp op = CollectiveOp::AllReduce;
  LinkLevel level = LinkLevel::Host;
  std::string link;
  int64_t nranks = 1;
  double bytes = 0;  // the buffer the phase works on (see CollectiveTime for the convention)
  int64_t steps = 0;
  double latency_us = 0, bandwidth_us = 0, reduce_us = 0;
  double total_us() const { return latency_us + bandwidth_us + reduce_us; }
};

struct CollectiveEstimate {
  std::string machine;
  CollectiveOp op = CollectiveOp::AllReduce;
  CollectiveAlgo algorithm = CollectiveAlgo::Ring;
  LinkLevel level = LinkLevel::Host;
  double bytes = 0;
  int64_t nranks = 1;
  int64_t steps = 0;
  double latency_us = 0, bandwidth_us = 0, reduce_us = 0, total_us = 0;
  std::string link;  // the links used, innermost first: "HCCS" or "HCCS + UB"
  std::vector<CollectivePhase> phases;
};

/// The predicted time of collective `op` among `nranks` ranks packed into domains of `level`
/// (16 ranks at HOST: two hosts of 8). `bytes` is the buffer of one rank: the allreduce and
/// broadcast buffer, allgather's output, reduce_scatter's input, what all_to_all sends in all
/// (bytes / nranks to each rank); a barrier moves none. UserError for a bad op, algorithm,
/// level or machine, nranks < 1 or bytes < 0.
CollectiveEstimate CollectiveTime(CollectiveOp op, CollectiveAlgo algo, double bytes, int64_t nranks, LinkLevel level,
                                  const std::string& machine = "a2a3");
CollectiveEstimate CollectiveTime(const std::string& op, const std::string& algo, double bytes, int64_t nranks,
                                  const std::string& level, const std::string& machine = "a2a3");

}  // namespace pypto
