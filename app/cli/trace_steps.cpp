// plan_with_kernels and trace_step_timings (trace_steps.h).
#include "cli/trace_steps.h"

#include <exception>

#include "run/planless_step_timing.h"
#include "scenario/scenario.h"
#include "strategy/lower.h"

namespace shardscope::cli {

std::optional<Plan> plan_with_kernels(const TraceHeader& header) {
  if (!header.plan || header.scenario_json.empty()) return std::nullopt;
  try {
    Scenario scenario = parse_scenario_json(header.scenario_json, "the trace's scenario");
    scenario.cluster.device_profile.clear();  // times only: the lowering does not read it, and it may not be here
    const Plan lowered = lower_validated_plan(resolve_scenario(scenario), {.kernel_operands = false});
    Plan plan = *header.plan;
    if (lowered.programs.size() != plan.programs.size()) return std::nullopt;
    for (std::size_t r = 0; r < plan.programs.size(); ++r) {
      auto& ops = plan.programs[r].ops;
      const auto& mine = lowered.programs[r].ops;
      if (ops.size() != mine.size()) return std::nullopt;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].kind != mine[i].kind || ops[i].step != mine[i].step || ops[i].label.str() != mine[i].label.str())
          return std::nullopt;
        ops[i].kernel = mine[i].kernel;
      }
    }
    return plan;
  } catch (const std::exception&) {
    return std::nullopt;  // a scenario this build cannot lower: no step times, the rest of the report stands
  }
}

std::vector<StepTiming> trace_step_timings(const TraceStore& store, const OpIntervalSink& intervals) {
  return store.read([&](const TraceData& data) {
    if (!data.header.plan) return planless_step_timings(data);
    const std::optional<Plan> plan = plan_with_kernels(data.header);
    return plan ? step_timings(*plan, intervals.intervals()) : std::vector<StepTiming>{};
  });
}

}  // namespace shardscope::cli
