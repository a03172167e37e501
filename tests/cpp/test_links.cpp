// The link model (src/machine/links.h): the alpha-beta formulas against hand-computed numbers
// (HCCL's published Mesh and Ring costs on the HOST level's HCCS full mesh), the composition over
// levels, monotonicity, the ring / mesh crossover on a switched level, and the errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ir/error.h"
#include "machine/links.h"
#include "machine/machine.h"

using namespace pypto;

namespace {

constexpr double kHccsGbps = 28;            // one HCCS link, one direction (a2a3 HOST)
constexpr double kReduceGbps = 1600 / 3.0;  // a die's HBM bandwidth over 2 reads + 1 write
constexpr double kHostLatency = 2.0;

double Us(double bytes, double gbps) { return bytes / (gbps * 1e3); }

CollectiveEstimate Time(const char* op, const char* algo, double bytes, int64_t n, const char* level = "HOST",
                        const char* machine = "a2a3") {
  return CollectiveTime(op, algo, bytes, n, level, machine);
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Links, MachinesHaveEveryLevelInnermostFirst) {
  const auto& a2a3 = MachineLinks("a2a3");
  ASSERT_EQ(a2a3.size(), 7u);
  for (size_t i = 0; i < a2a3.size(); ++i) EXPECT_EQ(static_cast<int>(a2a3[i].level), static_cast<int>(i));
  const LinkSpec& host = a2a3[2];
  EXPECT_EQ(host.name, "HCCS");
  EXPECT_EQ(host.topology, LinkTopology::Mesh);
  EXPECT_DOUBLE_EQ(host.RankGbps(), 196);  // 392 GB/s a card, both directions
  EXPECT_EQ(host.max_ranks, 8);
  // The on-die level comes from the chip model.
  const MachinePerf& f = GetMachine("a2a3").perf;
  EXPECT_DOUBLE_EQ(a2a3[0].gbps, f.gm_bytes_per_cycle * f.clock_ghz);
  EXPECT_DOUBLE_EQ(a2a3[0].fabric_gbps, f.l2_gbps);
  // The 950 is one die: no CHIP level.
  for (auto& s : MachineLinks("a5")) EXPECT_NE(s.level, LinkLevel::Chip);
  EXPECT_EQ(LinkMachineNames(), (std::vector<std::string>{"a2a3", "a5"}));
}

TEST(Links, HostFullMeshMatchesHcclMeshFormula) {
  // HCCL Mesh allreduce: 2 alpha + 2 (S/p) beta + (p-1)/p S gamma.
  const double s = 1e9;
  CollectiveEstimate e = Time("allreduce", "fullmesh", s, 8);
  EXPECT_EQ(e.steps, 2);
  EXPECT_NEAR(e.latency_us, 2 * kHostLatency, 1e-9);
  EXPECT_NEAR(e.bandwidth_us, 2 * Us(s / 8, kHccsGbps), 1e-6);
  EXPECT_NEAR(e.reduce_us, Us(7 * s / 8, kReduceGbps), 1e-6);
  EXPECT_NEAR(e.total_us, e.latency_us + e.bandwidth_us + e.reduce_us, 1e-9);
  EXPECT_EQ(e.link, "HCCS");
  ASSERT_EQ(e.phases.size(), 1u);
  // allgather and reduce_scatter: one step of S/p through the 7 links at once.
  EXPECT_NEAR(Time("allgather", "fullmesh", s, 8).total_us, kHostLatency + Us(s / 8, kHccsGbps), 1e-6);
  EXPECT_NEAR(Time("reduce_scatter", "ring", s, 8).bandwidth_us, Us(7 * s / 8, kHccsGbps), 1e-6);
}

TEST(Links, RingUsesOneLinkPerStep) {
  // HCCL Ring allreduce: 2(p-1) alpha + 2(p-1)/p S beta + (p-1)/p S gamma; on the full mesh a
  // ring step uses the one link to the next rank.
  const double s = 8e6;
  CollectiveEstimate e = Time("allreduce", "ring", s, 8);
  EXPECT_EQ(e.steps, 14);
  EXPECT_NEAR(e.latency_us, 14 * kHostLatency, 1e-9);
  EXPECT_NEAR(e.bandwidth_us, Us(14 * s / 8, kHccsGbps), 1e-9);
  EXPECT_NEAR(e.reduce_us, Us(7 * s / 8, kReduceGbps), 1e-9);
  EXPECT_EQ(Time("allgather", "ring", s, 8).steps, 7);
  EXPECT_EQ(Time("broadcast", "ring", s, 8).steps, 14);
  EXPECT_EQ(Time("barrier", "ring", s, 8).steps, 14);
  EXPECT_DOUBLE_EQ(Time("barrier", "ring", s, 8).bandwidth_us, 0);
}

TEST(Links, MeshReadsEveryPeersWholeBuffer) {
  // pld.tensor's mesh allreduce: each rank reads S from each of 7 peers, one per link.
  const double s = 1e6;
  CollectiveEstimate e = Time("allreduce", "mesh", s, 8);
  EXPECT_EQ(e.steps, 1);
  EXPECT_NEAR(e.bandwidth_us, Us(s, kHccsGbps), 1e-9);
  EXPECT_NEAR(e.reduce_us, Us(7 * s, kReduceGbps), 1e-9);
  // Broadcast: each peer reads the root's buffer over its own link.
  EXPECT_NEAR(Time("broadcast", "mesh", s, 8).bandwidth_us, Us(s, kHccsGbps), 1e-9);
  // On a switch (UB) the root's ports carry all 7 copies.
  EXPECT_NEAR(Time("broadcast", "mesh", s, 8, "POD").bandwidth_us, Us(7 * s, 196), 1e-9);
  EXPECT_NEAR(Time("barrier", "mesh", 0, 8).total_us, kHostLatency, 1e-12);
}

TEST(Links, RingAndMeshCrossOverOnASwitch) {
  // On RoCE (one port into a switch) mesh pays fewer steps but moves more bytes.
  auto ring = [](double s) { return Time("allreduce", "ring", s, 8, "CLUSTER_1").total_us; };
  auto mesh = [](double s) { return Time("allreduce", "mesh", s, 8, "CLUSTER_1").total_us; };
  EXPECT_LT(mesh(4096), ring(4096));
  EXPECT_GT(mesh(64e6), ring(64e6));
  // Hand-computed crossover: 13 alpha = S (5.25 / 25 + 6.125 / reduce) in us x GB/s = kB.
  const double cross = 13 * 5.0 / (5.25 / 25 + 6.125 / kReduceGbps) * 1e3;
  EXPECT_LT(mesh(0.99 * cross), ring(0.99 * cross));
  EXPECT_GT(mesh(1.01 * cross), ring(1.01 * cross));
  // On the HCCS full mesh a ring step uses one of the 7 links: mesh stays ahead.
  for (double s : {1e3, 1e6, 1e9})
    EXPECT_LT(Time("allreduce", "mesh", s, 8).total_us, Time("allreduce", "ring", s, 8).total_us);
}

TEST(Links, TwoHostsComposeReduceScatterAllreduceAllgather) {
  const double s = 64e6;
  CollectiveEstimate e = Time("allreduce", "fullmesh", s, 16);
  ASSERT_EQ(e.phases.size(), 3u);
  EXPECT_EQ(e.phases[0].op, CollectiveOp::ReduceScatter);
  EXPECT_EQ(e.phases[0].level, LinkLevel::Host);
  EXPECT_EQ(e.phases[0].nranks, 8);
  EXPECT_EQ(e.phases[1].op, CollectiveOp::AllReduce);
  EXPECT_EQ(e.phases[1].level, LinkLevel::Cluster0);
  EXPECT_EQ(e.phases[1].nranks, 2);
  EXPECT_DOUBLE_EQ(e.phases[1].bytes, s / 8);
  EXPECT_EQ(e.phases[2].op, CollectiveOp::AllGather);
  EXPECT_EQ(e.link, "HCCS + UB");
  const double host = kHostLatency + Us(s / 8, kHccsGbps);
  const double ub = 2 * 1.0 + 2 * Us(s / 16, 196) + Us(s / 16, kReduceGbps);
  EXPECT_NEAR(e.total_us, 2 * host + Us(7 * s / 8, kReduceGbps) + ub, 1e-6);
  EXPECT_EQ(e.steps, 4);
  // A CHIP-level collective of 8 dies: pairs over the die-to-die link, then 4 over HCCS.
  CollectiveEstimate c = Time("allgather", "ring", s, 8, "CHIP");
  ASSERT_EQ(c.phases.size(), 2u);
  EXPECT_EQ(c.phases[0].level, LinkLevel::Host);  // the outer level gathers first
  EXPECT_EQ(c.phases[0].nranks, 4);
  EXPECT_EQ(c.phases[1].level, LinkLevel::Chip);
  // Beyond a SuperPoD (768 dies) the ranks reach the RoCE level.
  CollectiveEstimate big = Time("allreduce", "ring", 1e6, 1536);
  ASSERT_EQ(big.phases.size(), 5u);
  EXPECT_EQ(big.phases[1].level, LinkLevel::Cluster0);
  EXPECT_EQ(big.phases[1].nranks, 96);
  EXPECT_EQ(big.phases[2].level, LinkLevel::Cluster1);
  EXPECT_EQ(big.phases[2].nranks, 2);
}

TEST(Links, MonotonicInBytesAndRanks) {
  for (const char* op : {"allreduce", "allgather", "reduce_scatter", "broadcast", "all_to_all"})
    for (const char* algo : {"ring", "mesh", "fullmesh"})
      for (const char* level : {"CHIP_DIE", "HOST", "POD", "CLUSTER_1"}) {
        double prev = -1;
        for (double s = 1; s <= 1e10; s *= 4) {
          double t = Time(op, algo, s, 8, level).total_us;
          EXPECT_GT(t, prev) << op << " " << algo << " " << level << " " << s;
          prev = t;
        }
      }
  for (const char* level : {"HOST", "POD", "CLUSTER_1"}) {
    double prev = -1;
    for (int64_t n = 2; n <= 4096; n *= 2) {
      double t = Time("allreduce", "ring", 1e8, n, level).total_us;
      EXPECT_GE(t, prev) << level << " " << n;
      prev = t;
    }
  }
  EXPECT_EQ(Time("allreduce", "ring", 1e9, 1).total_us, 0);
}

TEST(Links, ErrorsNameTheArgumentAndTheChoices) {
  EXPECT_NE(ErrorOf([] { ParseCollectiveOp("reduce"); }).find("op is one of allreduce, allgather"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseCollectiveAlgo("tree"); }).find("algorithm is one of ring, mesh, fullmesh"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseLinkLevel("RACK"); }).find("level is one of CHIP_DIE"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseLinkLevel("AIV"); }).find("runs no collective"), std::string::npos);
  EXPECT_EQ(ParseLinkLevel("pod"), LinkLevel::Cluster0);
  EXPECT_EQ(ParseLinkLevel("NODE"), LinkLevel::Host);
  EXPECT_EQ(ParseCollectiveOp("All_To_All"), CollectiveOp::AllToAll);
  EXPECT_NE(ErrorOf([] { MachineLinks("cpu"); }).find("has no link model; machine is one of a2a3, a5"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { MachineLinks("a9"); }).find("unknown machine 'a9'"), std::string::npos);
  EXPECT_NE(ErrorOf([] { Time("allreduce", "ring", 1, 0); }).find("nranks must be at least 1"), std::string::npos);
  EXPECT_NE(ErrorOf([] { Time("allreduce", "ring", -1, 2); }).find("nbytes"), std::string::npos);
  EXPECT_NE(ErrorOf([] { Time("allreduce", "ring", 1, 25, "CHIP_DIE"); }).find("24 core groups"), std::string::npos);
  EXPECT_NE(ErrorOf([] { Time("allreduce", "ring", 1, 2, "CHIP", "a5"); }).find("level CHIP has no link"),
            std::string::npos);
}
