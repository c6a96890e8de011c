// `shardscope-cli memory`: lower a scenario, validate the plan, account its memory, print text or JSON.
#pragma once
#include <iosfwd>
#include <string>

#include "memory/accounting.h"
#include "plan/plan.h"
#include "scenario/scenario.h"
#include "strategy/batch_fit.h"

namespace shardscope::cli {

struct MemoryRun {
  ResolvedScenario scenario;
  Plan plan;
  MemoryReport report;
  BatchFit fit;  // the largest batch that fits every device (empty when not searched)
};

enum class BatchSearch { Run, Skip };

// Throws ScenarioError for bad settings, std::logic_error if the lowered plan fails validation (a bug). The batch
// search costs some 40 lowerings: callers that never show its answer (compare) skip it.
MemoryRun run_memory(const Scenario& scenario, BatchSearch batch_search = BatchSearch::Run);

void print_memory_text(const MemoryRun& run, std::ostream& out);
std::string memory_json(const MemoryRun& run);

}  // namespace shardscope::cli
