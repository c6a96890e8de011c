// CostModel: roofline compute times and link selection.
#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>

namespace shardscope {

CostModel::CostModel(ComputeRates rates, ClusterLinks links) : rates_(rates), links_(std::move(links)) {
  flops_per_ns_ = rates_.peak_tflops * 1e3 * rates_.compute_efficiency;  // 1 TFLOP/s = 1000 FLOP per ns
  bytes_per_ns_ = rates_.hbm_gbps * rates_.memory_efficiency;           // 1 GB/s = 1 byte per ns
}

CostModel CostModel::from_scenario(const ResolvedScenario& scenario) {
  const auto& sim = scenario.settings.simulation;
  ComputeRates rates;
  // Mixed precision runs the model's matmuls on tensor cores; fp32 (allow_tf32 off, PyTorch's default for
  // matmuls since 1.12) runs them on the CUDA cores.
  rates.peak_tflops = scenario.settings.training.dtype == Dtype::Fp32 ? scenario.device.fp32_tflops : scenario.device.bf16_tflops;
  rates.compute_efficiency = sim.compute_efficiency;
  rates.hbm_gbps = scenario.device.hbm_gbps;
  rates.memory_efficiency = sim.memory_efficiency;
  rates.kernel_overhead_ns = saturating_duration_ns(sim.kernel_overhead_us * 1e3);
  return CostModel(rates, scenario.links);
}

TimeNs CostModel::compute_ns(const Op& op) const {
  if (op.kind != OpKind::Compute || (op.flops <= 0 && op.bytes_accessed <= 0)) return 0;
  const double math_ns = op.flops > 0 ? op.flops / flops_per_ns_ : 0;
  const double memory_ns = op.bytes_accessed > 0 ? static_cast<double>(op.bytes_accessed) / bytes_per_ns_ : 0;
  // Saturating: an op slower than kMaxTimeNs (an absurd efficiency or size) costs kMaxTimeNs, never a wrapped int64.
  return saturating_add(saturating_duration_ns(std::max(math_ns, memory_ns)), rates_.kernel_overhead_ns);
}

LinkCost CostModel::cost_of(const LinkPreset& link) { return {link.gbps, link.latency_us * 1e3}; }

LinkCost CostModel::link_for_group(const std::vector<int>& sorted_ranks) const {
  if (sorted_ranks.empty()) return cost_of(links_.intra_node);
  return link_between(sorted_ranks.front(), sorted_ranks.back());
}

LinkCost CostModel::link_between(int rank_a, int rank_b) const {
  const bool same_node = rank_a / links_.gpus_per_node == rank_b / links_.gpus_per_node;
  return cost_of(same_node ? links_.intra_node : links_.inter_node);
}

}  // namespace shardscope
