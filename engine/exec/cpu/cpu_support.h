// What the CPU backend can run, checked before a run starts so that a refusal names the reason (a layer kind,
// an op whose lowering says nothing about what it computes) instead of failing half-way.
#pragma once
#include "exec/exec_layer.h"
#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope::exec {

// Throws UnsupportedPlanError (exec/executor.h) with a message for the user:
// - layer kinds other than Linear, ReLU, Flatten, Dropout in eval (--no-grad), and GPT-2's (embedding, blocks,
//   LayerNorm); Llama models;
// - a compute op with Kernel::None that needs math (a Linear or ReLU layer's forward / backward, a loss, an
//   optimizer step), and a collective / send / recv with payload but no buffer: the lowering is not annotated.
void check_cpu_support(const ResolvedScenario& scenario, const Plan& plan);

}  // namespace shardscope::exec
