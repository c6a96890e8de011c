// TraceMemorySeries: compact per-rank memory samples (see trace_memory_series.h).
#include "trace/store/trace_memory_series.h"

namespace shardscope {

namespace {

// Sums modulo 2^64: the store keeps totals within the trace limits, but a series filled by hand need not be.
void add_to(Bytes& total, Bytes change) {
  total = static_cast<Bytes>(static_cast<std::uint64_t>(total) + static_cast<std::uint64_t>(change));
}

}  // namespace

void TraceMemorySeries::append(TimeNs t_ns, Bytes allocated, Bytes reserved, Category category, Bytes change, TensorId tensor) {
  const std::size_t index = core_.size();
  core_.push_back({t_ns, allocated, reserved, change});
  tags_.push_back({tensor, category});
  add_to(latest_[category], change);
  if (index % kCheckpointEvery == 0) {
    checkpoints_.push_back(latest_);
    checkpoint_t_.push_back(t_ns);
  }
}

TraceMemorySample TraceMemorySeries::operator[](std::size_t i) const {
  const Core& c = core_[i];
  TraceMemorySample s{c.t_ns, c.allocated, c.reserved, checkpoints_[i / kCheckpointEvery]};
  for (std::size_t j = i - i % kCheckpointEvery + 1; j <= i; ++j) add_to(s.by_category[tags_[j].category], core_[j].change);
  return s;
}

TraceAllocation TraceMemorySeries::allocation(std::size_t i) const {
  return {core_[i].t_ns, tags_[i].tensor, core_[i].change, tags_[i].category};
}

}  // namespace shardscope
