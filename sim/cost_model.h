// The simulator's cost model: how long a compute op runs on a device (roofline plus launch overhead) and which
// link a collective or message crosses (intra- vs inter-node). Built from a resolved scenario's simulation section.
// With a device profile (cluster.device_profile) compute ops and collectives are timed from its measured curves
// (sim/profile_costs.h); an op the profile cannot time falls back to the roofline and is counted (stats()).
// Usage:
//   CostModel costs = CostModel::from_scenario(resolved);
//   TimeNs t = costs.compute_ns(op);  LinkCost link = costs.link_for_group(plan.groups[g]);
#pragma once
#include "sim/sim_layer.h"
#include <memory>
#include <string>
#include <vector>

#include "cluster/link_preset.h"
#include "plan/op.h"
#include "run/simulation_result.h"
#include "scenario/scenario.h"
#include "sim/collective_cost.h"
#include "sim/profile_costs.h"

namespace shardscope {

struct ComputeRates {
  double peak_tflops = 0;         // the dtype's dense peak (fp32: no tensor cores; fp16/bf16: tensor cores)
  // The peaks of ops that say the element type they compute in (Op::work: the eager pass, where torch.autocast runs
  // a GEMM in 16-bit and a loss in fp32 while --dtype stays fp32); 0 for either: peak_tflops.
  double fp32_tflops = 0;
  double half_tflops = 0;
  double compute_efficiency = 1;  // achieved fraction of the peak
  double hbm_gbps = 0;            // device memory bandwidth, GB/s
  double memory_efficiency = 1;   // achieved fraction of it
  TimeNs kernel_overhead_ns = 0;  // added once per compute op that does work
};

class CostModel {
 public:
  CostModel(ComputeRates rates, ClusterLinks links, std::shared_ptr<const ProfileCosts> profile = nullptr);
  static CostModel from_scenario(const ResolvedScenario& scenario);

  // Roofline: max(flops / (peak × efficiency), bytes / (HBM × efficiency)) + launch overhead, rounded to the
  // nearest ns and saturating at kMaxTimeNs (core/units.h). The peak is the training dtype's, or the op's own
  // element type's where the op says it (Op::work). An op with neither flops nor bytes (bookkeeping such
  // as "wait for all-reduces") launches no kernel and costs 0.
  // With a profile: its time for the op (launches included, no kernel_overhead added), the roofline where it has
  // none.
  TimeNs compute_ns(const Op& op) const;
  // The executor's own host time for any op (profile overheads.executor_op_s and allocation fills; 0 without a
  // profile of our executor): build_sim_graph delays the start of the rank's next compute op by it.
  TimeNs host_ns(const Program& program, const Op& op) const;
  // A collective's / message's time: the profile's curves where it has usable ones, else the link's alpha-beta.
  TimeNs collective_ns(const CollectiveShape& shape, const std::vector<int>& sorted_ranks) const;
  TimeNs message_ns(Bytes bytes, int rank_a, int rank_b) const;
  // A group on one node uses the intra-node link; one that spans nodes (rank / gpus_per_node differs) is limited
  // by the inter-node link for every ring step. `sorted_ranks` as Plan::groups holds them.
  LinkCost link_for_group(const std::vector<int>& sorted_ranks) const;
  LinkCost link_between(int rank_a, int rank_b) const;

  const ComputeRates& rates() const { return rates_; }
  const ClusterLinks& links() const { return links_; }
  const CostSource& stats() const { return stats_; }

 private:
  static LinkCost cost_of(const LinkPreset& link);
  TimeNs roofline_ns(const Op& op) const;

  ComputeRates rates_;
  ClusterLinks links_;
  double flops_per_ns_ = 0;
  double fp32_flops_per_ns_ = 0, half_flops_per_ns_ = 0;
  double bytes_per_ns_ = 0;
  std::shared_ptr<const ProfileCosts> profile_;
  mutable CostSource stats_;  // counted as compute_ns is asked (the simulator is single-threaded)
};

}  // namespace shardscope
