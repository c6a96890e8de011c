// The launch floor (a one-element kernel through the backend), an idle synchronisation, and the executor's own
// time per op: a tiny MLP run through the whole executor (pipeline/run_pipeline.h), whose steps are nearly all
// host work between kernels; its idle per op (run/step_timing.h) is that time.
#include <algorithm>

#include "calibration/calibration_parts.h"
#include "calibration/device_buffers.h"
#include "pipeline/run_pipeline.h"
#include "run/step_timing.h"

namespace shardscope::calibration {

void calibrate_overheads(Context& c) {
  {
    DeviceBuffers b(*c.rank);
    exec::KernelLaunch tiny;
    tiny.kernel = Kernel::ReluForward;
    tiny.operands = {b.values(1), b.zeros(4)};
    c.profile->launch_s = c.time(tiny);
    c.profile->synchronize_s = c.timer.seconds([&]() -> std::optional<TimeNs> {
      c.rank->synchronize(Stream::Compute);
      return std::nullopt;
    });
  }
  Scenario s;
  s.name = "calibration: executor overhead";
  s.model.spec = "mlp:4x8:relu";
  s.training.batch = 2;
  s.training.steps = c.quick ? 3 : 12;
  s.training.optimizer = OptimizerKind::Adam;
  s.strategy.kind = StrategyKind::Single;
  s.cluster.world = 1;
  OpIntervalSink sink;
  exec::ExecutionOptions options;
  options.backend = c.kind;
  const pipeline::ExecutedRun run = pipeline::execute_scenario(s, sink, options);
  if (!run.result.ok) throw std::runtime_error("calibration: the executor-overhead run failed: " + run.result.error);
  const std::vector<StepTiming> steps = step_timings(run.plan, sink.intervals());
  // The simulator charges executor_op_s for every op before the rank's next compute op begins (sim/sim_graph.cpp),
  // so a step's window (run/step_timing.h: from its first compute op after the batch load to its last op) holds the
  // host time of the ops after that first compute op through the last compute op: count those, so the simulated idle
  // of this very run is the measured one.
  double idle = 0, ops = 0;
  const auto& plan_ops = run.plan.programs[0].ops;
  for (const StepTiming& t : steps) {
    if (t.step < 2) continue;  // the first step creates the optimizer's state
    idle += static_cast<double>(t.by_kind[static_cast<std::size_t>(TimeKind::Idle)]) * 1e-9;
    std::size_t load = plan_ops.size(), first = plan_ops.size(), last = 0;
    for (std::size_t i = 0; i < plan_ops.size(); ++i) {
      const Op& op = plan_ops[i];
      if (op.step != t.step || op.kind != OpKind::Compute) continue;
      if (op.kernel == Kernel::LoadBatch) load = i;
      else if (load < i && first == plan_ops.size()) first = i;
      if (op.kernel != Kernel::LoadBatch) last = i;
    }
    if (first < last) ops += static_cast<double>(last - first);
  }
  c.profile->executor_op_s = ops > 0 ? idle / ops : 0;
  c.say("overheads: launch " + std::to_string(c.profile->launch_s * 1e6) + " us, executor " +
        std::to_string(c.profile->executor_op_s * 1e6) + " us an op");
}

}  // namespace shardscope::calibration
