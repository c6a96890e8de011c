// TraceQueue: append under a short lock, swap the buffer out to drain.
#include "trace/trace_queue.h"

namespace shardscope {

void TraceQueue::begin(const TraceHeader& header) {
  std::lock_guard lock(mutex_);
  header_ = header;
  pending_.clear();
  ended_ = false;
}

void TraceQueue::emit(const TraceEvent& event) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(event);
  }
  produced_.fetch_add(1, std::memory_order_relaxed);
}

void TraceQueue::end() {
  std::lock_guard lock(mutex_);
  ended_ = true;
}

std::size_t TraceQueue::drain_into(TraceStore& store) {
  std::optional<TraceHeader> header;
  bool ended = false;
  draining_.clear();
  {
    std::lock_guard lock(mutex_);
    std::swap(draining_, pending_);
    header = std::exchange(header_, std::nullopt);
    ended = std::exchange(ended_, false);
  }
  if (header) store.begin(*header);
  for (const TraceEvent& event : draining_) store.emit(event);
  if (ended) store.end();
  return draining_.size();
}

}  // namespace shardscope
