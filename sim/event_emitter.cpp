// EventEmitter: per-timestamp sorting and TraceEvent construction.
#include "sim/event_emitter.h"

#include <algorithm>
#include <cstdlib>

namespace shardscope {

EventEmitter::EventEmitter(const Plan& plan, const MemoryReport* memory, TraceSink& sink)
    : plan_(plan), memory_(memory), sink_(sink), sample_cursor_(plan.programs.size(), 0) {
  held_.reserve(256);
}

void EventEmitter::record(TimeNs t_ns, int rank, OpIndex op, RecordKind kind) {
  if (t_ns != held_t_ns_) {
    flush();
    held_t_ns_ = t_ns;
  }
  held_.push_back({rank, op, kind});
}

void EventEmitter::flush() {
  std::sort(held_.begin(), held_.end(), [](const Record& a, const Record& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.op != b.op) return a.op < b.op;
    return a.kind < b.kind;
  });
  for (const Record& record : held_) emit_record(record);
  held_.clear();
}

void EventEmitter::emit_now(const TraceEvent& event) {
  sink_.emit(event);
  ++emitted_;
}

void EventEmitter::emit_record(const Record& record) {
  const Program& program = plan_.programs[static_cast<std::size_t>(record.rank)];
  const Op& op = program.ops[static_cast<std::size_t>(record.op)];
  TraceEvent event;
  event.rank = record.rank;
  event.t_ns = held_t_ns_;
  event.step = op.step;
  event.op = record.op;
  event.stream = op.stream;
  if (record.kind != RecordKind::Marker) {
    event.kind = record.kind == RecordKind::Begin ? TraceEventKind::OpBegin : TraceEventKind::OpEnd;
  } else if (op.kind == OpKind::Phase) {
    event.kind = TraceEventKind::Phase;
    event.text = op.phase;
  } else {
    event.kind = op.kind == OpKind::Alloc ? TraceEventKind::Alloc : TraceEventKind::Free;
    const TensorInfo& tensor = program.tensors[static_cast<std::size_t>(op.tensor)];
    event.tensor = op.tensor;
    event.category = tensor.category;
    event.bytes = tensor.bytes;
    if (memory_) {
      // The series holds one sample per alloc / free op in program order, and a rank's alloc / free ops (all on
      // its compute stream) reach the emitter in program order too, so a cursor finds each op's sample.
      const auto& series = memory_->ranks[static_cast<std::size_t>(record.rank)].series;
      std::size_t& cursor = sample_cursor_[static_cast<std::size_t>(record.rank)];
      while (cursor < series.size() && series[cursor].op < record.op) ++cursor;
      if (cursor < series.size() && series[cursor].op == record.op) {
        const Bytes before = cursor > 0 ? series[cursor - 1].allocated : 0;
        event.bytes = std::llabs(series[cursor].allocated - before);  // the block as accounted
        event.allocated_after = series[cursor].allocated;
        event.reserved_after = series[cursor].reserved;
        ++cursor;
      }
    }
  }
  sink_.emit(event);
  ++emitted_;
}

}  // namespace shardscope
