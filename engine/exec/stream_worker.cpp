// StreamWorker: a FIFO of tasks drained by one thread.
#include "exec/stream_worker.h"

namespace shardscope::exec {

StreamWorker::StreamWorker() : thread_([this] { loop(); }) {}

StreamWorker::~StreamWorker() { finish(); }

void StreamWorker::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  changed_.notify_one();
}

void StreamWorker::finish() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void StreamWorker::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return closing_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // closing and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace shardscope::exec
