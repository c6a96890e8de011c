// RunControl and OpCompletion: first failure wins; stopping wakes every cross-stream wait.
#include "exec/run_control.h"

namespace shardscope::exec {

void OpCompletion::mark_done(OpIndex op) {
  {
    std::lock_guard lock(mutex_);
    done_.at(static_cast<std::size_t>(op)) = 1;
  }
  changed_.notify_all();
}

bool OpCompletion::is_done(OpIndex op) const {
  std::lock_guard lock(mutex_);
  return done_.at(static_cast<std::size_t>(op)) != 0;
}

void OpCompletion::wait(OpIndex op) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return done_.at(static_cast<std::size_t>(op)) != 0 || control_.stopped(); });
  if (done_[static_cast<std::size_t>(op)] == 0) throw RunStopped();
}

void OpCompletion::wake_all() const {
  // Taking the lock orders the notify after a waiter's predicate check, so no wake-up is lost.
  { std::lock_guard lock(mutex_); }
  changed_.notify_all();
}

void RunControl::fail(int rank, const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (failed_rank_ != -1 || !error_.empty()) return;
    failed_rank_ = rank;
    error_ = message;
  }
  if (on_first_failure_) on_first_failure_(rank, message);
  stopped_.store(true);
  for (const OpCompletion* completion : watched_) completion->wake_all();
}

int RunControl::failed_rank() const {
  std::lock_guard lock(mutex_);
  return failed_rank_;
}

std::string RunControl::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

}  // namespace shardscope::exec
