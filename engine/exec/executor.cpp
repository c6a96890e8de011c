// execute(): checks, the CPU backend, one RankRunner thread per rank, then RunEnd and the per-rank results.
#include "exec/executor.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <thread>

#include "exec/cpu/cpu_support.h"
#include "exec/cpu/host_memory.h"
#include "exec/rank_runner.h"
#include "memory/accounting.h"
#include "plan/validate.h"
#include "trace/events/run_events.h"

namespace shardscope::exec {

namespace {

// The CUDA backend's kernels mirror the CPU backend's (the same layers and ops, 16-bit operands staged through
// fp32 the same way): the same checks, its name. fp16's overflow vote meets in one process (exec/loss_scaler.h).
void check_backend_support(const ResolvedScenario& scenario, const Plan& plan, const ExecutionOptions& options) {
  if (options.backend == BackendKind::Cpu) return check_cpu_support(scenario, plan);
  if (scenario.settings.training.dtype == Dtype::Fp16 && options.multinode.nnodes > 1)
    throw UnsupportedPlanError("fp16 across several processes is not supported yet: the ranks' vote on skipping an "
                               "overflowed step meets in one process (use bf16, or one node)");
  try {
    check_cpu_support(scenario, plan);
  } catch (const UnsupportedPlanError& e) {
    std::string message = e.what();
    const std::string cpu = "the CPU backend";
    for (auto at = message.find(cpu); at != std::string::npos; at = message.find(cpu, at))
      message.replace(at, cpu.size(), "the CUDA backend");
    throw UnsupportedPlanError(message);
  }
  if (scenario.settings.strategy.tp > 1 && scenario.model.transformer)
    throw UnsupportedPlanError("--tp " + std::to_string(scenario.settings.strategy.tp) + " with '" + scenario.model.spec +
                               "': the CUDA backend executes tensor parallelism for MLP Linear pairs only; a GPT model's "
                               "tensor-parallel kernels (the block's parts, the vocabulary-parallel embedding and "
                               "cross-entropy) run on the CPU backend (--backend cpu)");
}

void check_plan(const ResolvedScenario& scenario, const Plan& plan, const ExecutionOptions& options) {
  const ValidationReport report = validate_plan(plan);
  if (!report.ok()) throw std::logic_error("the lowered plan is invalid: " + report.errors.front());
  for (std::size_t r = 0; r < plan.programs.size(); ++r)
    if (plan.programs[r].rank != static_cast<int>(r))
      throw std::logic_error("the plan's program " + std::to_string(r) + " says it is rank " +
                             std::to_string(plan.programs[r].rank));
  check_backend_support(scenario, plan, options);
}

TraceHeader make_header(const ResolvedScenario& scenario, const Plan& plan, const ExecutionOptions& options,
                        const Backend& backend) {
  const bool emulated = options.backend == BackendKind::Cpu && options.cpu_device_capacity && scenario.device.capacity > 0;
  std::vector<TraceDevice> devices;
  for (const auto& program : plan.programs)
    devices.push_back({program.rank,
                       emulated ? "CPU, " + scenario.device.name + " capacity" : backend.device_name(program.rank),
                       emulated ? scenario.device.capacity : backend.device_capacity(program.rank),
                       backend.physical_device(program.rank)});
  TraceHeader header = make_run_header(scenario, plan, "executor " + backend.name(),
                                       accounting_rules_label(accounting_mode_of(options.backend)), options.plan_in_header,
                                       std::move(devices));
  const RuntimeVersions versions = backend.runtime_versions();
  header.driver_version = versions.driver;
  header.cuda_runtime_version = versions.cuda_runtime;
  header.nccl_version = versions.nccl;
  return header;
}

// The CPU backend's ranks share host memory: refuse a run whose ranks' exact peaks (each capped at the device's
// capacity, where an emulated out of memory stops it) add up to more than the machine has available.
void check_host_memory(const ResolvedScenario& scenario, const Plan& plan, const ExecutionOptions& options) {
  const std::optional<Bytes> available = available_host_memory();
  if (!available) return;
  const MemoryReport report = account_memory(plan, AccountingMode::Exact, scenario.device.capacity, /*keep_series=*/false);
  Bytes needed = 0;
  for (const RankMemory& rank : report.ranks)
    needed += options.cpu_device_capacity ? std::min(rank.peak_allocated, scenario.device.capacity) : rank.peak_allocated;
  if (needed > *available)
    throw UnsupportedPlanError("the " + std::to_string(plan.programs.size()) + " ranks would hold " + format_bytes(needed) +
                               " of host memory at their peaks, more than the " + format_bytes(*available) +
                               " this machine has available: use a smaller batch or model, or fewer ranks");
}

// With ExecutionOptions::cpu_device_capacity, every rank's allocator gets the device's capacity as its budget
// (unless a test already gave that rank a budget).
std::map<int, AllocationFailurePlan> allocation_limits(const ResolvedScenario& scenario, const ExecutionOptions& options,
                                                       int world) {
  std::map<int, AllocationFailurePlan> limits = options.allocation_failures;
  if (options.backend != BackendKind::Cpu || !options.cpu_device_capacity || scenario.device.capacity <= 0) return limits;
  for (int r = 0; r < world; ++r)
    if (!limits[r].budget_bytes) {
      limits[r].budget_bytes = scenario.device.capacity;
      limits[r].budget_name = "the " + scenario.device.name + " capacity (emulated on the CPU)";
    }
  return limits;
}

}  // namespace

ExecutionResult execute(const ResolvedScenario& scenario, const Plan& plan, TraceSink& sink,
                        const ExecutionOptions& options, const BackendMaker& make_backend) {
  check_plan(scenario, plan, options);
  if (options.backend == BackendKind::Cpu) check_host_memory(scenario, plan, options);
  const int world = static_cast<int>(plan.programs.size());
  const std::unique_ptr<Backend> backend_owner = make_backend(plan, options);
  Backend& backend = *backend_owner;
  for (const auto& [rank, failures] : allocation_limits(scenario, options, world))
    if (rank >= 0 && rank < world && backend.runs_rank(rank)) backend.rank(rank).allocator().set_failure_plan(failures);

  TraceHeader header = make_header(scenario, plan, options, backend);
  std::vector<std::string> device_names;
  for (const TraceDevice& device : header.devices) device_names.push_back(device.name);
  sink.begin(std::move(header));
  const RunClock::time_point start = RunClock::now();
  std::deque<RankTrace> traces;  // deque: RankTrace holds a mutex (not movable)
  for (int r = 0; r < world; ++r) traces.emplace_back(r, sink, start);
  RunControl control([&](int rank, const std::string& message) {
    backend.abort(rank, message);  // wakes every rank blocked in a collective or a receive
    // RankTrace::emit stamps the rank and the time.
    if (rank >= 0) traces[static_cast<std::size_t>(rank)].emit(make_error_event(rank, 0, message));
  });
  std::deque<OpCompletion> completions;
  for (const auto& program : plan.programs) {
    completions.emplace_back(program.ops.size(), control);
    control.watch(&completions.back());
  }

  // fp16: every rank that unscales gradients votes on each step's overflow (exec/loss_scaler.h). Other runs have
  // no vote, so their plans are not scanned.
  int voters = 0;
  if (scenario.settings.training.dtype == Dtype::Fp16)
    for (const auto& program : plan.programs)
      if (std::any_of(program.ops.begin(), program.ops.end(), [](const Op& op) { return op.kernel == Kernel::UnscaleGradients; }))
        ++voters;
  OverflowVote overflow_vote(voters, control);
  const RunContext context{scenario, plan, options, optimizer_settings(scenario, options.lr), backend, control, &overflow_vote};
  std::vector<std::unique_ptr<RankRunner>> runners;
  for (int r = 0; r < world; ++r)
    if (backend.runs_rank(r))
      runners.push_back(std::make_unique<RankRunner>(context, r, traces[static_cast<std::size_t>(r)],
                                                   completions[static_cast<std::size_t>(r)]));
  {
    std::vector<std::jthread> threads;
    for (auto& runner : runners) threads.emplace_back([&runner] { runner->run(); });
  }

  ExecutionResult result;
  result.ok = !control.stopped();
  result.failed_rank = control.failed_rank();
  result.device_names = std::move(device_names);
  if (!result.ok) result.error = "rank " + std::to_string(result.failed_rank) + " failed: " + control.error();
  for (const auto& runner : runners) result.ranks.push_back(runner->result());
  runners.clear();  // stream threads joined, allocator listeners detached before the backend goes
  result.run_time_ns = ns_since(start);

  sink.emit(make_run_end_event(result.run_time_ns, result.error));
  sink.end();
  return result;
}

}  // namespace shardscope::exec
