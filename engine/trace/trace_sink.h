// Where trace events go: a file writer, a TraceStore, a test's vector. Producers call begin() once, then
// emit() in time order per rank (ranks may interleave), then end().
// Thread contract: emit() may be called from several rank threads at once; every implementation serialises.
#pragma once
#include <mutex>
#include <vector>

#include "trace/trace_event.h"

namespace shardscope {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void begin(const TraceHeader& header) = 0;
  virtual void emit(const TraceEvent& event) = 0;
  virtual void end() {}
};

// Drops every event: for runs whose summary is all that is wanted.
class DiscardTraceSink : public TraceSink {
 public:
  void begin(const TraceHeader&) override {}
  void emit(const TraceEvent&) override {}
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

 private:
  std::vector<TraceSink*> sinks_;
};

}  // namespace shardscope
