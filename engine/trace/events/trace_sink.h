// Where trace events go: a file writer, a TraceStore, a test's vector. Producers call begin() once, then
// emit() in time order per rank (ranks may interleave), then end().
// Thread contract: emit() may be called from several rank threads at once; every implementation serialises.
#pragma once
#include <mutex>
#include <vector>

#include "trace/events/trace_event.h"

namespace shardscope {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void begin(const TraceHeader& header) = 0;
  virtual void emit(const TraceEvent& event) = 0;
  virtual void end() {}
  // False when every event emitted is dropped unread: a producer may then skip building events (the simulator
  // still counts them), though it must still call begin(), emit() for run-wide events, and end().
  virtual bool keeps_events() const { return true; }
};

// Drops every event: for runs whose summary is all that is wanted.
class DiscardTraceSink : public TraceSink {
 public:
  void begin(const TraceHeader&) override {}
  void emit(const TraceEvent&) override {}
  bool keeps_events() const override { return false; }
};

// Keeps everything in memory; for tests and for producers that hand the events on afterwards.
class VectorTraceSink : public TraceSink {
 public:
  void begin(const TraceHeader& header) override { header_ = header; }
  void emit(const TraceEvent& event) override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
  }
  const TraceHeader& header() const { return header_; }
  const std::vector<TraceEvent>& events() const { return events_; }

 private:
  std::mutex mutex_;
  TraceHeader header_;
  std::vector<TraceEvent> events_;
};

// Forwards to several sinks (e.g. a file and a TraceStore).
class TeeTraceSink : public TraceSink {
 public:
  explicit TeeTraceSink(std::vector<TraceSink*> sinks) : sinks_(std::move(sinks)) {}
  void begin(const TraceHeader& header) override {
    for (auto* s : sinks_) s->begin(header);
  }
  void emit(const TraceEvent& event) override {
    for (auto* s : sinks_) s->emit(event);
  }
  void end() override {
    for (auto* s : sinks_) s->end();
  }
  bool keeps_events() const override {
    for (auto* s : sinks_)
      if (s->keeps_events()) return true;
    return false;
  }

 private:
  std::vector<TraceSink*> sinks_;
};

}  // namespace shardscope
