// Turns the event loop's records into TraceEvents in a deterministic, time-sorted order: records of one
// timestamp are held back and emitted sorted by (rank, op index, begin before end), then the next timestamp.
// Alloc / Free records carry the accounted bytes and the rank's allocated / reserved totals from the accounting.
// Not thread-safe; one emitter per simulation.
#pragma once
#include "sim/sim_layer.h"
#include <cstdint>
#include <vector>

#include "memory/accounting.h"
#include "plan/plan.h"
#include "trace/trace_sink.h"

namespace shardscope {

enum class RecordKind : std::uint8_t { Begin, Marker, End };  // Marker: an Alloc / Free / Phase op (no duration)

class EventEmitter {
 public:
  // `memory` (series kept) gives Alloc / Free bytes; nullptr: Alloc / Free events carry the tensor bytes only.
  EventEmitter(const Plan& plan, const MemoryReport* memory, TraceSink& sink);

  // Records must come in non-decreasing t.
  void record(TimeNs t_ns, int rank, OpIndex op, RecordKind kind);
  void flush();  // emits what is held back
  void emit_now(const TraceEvent& event);  // run-wide events (Error, RunEnd), after flush()
  std::size_t emitted() const { return emitted_; }

 private:
  struct Record {
    std::int32_t rank;
    OpIndex op;
    RecordKind kind;
  };
  void emit_record(const Record& record);

  const Plan& plan_;
  const MemoryReport* memory_;
  TraceSink& sink_;
  TimeNs held_t_ns_ = -1;
  std::vector<Record> held_;
  std::vector<std::size_t> sample_cursor_;  // per rank: the next memory sample (alloc / free ops in program order)
  std::size_t emitted_ = 0;
};

}  // namespace shardscope
