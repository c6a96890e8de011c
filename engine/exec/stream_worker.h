// The thread of one non-compute stream (communication or copy) of one rank: runs posted tasks one after another,
// in the order posted, as a CUDA stream runs its kernels. Standard library only.
#pragma once
#include "exec/exec_layer.h"
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace shardscope::exec {

class StreamWorker {
 public:
  StreamWorker();
  ~StreamWorker();  // finishes the posted tasks, then joins
  StreamWorker(const StreamWorker&) = delete;
  StreamWorker& operator=(const StreamWorker&) = delete;

  // Tasks must not throw (the executor's tasks report their failures to the run's RunControl themselves).
  void post(std::function<void()> task);
  // Runs what was posted, then ends the thread. Idempotent.
  void finish();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace shardscope::exec
