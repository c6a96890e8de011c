// make_backend: CPU directly; CUDA through the plugin exec/cuda/ builds (opened on first use by
// exec/backends/cuda_plugin_loader.h) when built, after checking that a GPU is usable; execute() on it.
#include "exec/backends/backend_factory.h"

#include "exec/cpu/cpu_backend.h"

#ifdef SHARDSCOPE_HAVE_CUDA
#include "exec/backends/cuda_plugin_loader.h"
#endif

namespace shardscope::exec {

std::unique_ptr<Backend> make_backend(const Plan& plan, const ExecutionOptions& options) {
  const int world = static_cast<int>(plan.programs.size());
  if (options.backend == BackendKind::Cpu) {
    if (options.multinode.nnodes > 1)
      throw BackendUnavailableError("--nnodes > 1 needs --backend cuda (the CPU backend runs in one process)");
    return std::make_unique<cpu::CpuBackend>(world, options.blas_threads);
  }
  const GpuInventory inventory = detect_gpus();
  if (!inventory.usable()) throw BackendUnavailableError(inventory.reason);
#ifdef SHARDSCOPE_HAVE_CUDA
  // A usable inventory came from the plugin, so it is loaded.
  return cuda_backend_plugin().entry_points->make_backend(plan, options, inventory);
#else
  throw BackendUnavailableError(inventory.reason);  // unreachable: an inventory without CUDA has no GPUs
#endif
}

ExecutionResult execute(const ResolvedScenario& scenario, const Plan& plan, TraceSink& sink,
                        const ExecutionOptions& options) {
  return execute(scenario, plan, sink, options, make_backend);
}

}  // namespace shardscope::exec
