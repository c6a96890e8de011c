// The backends this build has, in one place: the CPU backend always; the CUDA backend when this build has it
// (SHARDSCOPE_HAVE_CUDA, private to the shardscope_backends target) and a usable GPU is present, opened as a plugin
// on first use (exec/backends/cuda_plugin_loader.h). Links the executor; nothing below it knows which backends
// exist.
#pragma once
#include "exec/exec_layer.h"
#include <memory>

#include "exec/backend.h"
#include "exec/executor.h"
#include "run/gpu_inventory.h"

namespace shardscope::exec {

// Throws BackendUnavailableError (exec/executor.h) when options.backend cannot run here.
std::unique_ptr<Backend> make_backend(const Plan& plan, const ExecutionOptions& options);

// Runs `plan` on the backend options.backend names: execute(..., make_backend) of exec/executor.h, whose comment
// lists what it throws; BackendUnavailableError comes after the plan checks and before any event.
ExecutionResult execute(const ResolvedScenario& scenario, const Plan& plan, TraceSink& sink,
                        const ExecutionOptions& options = {});

// The CUDA GPUs this process can use, or why there are none. Callable in every build (without the CUDA backend it
// says so); never throws.
GpuInventory detect_gpus();

}  // namespace shardscope::exec
