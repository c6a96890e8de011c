// CostModel: roofline compute times and link selection.
#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>

namespace shardscope {

CostModel::CostModel(ComputeRates rates, ClusterLinks links, std::shared_ptr<const ProfileCosts> profile)
    : rates_(rates), links_(std::move(links)), profile_(std::move(profile)) {
  flops_per_ns_ = rates_.peak_tflops * 1e3 * rates_.compute_efficiency;  // 1 TFLOP/s = 1000 FLOP per ns
  fp32_flops_per_ns_ = rates_.fp32_tflops > 0 ? rates_.fp32_tflops * 1e3 * rates_.compute_efficiency : flops_per_ns_;
  half_flops_per_ns_ = rates_.half_tflops > 0 ? rates_.half_tflops * 1e3 * rates_.compute_efficiency : flops_per_ns_;
  bytes_per_ns_ = rates_.hbm_gbps * rates_.memory_efficiency;           // 1 GB/s = 1 byte per ns
  if (profile_) {
    stats_.profile = profile_->profile().path.empty() ? "(in memory)" : profile_->profile().path;
    stats_.collectives_from_profile = profile_->times_collectives();
  }
}

CostModel CostModel::from_scenario(const ResolvedScenario& scenario) {
  const auto& sim = scenario.settings.simulation;
  ComputeRates rates;
  // Mixed precision runs the model's matmuls on tensor cores; fp32 (allow_tf32 off, PyTorch's default for
  // matmuls since 1.12) runs them on the CUDA cores.
  rates.peak_tflops = scenario.settings.training.dtype == Dtype::Fp32 ? scenario.device.fp32_tflops : scenario.device.bf16_tflops;
  rates.fp32_tflops = scenario.device.fp32_tflops;
  rates.half_tflops = scenario.device.bf16_tflops;
  rates.compute_efficiency = sim.compute_efficiency;
  rates.hbm_gbps = scenario.device.hbm_gbps;
  rates.memory_efficiency = sim.memory_efficiency;
  rates.kernel_overhead_ns = saturating_duration_ns(sim.kernel_overhead_us * 1e3);
  std::shared_ptr<const ProfileCosts> profile;
  if (scenario.profile) profile = std::make_shared<const ProfileCosts>(scenario.profile, scenario);
  return CostModel(rates, scenario.links, std::move(profile));
}

TimeNs CostModel::compute_ns(const Op& op) const {
  if (op.kind != OpKind::Compute || (op.flops <= 0 && op.bytes_accessed <= 0)) return 0;
  if (profile_) {
    if (const std::optional<double> seconds = profile_->compute_seconds(op)) {
      ++stats_.profiled_ops;
      return saturating_duration_ns(*seconds * 1e9);
    }
    ++stats_.roofline_ops;
    if (stats_.roofline_examples.size() < 5) stats_.roofline_examples.push_back(op.label);
  }
  return roofline_ns(op);
}

TimeNs CostModel::roofline_ns(const Op& op) const {
  const ElementType element = op.work.get().element;
  const double flops_per_ns = element == ElementType::Fp32 ? fp32_flops_per_ns_
                              : is_16_bit(element)         ? half_flops_per_ns_
                                                           : flops_per_ns_;
  const double math_ns = op.flops > 0 ? op.flops / flops_per_ns : 0;
  const double memory_ns = op.bytes_accessed > 0 ? static_cast<double>(op.bytes_accessed) / bytes_per_ns_ : 0;
  // Saturating: an op slower than kMaxTimeNs (an absurd efficiency or size) costs kMaxTimeNs, never a wrapped int64.
  return saturating_add(saturating_duration_ns(std::max(math_ns, memory_ns)), rates_.kernel_overhead_ns);
}

TimeNs CostModel::host_ns(const Program& program, const Op& op) const {
  return profile_ ? saturating_duration_ns(profile_->host_seconds(program, op) * 1e9) : 0;
}

TimeNs CostModel::collective_ns(const CollectiveShape& shape, const std::vector<int>& sorted_ranks) const {
  if (profile_ && shape.kind != CollectiveKind::Scatter && shape.kind != CollectiveKind::Gather)
    if (const auto seconds = profile_->collective_seconds(shape.kind, shape.ranks, static_cast<double>(shape.size_bytes)))
      return saturating_duration_ns(*seconds * 1e9);
  return collective_time_ns(shape, link_for_group(sorted_ranks));
}

TimeNs CostModel::message_ns(Bytes bytes, int rank_a, int rank_b) const {
  if (profile_)
    if (const auto seconds = profile_->message_seconds(static_cast<double>(bytes))) return saturating_duration_ns(*seconds * 1e9);
  return saturating_duration_ns(point_to_point_ns(bytes, link_between(rank_a, rank_b)));
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
