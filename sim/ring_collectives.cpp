// Ring collectives under the alpha-beta model, as NCCL's ring algorithm runs them: the buffer is cut into n
// chunks; reduce-scatter and all-gather each take n−1 steps moving one chunk (S/n) per link per step; all-reduce
// is a reduce-scatter followed by an all-gather (2(n−1) steps). Each step costs α plus the chunk over B.
#include "sim/collective_cost.h"

namespace shardscope {

namespace {
double steps_ns(int steps, int ranks, Bytes size_bytes, const LinkCost& link) {
  if (ranks <= 1) return 0;
  const double chunk_bytes = static_cast<double>(size_bytes) / ranks;
  return steps * (chunk_bytes / link.bytes_per_ns + link.alpha_ns);
}
}  // namespace

double ring_all_reduce_ns(int ranks, Bytes size_bytes, const LinkCost& link) {
  return steps_ns(2 * (ranks - 1), ranks, size_bytes, link);
}

double ring_reduce_scatter_ns(int ranks, Bytes size_bytes, const LinkCost& link) {
  return steps_ns(ranks - 1, ranks, size_bytes, link);
}

double ring_all_gather_ns(int ranks, Bytes size_bytes, const LinkCost& link) {
  return steps_ns(ranks - 1, ranks, size_bytes, link);
}

double point_to_point_ns(Bytes size_bytes, const LinkCost& link) {
  return static_cast<double>(size_bytes) / link.bytes_per_ns + link.alpha_ns;
}

}  // namespace shardscope
