// Test helpers for the simulator: a scenario with round cost-model numbers, and hand-built plans (tiny
// collectives, and GPipe / 1F1B pipeline schedules) made with ProgramBuilder.
#pragma once
#include <vector>

#include "plan/program_builder.h"
#include "scenario/scenario.h"

namespace shardscope::testing {

// H100-80 fp32: 67 TFLOP/s; with compute efficiency 1 that is 67,000 FLOP per ns.
constexpr double kFlopsPerNs = 67000.0;
inline double flops_for_ns(TimeNs ns) { return static_cast<double>(ns) * kFlopsPerNs; }

// H100, compute and memory efficiency 1, no kernel overhead, every link `gbps` GB/s (= bytes per ns) with
// `latency_us` per hop; exact accounting.
inline ResolvedScenario round_number_scenario(double gbps, double latency_us, int world = 2) {
  Scenario s;
  s.cluster.world = world;
  s.accounting.mode = AccountingMode::Exact;
  s.simulation.compute_efficiency = 1;
  s.simulation.memory_efficiency = 1;
  s.simulation.kernel_overhead_us = 0;
  s.simulation.link_gbps = gbps;
  s.simulation.link_latency_us = latency_us;
  return resolve_scenario(s);
}

// A pipeline of `stages` ranks (rank r = stage r), `micro_batches` micro-batches, every stage's forward taking
// forward_ns and backward backward_ns; activations and gradients are zero-byte messages (free with zero latency).
// Forward activations travel on the communication stream, gradients on the copy stream, each in schedule order,
// so that one direction's rendezvous never waits behind the other's (as PyTorch runs P2P on separate streams).
// `steps` repeats the schedule as steps 1, 2, …; with `optimizer_ns` > 0 every stage ends each step with an
// optimizer step of that length (no micro-batch: not the schedule's work), else nothing lies between them.
enum class PipelineSchedule { GPipe, OneForwardOneBackward };

inline Plan pipeline_plan(PipelineSchedule schedule, int stages, int micro_batches, TimeNs forward_ns, TimeNs backward_ns,
                          int steps = 1, TimeNs optimizer_ns = 0) {
  Plan plan;
  plan.strategy = "hand-built pipeline";
  for (int r = 0; r < stages; ++r) {
    ProgramBuilder b(r);
    std::vector<OpIndex> gradient_messages;
    auto forward = [&](int j) {
      b.set_micro_batch(j);
      OpIndex recv = r > 0 ? b.recv(r - 1, 0, "recv activation") : -1;
      const OpIndex f = b.compute(ComputeKind::Forward, "forward", flops_for_ns(forward_ns), 0, r);
      if (recv >= 0) b.add_dep(f, recv);
      if (r < stages - 1) b.send(r + 1, 0, "send activation", {f});
    };
    auto backward = [&](int j) {
      b.set_micro_batch(j);
      OpIndex recv = -1;
      if (r < stages - 1) gradient_messages.push_back(recv = b.recv(r + 1, 0, "recv gradient"));
      const OpIndex g = b.compute(ComputeKind::Backward, "backward", flops_for_ns(backward_ns), 0, r);
      if (recv >= 0) b.add_dep(g, recv);
      if (r > 0) gradient_messages.push_back(b.send(r - 1, 0, "send gradient", {g}));
    };
    for (int step = 1; step <= steps; ++step) {
      b.set_step(step);
      if (schedule == PipelineSchedule::GPipe) {
        // GPipe (Huang et al. 2019): all forwards, then all backwards (last micro-batch first).
        for (int j = 0; j < micro_batches; ++j) forward(j);
        for (int j = micro_batches - 1; j >= 0; --j) backward(j);
      } else {
        // 1F1B / PipeDream-Flush (Narayanan et al. 2021): stage r runs p − r − 1 warm-up forwards, then
        // alternates one forward and one backward, then drains the remaining backwards.
        const int warmup = std::min(stages - r - 1, micro_batches);
        for (int j = 0; j < warmup; ++j) forward(j);
        for (int i = 0; i < micro_batches - warmup; ++i) {
          forward(warmup + i);
          backward(i);
        }
        for (int j = micro_batches - warmup; j < micro_batches; ++j) backward(j);
      }
      if (optimizer_ns > 0) {
        b.set_micro_batch(-1);
        b.compute(ComputeKind::Optimizer, "optimizer step", flops_for_ns(optimizer_ns), 0, r);
      }
    }
    Program program = b.finish();
    for (OpIndex i : gradient_messages) program.ops[static_cast<std::size_t>(i)].stream = Stream::Copy;
    plan.programs.push_back(std::move(program));
  }
  return plan;
}

}  // namespace shardscope::testing
