// TraceQueue: append under a short lock, swap the buffer out to drain (a batch at a time when drains are bounded).
#include "trace/events/trace_queue.h"

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

std::size_t TraceQueue::drain_into(TraceStore& store, std::size_t max_events) {
  if (drained_ < draining_.size()) {
    std::lock_guard lock(mutex_);
    if (header_) {  // begun afresh: the rest of the previous run's batch is dropped, as begin() says
      drained_ = draining_.size();
      end_after_draining_ = false;
    }
  }
  if (drained_ == draining_.size()) {  // the previous batch is all in: take what arrived since
    draining_.clear();
    drained_ = 0;
    std::optional<TraceHeader> header;
    {
      std::lock_guard lock(mutex_);
      std::swap(draining_, pending_);
      header = std::exchange(header_, std::nullopt);
      end_after_draining_ = std::exchange(ended_, false);
    }
    if (header) store.begin(*header);
  }
  const std::size_t count = std::min(max_events, draining_.size() - drained_);
  for (std::size_t i = drained_; i < drained_ + count; ++i) store.emit(draining_[i]);
  drained_ += count;
  if (drained_ == draining_.size() && std::exchange(end_after_draining_, false)) store.end();
  return count;
}

}  // namespace shardscope
