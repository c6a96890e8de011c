// EventEmitter: per-timestamp sorting and TraceEvent construction.
#include "sim/event_emitter.h"

#include <algorithm>
#include <cstdlib>

namespace shardscope {

EventEmitter::EventEmitter(const Plan& plan, const SimGraph& graph, const MemoryReport* memory, TraceSink& sink)
    : plan_(plan), graph_(graph), memory_(memory), sink_(sink), counting_only_(!sink.keeps_events()) {
  if (counting_only_) return;
  sample_cursor_.assign(plan.programs.size(), 0);
  held_.reserve(256);
}

void EventEmitter::open_timestamp(TimeNs t_ns) {
  flush();
  held_t_ns_ = t_ns;
}

void EventEmitter::flush() {
  std::sort(held_.begin(), held_.end(), [](const Record& a, const Record& b) {
    if (a.global_op != b.global_op) return a.global_op < b.global_op;
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
  const int rank = graph_.rank_of(record.global_op);
  const OpIndex index = record.global_op - graph_.rank_offset[static_cast<std::size_t>(rank)];
  const Program& program = plan_.programs[static_cast<std::size_t>(rank)];
  const Op& op = program.ops[static_cast<std::size_t>(index)];
  TraceEvent event;
  event.rank = rank;
  event.t_ns = held_t_ns_;
  event.step = op.step;
  event.op = index;
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
      const auto& series = memory_->ranks[static_cast<std::size_t>(rank)].series;
      std::size_t& cursor = sample_cursor_[static_cast<std::size_t>(rank)];
      while (cursor < series.size() && series[cursor].op < index) ++cursor;
      if (cursor < series.size() && series[cursor].op == index) {
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
