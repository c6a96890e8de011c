// Runs the demo's all-reduce on the CPU backend's communicator and keeps each member's buffer after each ring step.
#include "lessons/ring_demo.h"

#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "exec/cpu/cpu_communicator.h"
#include "exec/shared_kernels/ring_chunks.h"

namespace shardscope::lessons {

RingDemo run_ring_all_reduce(const std::vector<std::vector<float>>& buffers) {
  const int n = static_cast<int>(buffers.size());
  if (n < 2) throw std::invalid_argument("the all-reduce demo needs at least two ranks");
  for (const auto& buffer : buffers)
    if (buffer.size() != buffers.front().size()) throw std::invalid_argument("the all-reduce demo's buffers differ in length");
  RingDemo demo;
  demo.ranks = n;
  for (int c = 0; c < n; ++c) {
    const exec::ChunkRange range = exec::chunk_range(buffers.front().size(), n, c);
    demo.chunks.emplace_back(range.begin, range.end());
  }
  const int ring_steps = 2 * (n - 1);
  demo.steps.resize(static_cast<std::size_t>(ring_steps + 1));
  demo.steps[0] = {"start", std::vector<int>(static_cast<std::size_t>(n), -1), buffers};
  for (int s = 1; s <= ring_steps; ++s)
    demo.steps[static_cast<std::size_t>(s)] = {s <= n - 1 ? "reduce-scatter" : "all-gather",
                                               std::vector<int>(static_cast<std::size_t>(n), -1),
                                               std::vector<std::vector<float>>(static_cast<std::size_t>(n))};

  exec::cpu::CpuCommunicator comm(n);
  std::mutex record;
  comm.set_ring_step_observer([&](int rank, int step, int chunk, std::span<const float> data) {
    std::lock_guard lock(record);
    RingDemoStep& after = demo.steps[static_cast<std::size_t>(step + 1)];
    after.chunk_received[static_cast<std::size_t>(rank)] = chunk;
    after.buffers[static_cast<std::size_t>(rank)].assign(data.begin(), data.end());
  });
  std::vector<int> group(static_cast<std::size_t>(n));
  std::iota(group.begin(), group.end(), 0);
  std::vector<std::vector<float>> data = buffers;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] { comm.all_reduce(group, r, data[static_cast<std::size_t>(r)]); });
  for (auto& thread : threads) thread.join();
  for (int r = 0; r < n; ++r)
    if (demo.steps.back().buffers[static_cast<std::size_t>(r)] != data[static_cast<std::size_t>(r)])
      throw std::logic_error("the ring demo's last recorded step differs from the all-reduce's result");
  return demo;
}

}  // namespace shardscope::lessons
