// Runs one rank's program: the rank's host thread walks the ops in program order (allocations, frees, phases and
// compute-stream ops, which it runs itself) and posts communication- and copy-stream ops to their stream threads.
// Failures go to the run's RunControl; the runner then stops at the next op. Internal to the executor.
#pragma once
#include "exec/exec_layer.h"
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "exec/backend.h"
#include "exec/executor.h"
#include "exec/kernel_launch_builder.h"
#include "exec/loss_scaler.h"
#include "exec/rank_trace.h"
#include "exec/run_control.h"
#include "exec/stream_worker.h"
#include "exec/tensor_table.h"
#include "memory/late_frees.h"

namespace shardscope::exec {

// What the rank runners of one run share (read-only during the run, or thread-safe).
struct RunContext {
  const ResolvedScenario& scenario;
  const Plan& plan;
  const ExecutionOptions& options;
  OptimizerSettings optimizer;
  Backend& backend;
  RunControl& control;
  OverflowVote* overflow_vote = nullptr;  // fp16 training: the ranks' agreement on skipped steps
};

class RankRunner {
 public:
  RankRunner(const RunContext& context, int rank, RankTrace& trace, OpCompletion& completion);
  ~RankRunner();
  // The host thread's body; returns when the program ended or the run stopped. Never throws.
  void run();
  RankExecution result() const;

 private:
  void run_op(OpIndex index);
  const std::vector<float>* given_values(const ParameterInit& init) const;
  void run_alloc(OpIndex index, const Op& op);
  void run_free(OpIndex index, const Op& op);
  void record_phase(OpIndex index, const Op& op);
  void issue_on_stream(OpIndex index, const Op& op, std::vector<DeviceBuffer> operands);
  // Waits for deps, then OpBegin, the work, OpEnd, done flag. On the thread of the op's stream.
  void execute_work(OpIndex index, const Op& op, std::vector<DeviceBuffer> operands);
  // Returns the device's time for the kernel where the backend measures one (RankBackend::run_kernel_timed).
  std::optional<TimeNs> run_compute(OpIndex index, const Op& op, std::vector<DeviceBuffer> operands);
  void record_loss(const Op& op, float loss);
  // The tensor's values from the plan's ParameterInit (generated, constant or --load-params), in its element type.
  std::vector<std::byte> initial_bytes(const TensorInfo& info) const;
  CommunicationLaunch communication_launch(const Op& op, std::vector<DeviceBuffer> operands) const;
  void report(const std::exception& error);
  void measure_parameters();

  const RunContext& context_;
  const Program& program_;
  RankBackend& backend_;
  RankTrace& trace_;
  OpCompletion& completion_;
  TensorTable tensors_;
  KernelLaunchBuilder launches_;
  std::array<std::unique_ptr<StreamWorker>, kStreamCount> workers_;
  std::map<TensorId, std::vector<OpIndex>> in_flight_;  // tensor -> ops posted to a stream thread that read it
  OpIndex current_op_ = -1;  // the alloc / free op the allocator listener reports (host thread only)
  LateFreeSchedule late_frees_;  // as the accounting completes TensorInfo::free_completes_late frees (host thread)
  std::optional<LossScaler> scaler_;     // fp16 training only
  std::atomic<int> skipped_step_{-1};    // the step whose optimizer update an overflow cancelled

  mutable std::mutex result_mutex_;  // the loss may be written by a stream thread
  RankExecution result_;
  // Losses of the current step's micro-batches (pipelines): their mean is the reported loss.
  int loss_step_ = -1;
  double loss_sum_ = 0;
  int loss_count_ = 0;
};

}  // namespace shardscope::exec
