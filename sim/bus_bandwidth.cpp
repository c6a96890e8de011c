// Dispatch of collective kinds to their cost formulas, and nccl-tests' bus-bandwidth factors
// (nccl-tests doc/PERFORMANCE.md: busbw makes every collective comparable to the link's peak bandwidth).
#include <cmath>

#include "sim/collective_cost.h"

namespace shardscope {

TimeNs collective_time_ns(const CollectiveShape& shape, const LinkCost& link) {
  const int n = shape.ranks;
  const Bytes s = shape.size_bytes;
  double ns = 0;
  switch (shape.kind) {
    case CollectiveKind::AllReduce: ns = ring_all_reduce_ns(n, s, link); break;
    case CollectiveKind::ReduceScatter: ns = ring_reduce_scatter_ns(n, s, link); break;
    case CollectiveKind::AllGather: ns = ring_all_gather_ns(n, s, link); break;
    case CollectiveKind::Broadcast: ns = pipelined_broadcast_ns(n, s, link); break;
    case CollectiveKind::Reduce: ns = pipelined_reduce_ns(n, s, link); break;
    case CollectiveKind::Scatter:
    case CollectiveKind::Gather: ns = root_scatter_ns(n, s, shape.root_chunk_bytes, link); break;
    case CollectiveKind::Barrier: ns = 0; break;  // an order between threads of one process, not a transfer
  }
  return saturating_duration_ns(ns);  // an absurd link saturates at kMaxTimeNs instead of overflowing
}

double bus_bandwidth_factor(CollectiveKind kind, int ranks) {
  if (ranks <= 1) return 0;
  const double n = ranks;
  switch (kind) {
    case CollectiveKind::AllReduce: return 2 * (n - 1) / n;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
    case CollectiveKind::Scatter:
    case CollectiveKind::Gather: return (n - 1) / n;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: return 1;
    case CollectiveKind::Barrier: return 0;
  }
  return 1;
}

double bus_bandwidth_gbps(const CollectiveShape& shape, TimeNs time_ns) {
  if (time_ns <= 0) return 0;
  const double algbw = static_cast<double>(shape.size_bytes) / static_cast<double>(time_ns);  // bytes/ns = GB/s
  return algbw * bus_bandwidth_factor(shape.kind, shape.ranks);
}

}  // namespace shardscope
