// What the threads of one executed run share to stop together: the first failure (rank, message), a stop flag,
// and the per-rank op completion flags that cross-stream waits block on (woken when the run stops).
// Standard library only; the executor wires it to the backend's abort().
#pragma once
#include "exec/exec_layer.h"
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "plan/op.h"

namespace shardscope::exec {

// Thrown inside a thread that waited while the run stopped because of another failure; never reported itself.
class RunStopped : public std::runtime_error {
 public:
  RunStopped() : std::runtime_error("the run stopped") {}
};

class RunControl;

// Done flags for the ops of one rank's program. Thread-safe; wait() throws RunStopped once the run stops.
class OpCompletion {
 public:
  OpCompletion(std::size_t op_count, const RunControl& control) : done_(op_count, 0), control_(control) {}
  void mark_done(OpIndex op);
  bool is_done(OpIndex op) const;
  void wait(OpIndex op) const;
  void wake_all() const;  // called by RunControl::fail: lock, then notify

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<char> done_;
  const RunControl& control_;
};

class RunControl {
 public:
  // on_first_failure runs once, for the first failure, before any waiter wakes (the executor aborts the
  // backend's communication and emits the Error event there).
  using FailureHandler = std::function<void(int rank, const std::string& message)>;
  explicit RunControl(FailureHandler on_first_failure) : on_first_failure_(std::move(on_first_failure)) {}

  bool stopped() const { return stopped_.load(); }
  // Records a failure; only the first counts (later ones are consequences: aborted collectives, stopped waits).
  void fail(int rank, const std::string& message);
  void watch(const OpCompletion* completion) { watched_.push_back(completion); }  // before threads start

  int failed_rank() const;
  std::string error() const;

 private:
  FailureHandler on_first_failure_;
  std::atomic<bool> stopped_{false};
  mutable std::mutex mutex_;
  int failed_rank_ = -1;
  std::string error_;
  std::vector<const OpCompletion*> watched_;
};

}  // namespace shardscope::exec
