// The all-reduce lesson's demo: a few ranks' buffers all-reduced for real by the CPU backend's ring
// (exec/cpu/cpu_communicator.h: reduce-scatter then all-gather, chunk by chunk), every step recorded so the
// window can show each chunk moving and each partial sum.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace shardscope::lessons {

struct RingDemoStep {
  std::string phase;                        // "start", "reduce-scatter", "all-gather"
  std::vector<int> chunk_received;          // per rank: the chunk it received from its left neighbour (-1 at start)
  std::vector<std::vector<float>> buffers;  // per rank, after the step
};

struct RingDemo {
  int ranks = 0;
  std::vector<std::pair<std::size_t, std::size_t>> chunks;  // each chunk's [begin, end) in the buffer
  std::vector<RingDemoStep> steps;                         // steps[0]: the buffers as given; then 2(n−1) ring steps
  const std::vector<std::vector<float>>& result() const { return steps.back().buffers; }
};

// Runs CpuCommunicator::all_reduce with one thread per buffer. Throws std::invalid_argument for fewer than two
// buffers or buffers of different lengths.
RingDemo run_ring_all_reduce(const std::vector<std::vector<float>>& buffers);

}  // namespace shardscope::lessons
