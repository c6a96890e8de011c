// How much slower our CPU kernels run while several rank threads compute at once (the CPU backend runs every rank
// as a thread of one process): a GEMM and an elementwise kernel timed alone, then on 2 (and 4) threads at once,
// each on its own buffers, for the same number of calls. The simulator scales a CPU run's compute by the slowdown
// at its world size (sim/profile_costs.cpp). It holds what the machine gives: cores shared with other work, two
// vCPUs that are one physical core's hyperthreads.
#include <algorithm>
#include <chrono>
#include <latch>
#include <thread>

#include "calibration/calibration_parts.h"
#include "calibration/device_buffers.h"

namespace shardscope::calibration {

namespace {

struct Work {
  exec::KernelLaunch launch;
  std::unique_ptr<DeviceBuffers> buffers;
};

Work make_work(Context& c, bool gemm) {
  Work w;
  w.buffers = std::make_unique<DeviceBuffers>(*c.rank);
  DeviceBuffers& b = *w.buffers;
  if (gemm) {
    constexpr int m = 256, n = 512, k = 512;
    w.launch.kernel = Kernel::LinearForward;
    w.launch.rows = m;
    w.launch.in_features = k;
    w.launch.out_features = n;
    w.launch.operands = {b.values(m * k), b.values(n * k), {}, b.zeros(m * n * 4)};
  } else {
    constexpr int elements = 1 << 20;
    w.launch.kernel = Kernel::ReluBackward;
    w.launch.operands = {b.values(elements), b.values(elements), b.zeros(elements * 4)};
  }
  return w;
}

// Seconds a call on each of `threads` threads running `count` calls at once, three times; the median over threads'
// medians.
double concurrent_seconds(Context& c, bool gemm, int threads, int count) {
  std::vector<Work> work;
  for (int t = 0; t < threads; ++t) work.push_back(make_work(c, gemm));
  std::vector<double> per_thread(static_cast<std::size_t>(threads));
  std::latch start(threads);
  const auto drive = [&](int t) {
    exec::RankBackend& rank = *c.rank;
    rank.run_kernel(work[static_cast<std::size_t>(t)].launch);
    start.arrive_and_wait();
    std::vector<double> reps;
    for (int r = 0; r < 3; ++r) {
      const auto begin = std::chrono::steady_clock::now();
      for (int i = 0; i < count; ++i) rank.run_kernel(work[static_cast<std::size_t>(t)].launch);
      reps.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() / count);
    }
    std::sort(reps.begin(), reps.end());
    per_thread[static_cast<std::size_t>(t)] = reps[1];
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(drive, t);
  drive(0);
  for (auto& thread : pool) thread.join();
  std::sort(per_thread.begin(), per_thread.end());
  return per_thread[per_thread.size() / 2];
}

}  // namespace

void calibrate_concurrency(Context& c) {
  if (c.kind != exec::BackendKind::Cpu) return;  // GPU ranks do not share one device's cores this way
  const std::vector<int> counts = c.quick ? std::vector<int>{2} : std::vector<int>{2, 4};
  for (const bool gemm : {true, false}) {
    const double alone = c.time(make_work(c, gemm).launch);
    const int count = std::max(1, static_cast<int>((c.quick ? 0.005 : 0.05) / alone));
    auto& curve = c.profile->concurrency[gemm ? "gemm" : "elementwise"];
    for (const int threads : counts)
      curve.push_back({double(threads), std::max(1.0, concurrent_seconds(c, gemm, threads, count) / alone)});
  }
  std::string line = "concurrency: slowdown with";
  for (const auto& [kind, curve] : c.profile->concurrency)
    for (const auto& p : curve) line += " " + kind + " " + std::to_string(int(p.threads)) + " threads x" + std::to_string(p.slowdown).substr(0, 4);
  c.say(line);
}

}  // namespace shardscope::calibration
