// Collectives between the ranks of a fresh two-rank backend (the CPU backend's rank threads; the CUDA backend's
// local path or NCCL), each rank driven by its own thread as the executor's stream threads drive them, and the
// launch and synchronisation floors. Sizes as nccl-tests' S (sim/collective_cost.h): all-reduce and broadcast the
// buffer, all-gather the gathered output, reduce-scatter the input; a message its bytes ("send_recv"). On the CPU
// each call moves the next of enough copies of its buffers to exceed the caches (copies_beyond_caches), as a step's
// collectives meet buckets and parameters last written a layer or a step before.
#include <algorithm>
#include <chrono>
#include <thread>

#include "calibration/calibration_parts.h"
#include "calibration/device_buffers.h"
#include "exec/backends/backend_factory.h"

namespace shardscope::calibration {

namespace {

constexpr int kRanks = 2;

exec::CommunicationLaunch collective(CollectiveKind kind, std::vector<exec::DeviceBuffer> operands) {
  exec::CommunicationLaunch l;
  l.kind = OpKind::Collective;
  l.collective = kind;
  l.group = {0, 1};
  l.root = 0;
  l.operands = std::move(operands);
  return l;
}

}  // namespace

void calibrate_collectives(Context& c) {
  Plan plan;
  for (int r = 0; r < kRanks; ++r) {
    plan.programs.emplace_back();
    plan.programs.back().rank = r;
  }
  plan.groups = {{0, 1}};
  exec::ExecutionOptions options;
  options.backend = c.kind;
  const std::unique_ptr<exec::Backend> backend = exec::make_backend(plan, options);
  const std::vector<std::int64_t> sizes = c.quick ? std::vector<std::int64_t>{1 << 12, 1 << 16}
                                                  : std::vector<std::int64_t>{1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24};
  const char* kinds[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv"};
  // Why cold, on the CPU only: a training step's collectives move buckets and parameters that other work has pushed
  // out of the caches since they were written (the weight gradients of the layers after, the optimizer's states),
  // and on this machine a 3 MiB broadcast of parameters a step had just updated ran 0.93 ms, the same broadcast
  // repeated on one warm buffer 0.28 ms (2 ranks on 2 vCPUs; memory moves at the DRAM's rate, not the L3's). A GPU's
  // profiles keep warm buffers: NCCL's figures in h200-shardscope.json were measured so, and no GPU has measured a
  // cold one.
  const bool cold = c.kind == exec::BackendKind::Cpu;
  for (const char* kind : kinds) {
    for (const std::int64_t bytes : sizes) {
      const std::int64_t floats = bytes / 4;
      // Launches per rank: what that rank passes for this kind, in `copies` copies of its buffers.
      const std::int64_t copies = cold ? copies_beyond_caches(c.kind, 2 * bytes) : 1;
      std::vector<std::unique_ptr<DeviceBuffers>> buffers;
      std::vector<std::vector<exec::CommunicationLaunch>> launches(kRanks);
      for (int r = 0; r < kRanks; ++r) {
        buffers.push_back(std::make_unique<DeviceBuffers>(backend->rank(r)));
        DeviceBuffers& b = *buffers.back();
        const std::string k = kind;
        auto& mine = launches[static_cast<std::size_t>(r)];
        for (std::int64_t copy = 0; copy < copies; ++copy) {
          if (k == "all_reduce") mine.push_back(collective(CollectiveKind::AllReduce, {b.values(floats)}));
          if (k == "broadcast") mine.push_back(collective(CollectiveKind::Broadcast, {b.values(floats)}));
          if (k == "all_gather") mine.push_back(collective(CollectiveKind::AllGather, {b.values(floats / kRanks), b.zeros(bytes)}));
          if (k == "reduce_scatter")
            mine.push_back(collective(CollectiveKind::ReduceScatter, {b.values(floats), b.zeros(bytes / kRanks)}));
          if (k == "send_recv") {
            exec::CommunicationLaunch l;
            l.kind = r == 0 ? OpKind::Send : OpKind::Recv;
            l.peer = 1 - r;
            l.operands = {b.values(floats)};
            mine.push_back(l);
          }
        }
      }
      // Calls per repetition: about 16 MiB moved, at least 3; three repetitions, the median.
      const int count = static_cast<int>(std::clamp<std::int64_t>((std::int64_t{16} << 20) / bytes, 3, c.quick ? 5 : 200));
      std::vector<double> seconds;
      const auto drive = [&](int r, bool timed) {
        exec::RankBackend& rank = backend->rank(r);
        const auto& mine = launches[static_cast<std::size_t>(r)];
        std::size_t next = 0;
        rank.run_communication(mine[next++ % mine.size()]);  // warm-up, and both ranks past their start
        for (int rep = 0; rep < 3; ++rep) {
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < count; ++i) rank.run_communication(mine[next++ % mine.size()]);
          rank.synchronize(Stream::Communication);
          if (timed) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / count);
        }
      };
      std::thread other(drive, 1, false);
      drive(0, true);
      other.join();
      std::sort(seconds.begin(), seconds.end());
      c.profile->collectives[kind].push_back({double(kRanks), double(bytes), seconds[1]});
    }
  }
  c.profile->collective_backend = c.kind == exec::BackendKind::Cpu ? "threads" : "cuda";
  c.profile->collective_note = std::string("ranks of one ") + backend->name() + " backend, one thread each; " +
                               (c.kind == exec::BackendKind::Cpu ? "the CPU backend's in-process ring" : backend->device_name(0));
  c.say("collectives: all-reduce, all-gather, reduce-scatter, broadcast, send/recv between 2 ranks");
}

}  // namespace shardscope::calibration
