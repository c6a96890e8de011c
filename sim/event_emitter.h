// Turns the event loop's records into TraceEvents in a deterministic, time-sorted order: records of one
// timestamp are held back and emitted sorted by (rank, op index, begin before end), then the next timestamp.
// Alloc / Free records carry the accounted bytes and the rank's allocated / reserved totals from the accounting.
// A sink that drops events unread (TraceSink::keeps_events) gets none built: the emitter only counts them.
// Not thread-safe; one emitter per simulation.
#pragma once
#include "sim/sim_layer.h"
#include <cstdint>
#include <vector>

#include "memory/accounting.h"
#include "plan/plan.h"
#include "sim/sim_graph.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

enum class RecordKind : std::uint8_t { Begin, Marker, End };  // Marker: an Alloc / Free / Phase op (no duration)

class EventEmitter {
 public:
  // `memory` (series kept) gives Alloc / Free bytes; nullptr: Alloc / Free events carry the tensor bytes only.
  // `graph`: the plan's, whose global op ids the records name.
  EventEmitter(const Plan& plan, const SimGraph& graph, const MemoryReport* memory, TraceSink& sink);

  // `global_op`: the op's id in the graph (rank-major: rank r's ops follow rank r - 1's); the emitter finds its rank
  // only when it builds the event. Records must come in non-decreasing t.
  void record(TimeNs t_ns, GlobalOp global_op, RecordKind kind) {
    if (counting_only_) {
      ++emitted_;
      return;
    }
    if (t_ns != held_t_ns_) open_timestamp(t_ns);
    held_.push_back({global_op, kind});
  }
  void flush();  // emits what is held back
  void emit_now(const TraceEvent& event);  // run-wide events (Error, RunEnd), after flush()
  std::size_t emitted() const { return emitted_; }

 private:
  struct Record {
    GlobalOp global_op;  // rank-major, so sorting by it sorts by (rank, op index)
    RecordKind kind;
  };
  void open_timestamp(TimeNs t_ns);  // emits the held records of the previous timestamp
  void emit_record(const Record& record);

  const Plan& plan_;
  const SimGraph& graph_;
  const MemoryReport* memory_;
  TraceSink& sink_;
  TimeNs held_t_ns_ = -1;
  std::vector<Record> held_;
  std::vector<std::size_t> sample_cursor_;  // per rank: the next memory sample (alloc / free ops in program order)
  std::size_t emitted_ = 0;
  const bool counting_only_;  // the sink drops events: count them, build none
};

}  // namespace shardscope
