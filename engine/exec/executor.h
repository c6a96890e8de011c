// The executor: runs a lowered plan for real on a backend (CPU threads, or CUDA GPUs where built:
// exec/backends/backend_factory.h) and reports it as the same trace events the simulator emits, with measured
// wall-clock times, plus per-rank results (loss, parameter checksum, measured memory).
// Usage:
//   ResolvedScenario scenario = resolve_scenario(settings);
//   Plan plan = lower_validated_plan(scenario);
//   VectorTraceSink sink;
//   ExecutionResult result = execute(scenario, plan, sink, {});   // result.ok, result.ranks[r].loss, sink.events()
//   (that execute() picks the backend: exec/backends/backend_factory.h)
// Threads: one host thread per rank walks its program in order (allocations, frees, phases, compute-stream ops);
// ops on the communication and copy streams run on one thread per stream and rank, in program order, so DDP's
// all-reduces overlap the backward. `deps` across streams are waited on; a Free waits until every op issued on
// another stream that reads the tensor is done (as record_stream keeps a CUDA block alive).
// Events: OpBegin / OpEnd per compute, collective, send and recv op (ns since the run started), Alloc / Free per
// allocation (allocated_after / reserved_after as the allocator measured them), Phase per phase op; time-ordered
// per rank; then RunEnd ("ok", or why the run stopped, after one Error event naming the failed rank).
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/backend_choice.h"
#include "exec/loss_scaler.h"
#include "exec/tracking_allocator.h"
#include "plan/plan.h"
#include "scenario/scenario.h"
#include "trace/events/trace_sink.h"

namespace shardscope::exec {

// A plan the backend cannot run (a layer kind, a dtype, an op without a kernel). Thrown before any event.
class UnsupportedPlanError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The asked-for backend cannot run here: not built, or no usable GPU ("no usable CUDA GPU: cudaGetDeviceCount
// returned 35 (...)"), or the multi-node settings do not fit. Thrown before any trace event.
class BackendUnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExecutionOptions {
  // Batches (exec/data/batch_source.h) and parameter initialisation (exec/data/parameter_init.h).
  std::uint64_t seed = 1234;
  // Learning rate; unset: torch's defaults, 1e-3 for Adam / AdamW and 1e-2 for SGD (with or without momentum).
  std::optional<double> lr;
  std::map<int, AllocationFailurePlan> allocation_failures;  // by rank: refuse allocations on purpose
  int blas_threads = 1;       // OpenBLAS threads per GEMM (rank threads already run GEMMs side by side)
  bool plan_in_header = true;  // the TraceHeader holds a copy of the plan
  bool keep_parameters = false;  // each ParameterPiece also keeps its values
  // Initial values by parameter name (exec/data/parameter_files.h, run --load-params) instead of generated ones.
  std::shared_ptr<const std::map<std::string, std::vector<float>>> initial_parameters;
  // Ranks other than 0 initialise their parameters from another seed, as processes that do not share a seed
  // would: only the strategy's own synchronisation (DDP's construction broadcast) can make replicas agree.
  bool distinct_replica_init = false;
  // CPU backend: each rank may hold at most the scenario device's capacity (an allocation beyond it fails as out of
  // memory), so a plan that would not fit the GPU fails where the accounting says it would, also without a GPU.
  bool cpu_device_capacity = true;
  BackendKind backend = BackendKind::Cpu;  // cuda: exec/backends/backend_factory.h says when it cannot run here
  MultiNodeOptions multinode;              // CUDA backend only; this process runs its node's ranks
  LossScaleSettings loss_scale;            // fp16 training's dynamic loss scaling (exec/loss_scaler.h)
};

struct PhaseMeasurement {
  std::string name;
  int step = 0;
  OpIndex op = -1;
  Bytes allocated = 0;  // live bytes when the phase op ran
  CategoryBytes by_category;
};

// A piece of a model parameter a rank holds at the end: elements [first_element, first_element + numel) of `name`
// (a whole parameter, or the rank's shard of it), where the plan's ParameterInit placed them.
struct ParameterPiece {
  std::string name;
  std::int64_t first_element = 0;
  std::int64_t numel = 0;
  std::int64_t parameter_numel = 0;  // of the whole parameter
  double sum = 0;             // of its elements, in double
  double sum_of_squares = 0;
  std::vector<float> values;  // with ExecutionOptions::keep_parameters
};

// cudaMemGetInfo beside the allocator, at a phase (CUDA backend): the device's use outside the allocator's
// segments is the CUDA context, cuBLAS and NCCL (and other processes on the GPU).
struct DeviceMemoryMeasurement {
  std::string phase;
  int step = 0;
  Bytes device_used = 0;         // total - free
  Bytes device_total = 0;
  Bytes allocator_reserved = 0;  // the caching allocator's segments
  Bytes outside_allocator() const { return device_used > allocator_reserved ? device_used - allocator_reserved : 0; }
};

struct RankExecution {
  int rank = 0;
  // The value of the rank's last loss op (MseLoss / CrossEntropyLoss); for a pipeline's micro-batches, the mean of
  // the last step's micro-batch losses (each unscaled, as Megatron's training loop averages loss_reduced over
  // micro-batches); none if the rank computes no loss.
  std::optional<double> loss;
  std::vector<double> step_losses;  // the same for every step, in order (step 1 first)
  double param_checksum = 0;              // Σ of every parameter element this rank holds at the end, in double
  double param_sum_of_squares = 0;        // Σ of their squares
  Bytes measured_peak_bytes = 0;          // the most this rank's allocator held at one moment
  CategoryBytes measured_peak_by_category;  // per category, its own peak
  std::vector<PhaseMeasurement> phases;
  std::vector<ParameterPiece> parameters;  // what it holds of the model's parameters (exec/data/model_parameters.h)
  std::vector<DeviceMemoryMeasurement> device_memory;  // CUDA backend: at each phase
  // fp16 training: the loss scale after the last step and how many steps an overflow skipped.
  std::optional<double> loss_scale;
  int skipped_steps = 0;
};

struct ExecutionResult {
  bool ok = false;
  std::string error;     // empty when ok: "rank 1 failed: out of memory ..."
  int failed_rank = -1;  // -1: none, or the run itself
  TimeNs run_time_ns = 0;
  std::vector<RankExecution> ranks;  // the ranks this process ran (all of them unless the run spans nodes)
  std::vector<std::string> device_names;  // per rank, as the trace header names them ("GPU 0 (..., shared by ...)")
};

class Backend;
// Builds the backend options.backend names (exec/backends/backend_factory.h: make_backend, which throws
// BackendUnavailableError when it cannot run here). Passed in, not called by name, because the backends build on
// the executor: the one execute() most callers want is in exec/backends/backend_factory.h.
using BackendMaker = std::function<std::unique_ptr<Backend>(const Plan&, const ExecutionOptions&)>;

// Runs `plan` on the backend `make_backend` builds. Throws UnsupportedPlanError for what the backend cannot run and
// std::logic_error for a plan that fails validation (plan/validate.h); both before the backend is made and before
// sink.begin(). Failures while running (out of memory, a lowering bug such as an operand that is not alive, a
// kernel's shape check) do not throw: they end the run cleanly, with an Error event, RunEnd and result.ok == false.
ExecutionResult execute(const ResolvedScenario& scenario, const Plan& plan, TraceSink& sink,
                        const ExecutionOptions& options, const BackendMaker& make_backend);

}  // namespace shardscope::exec
