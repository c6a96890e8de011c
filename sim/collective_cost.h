// Alpha-beta cost of collectives and point-to-point messages over one link (NCCL's ring and pipelined-ring
// algorithms), and nccl-tests' bus bandwidth. Pure functions; knows nothing of plans or the simulator.
// Units: sizes in bytes, times in ns; a link of G GB/s moves G bytes per ns.
#pragma once
#include "sim/sim_layer.h"
#include "core/units.h"
#include "plan/op.h"

namespace shardscope {

struct LinkCost {
  double bytes_per_ns = 1;  // B, per direction (= GB/s)
  double alpha_ns = 0;      // α, fixed cost per ring step / per message
};

// One collective as nccl-tests sizes it (doc/PERFORMANCE.md): `size_bytes` is S, the full buffer —
// all-reduce / broadcast / reduce: the buffer; all-gather: the gathered output (ranks × each rank's input);
// reduce-scatter: the input each rank holds before the reduction (ranks × each rank's output);
// scatter / gather: the sum of all ranks' chunks, of which `root_chunk_bytes` stay on the root.
struct CollectiveShape {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int ranks = 1;
  Bytes size_bytes = 0;
  Bytes root_chunk_bytes = 0;  // scatter / gather only
};

// Ring (ring_collectives.cpp): NCCL's ring algorithm, Simple protocol, one ring per link, no pipelining gain.
double ring_all_reduce_ns(int ranks, Bytes size_bytes, const LinkCost& link);       // 2(n−1)/n·S/B + 2(n−1)α
double ring_reduce_scatter_ns(int ranks, Bytes size_bytes, const LinkCost& link);   // (n−1)/n·S/B + (n−1)α
double ring_all_gather_ns(int ranks, Bytes size_bytes, const LinkCost& link);       // (n−1)/n·S/B + (n−1)α
double point_to_point_ns(Bytes size_bytes, const LinkCost& link);                   // S/B + α

// Rooted (rooted_collectives.cpp).
double pipelined_broadcast_ns(int ranks, Bytes size_bytes, const LinkCost& link);   // S/B + (n−1)α
double pipelined_reduce_ns(int ranks, Bytes size_bytes, const LinkCost& link);      // S/B + (n−1)α
// The root's link carries every other rank's chunk: (S − root chunk)/B + (n−1)α; equal chunks give (n−1)/n·S/B.
double root_scatter_ns(int ranks, Bytes size_bytes, Bytes root_chunk_bytes, const LinkCost& link);

// Any collective by kind; integer ns rounded to nearest, saturating at kMaxTimeNs (core/units.h). A one-rank group
// costs 0.
TimeNs collective_time_ns(const CollectiveShape& shape, const LinkCost& link);

// nccl-tests' busbw = algbw × factor, algbw = S / time (doc/PERFORMANCE.md; scatter / gather as in its
// scatter.cu / gather.cu): all-reduce 2(n−1)/n; reduce-scatter, all-gather, scatter, gather (n−1)/n;
// broadcast, reduce 1. For a ring with α = 0 the busbw equals the link bandwidth B.
double bus_bandwidth_factor(CollectiveKind kind, int ranks);
// GB/s (bytes per ns); 0 when the time is 0.
double bus_bandwidth_gbps(const CollectiveShape& shape, TimeNs time_ns);

}  // namespace shardscope
