// Rooted collectives under the alpha-beta model. Broadcast and reduce: NCCL runs them as a pipelined ring
// (chain) — the buffer streams through the n−1 hops in small slices, so for large S the time is S/B plus the
// hop latencies, S/B + (n−1)α (we chose this over a binomial tree's log2(n)·(S/B + α), which NCCL does not use
// for these two). Scatter / gather: the root's link carries every other rank's chunk, one message per peer.
#include "sim/collective_cost.h"

namespace shardscope {

double pipelined_broadcast_ns(int ranks, Bytes size_bytes, const LinkCost& link) {
  if (ranks <= 1) return 0;
  return static_cast<double>(size_bytes) / link.bytes_per_ns + (ranks - 1) * link.alpha_ns;
}

double pipelined_reduce_ns(int ranks, Bytes size_bytes, const LinkCost& link) {
  return pipelined_broadcast_ns(ranks, size_bytes, link);
}

double root_scatter_ns(int ranks, Bytes size_bytes, Bytes root_chunk_bytes, const LinkCost& link) {
  if (ranks <= 1) return 0;
  return static_cast<double>(size_bytes - root_chunk_bytes) / link.bytes_per_ns + (ranks - 1) * link.alpha_ns;
}

}  // namespace shardscope
