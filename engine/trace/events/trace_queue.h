// A sink that producers (executing ranks, a simulation on a worker thread) write into without ever waiting for a
// reader: events wait in a buffer until the consumer drains them into the TraceStore it draws from. The one mutex is
// held only to append an event or to swap the whole buffer out, never while the store is updated or drawn.
// Thread contract: begin / emit / end from any producer threads (begin first, end last, as TraceSink says);
// drain_into from one consumer thread, which alone touches its store.
// Usage (the GUI, once a frame):
//   queue.drain_into(store);             // then read `store` freely: no producer takes its lock
#pragma once
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include "trace/store/trace_store.h"

namespace shardscope {

class TraceQueue : public TraceSink {
 public:
  void begin(const TraceHeader& header) override;  // starts afresh: events not yet drained are dropped
  void emit(const TraceEvent& event) override;
  void end() override;

  // Moves what arrived since the last drain into `store`, in arrival order (a begin first, an end last), at most
  // `max_events` of it (the rest goes first at the next call: a frame's share of a run faster than the window).
  // Returns the number of events moved.
  std::size_t drain_into(TraceStore& store, std::size_t max_events = std::numeric_limits<std::size_t>::max());
  // Events emitted so far; lock-free, for progress displays.
  std::uint64_t produced() const { return produced_.load(std::memory_order_relaxed); }

 private:
  std::mutex mutex_;
  std::optional<TraceHeader> header_;  // begun and not yet handed to the store
  std::vector<TraceEvent> pending_;
  bool ended_ = false;
  std::vector<TraceEvent> draining_;   // the consumer's buffer, swapped with pending_ (its capacity is reused)
  std::size_t drained_ = 0;            // draining_[0, drained_) are in the store
  bool end_after_draining_ = false;    // the producers ended before draining_ was taken
  std::atomic<std::uint64_t> produced_{0};
};

}  // namespace shardscope
