// TraceStore: what the timeline and memory panels draw, built incrementally from trace events, so a live run
// draws while it grows and a replayed file looks the same. Depends on engine/ only (no GUI).
// Usage (GUI thread, once a frame):
//   if (store.generation() != drawn_generation) { ... }
//   store.read([&](const TraceData& d) {
//     const RankTimeline* r = d.rank(0);
//     r->streams[0].for_each_overlapping(t0, t1, [&](const TraceSpan& s) { draw(s); });
//     TraceMemorySample m = r->memory_at(t_cursor);
//   });
// Thread contract: begin/emit/end may be called from several producer threads (serialised by one mutex). Readers
// on any thread use read(fn), which holds the same mutex while fn runs: fn sees a consistent state and must not
// keep references past its return, nor call back into the store. A producer that must never wait for a reader (a
// live run the window draws) writes into a TraceQueue instead (trace_queue.h), which the reader's thread drains
// into the store it alone then uses: the window draws without any lock a producer takes. The convenience accessors below take the lock and return copies. generation() is
// lock-free and changes after every begin/emit/end, so a reader can skip work when nothing arrived.
// Event handling: OpBegin opens a span on (rank, stream), OpEnd with the same (rank, op) closes it; Alloc / Free
// add a memory sample (category totals from bytes, allocated / reserved from the event); DeviceMemory adds a
// measured sample; Phase adds a marker; Error and RunEnd are recorded run-wide. Every event widens the time
// range. Without a plan in the header, an OpBegin's text names its span and an Alloc's text its tensor
// (TraceData::op_text / tensor_text).
// Untrusted traces (a file anyone may hand over): an event naming what the header lacks is counted as ignored, never
// indexed, so a reader of TraceData may index the header's plan with any span's op and any allocation's tensor:
// - a rank below 0 (other than Error / RunEnd, which may be run-wide), or at or past the header's rank count (its
//   devices or plan programs, whichever is more); a header naming no rank lets events open ranks up to
//   kMaxTraceRanks;
// - an op or tensor below -1, or (where the header's plan has a program for the rank) past the program's ops or
//   tensors;
// - a time past ±kMaxTraceTimeNs; an Alloc / Free whose byte counts lie past ±kMaxTraceBytes or would take a
//   category's running total past it;
// - an OpBegin so late that it would go before more than kMaxLateBeginSpans spans of its stream.
// Ends are matched among a rank's kMaxOpenSpansPerRank most recent open spans (an older one stays open, as a span
// whose end never came). With both limits an event costs at most a few hundred steps: 131,072 begins that never
// end, or that arrive in reverse time order, took 31 s and more than 100 s to open when every event scanned every
// open or later span.
#pragma once
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/store/range_argmax.h"
#include "trace/store/segmented_array.h"
#include "trace/store/span_kind.h"
#include "trace/store/trace_memory_series.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

inline constexpr TimeNs kSpanOpen = std::numeric_limits<TimeNs>::max();  // end_ns of a span not yet ended
// A rank's open spans an end is matched among: ShardScope's runs have at most one a stream open (the simulator's
// and the executors' streams run one op at a time), an imported profile one a CUDA stream.
inline constexpr std::size_t kMaxOpenSpansPerRank = 256;
// How far back among its stream's spans a begin that arrives late may go: live ranks deliver events nearly in time
// order (a neighbour swapped now and then).
inline constexpr std::size_t kMaxLateBeginSpans = 256;

struct TraceSpan {
  OpIndex op = -1;   // index into the rank's Program::ops (-1: not a plan op)
  int step = 0;      // the step of the OpBegin event (replayed steps reuse op indices)
  TimeNs begin_ns = 0;
  TimeNs end_ns = kSpanOpen;
  bool open() const { return end_ns == kSpanOpen; }
};

// Spans of one stream of one rank, ordered by begin_ns. Ops on one stream do not overlap, so ends are ordered
// too; the lookups stay correct if they do (reach holds the running maximum of ends).
// The arrays a run appends to for its whole length are SegmentedArrays: they grow without moving what they hold, so
// a live run never stalls the window while a vector of millions is copied.
struct StreamSpans {
  SegmentedArray<TraceSpan> spans;
  SegmentedArray<TimeNs> reach;  // reach[i] = max(end_ns of spans[0..i]), open spans counting as kSpanOpen
  // begin_ns of every Send / Recv span, sorted: a timeline that jumps over thousands of sub-pixel spans at once
  // still finds each pipeline message among them (it draws every message, however short).
  SegmentedArray<TimeNs> message_begins;

  // Index range [first, last) holding every span that overlaps [t0, t1] (begin <= t1 and end >= t0; an open span
  // reaches to +infinity); O(log n). Without overlapping spans every span in the range overlaps.
  std::pair<std::size_t, std::size_t> overlapping(TimeNs t0, TimeNs t1) const;
  template <class Fn>
  void for_each_overlapping(TimeNs t0, TimeNs t1, Fn&& fn) const {
    const auto [first, last] = overlapping(t0, t1);
    for (std::size_t i = first; i < last; ++i)
      if (spans[i].end_ns >= t0) fn(spans[i]);
  }
};

struct TraceMemoryPeak {
  Bytes allocated = 0;   // highest allocated of the rank
  TimeNs t_ns = 0;       // first time it was reached
  CategoryBytes by_category;  // breakdown at that moment
  Bytes reserved = 0;    // highest reserved (may be reached at another time)
  TimeNs reserved_t_ns = 0;
};

struct TracePhaseMarker {
  std::string name;
  int step = 0;
  TimeNs t_ns = 0;
};

struct TraceDeviceMemorySample {  // measured (DeviceMemory events)
  TimeNs t_ns = 0;
  Bytes used = 0;
  Bytes total = 0;
  Bytes allocator_reserved = 0;  // the executor's caching allocator at that moment (used − this: outside it)
};

struct TraceRunError {
  int rank = -1;
  int step = 0;
  TimeNs t_ns = 0;
  std::string message;
};

struct TraceRunEnd {
  TimeNs t_ns = 0;
  std::string text;  // "ok" or why the run stopped
};

struct RankTimeline {
  int rank = 0;
  std::array<StreamSpans, kStreamCount> streams;  // indexed by Stream
  TraceMemorySeries memory;  // one sample per Alloc / Free, in arrival order, ordered by t_ns (a change reported late
                             // is kept at the latest time); compact: samples are values rebuilt on access
  TraceMemorySeries::Allocations allocations() const { return {&memory}; }  // every Alloc / Free, in arrival order
  TraceMemoryPeak peak;
  std::vector<TracePhaseMarker> phases;
  std::vector<TraceDeviceMemorySample> device_memory;
  std::size_t open_spans = 0;
  // A hash of the (t_ns, allocated) of every memory sample, folded in as samples arrive: ranks with identical
  // series (the memory panel draws them as one chart) have equal signatures and sample counts.
  std::uint64_t memory_signature = 0;
  RangeArgMax<Bytes> memory_highest;  // over memory[i].allocated: see highest_allocated
  // Plan-less traces (recorded from PyTorch, imported) name their spans and tensors in the events' text, not in a
  // plan: an OpBegin's text by its op id and the first Alloc's text by its tensor id, as indices into
  // TraceData::texts (a text repeated, as kernel names are, is kept once). Empty when the header has a plan.
  std::unordered_map<OpIndex, std::uint32_t> op_texts;
  std::unordered_map<TensorId, std::uint32_t> tensor_texts;

  const StreamSpans& stream(Stream s) const { return streams[static_cast<std::size_t>(s)]; }
  // The memory state at time t: the last sample with t_ns <= t (after all changes at t); zeros with t_ns = t
  // before the first sample. O(log n).
  TraceMemorySample memory_at(TimeNs t) const;
  // The first of the samples memory[first, last) with the highest allocated (first < last <= memory.size()); O(log n),
  // so a chart column holding thousands of samples still shows its exact peak.
  std::size_t highest_allocated(std::size_t first, std::size_t last) const;
};

struct TraceData {
  TraceHeader header;
  bool begun = false;
  bool ended = false;                 // end() was called
  std::vector<RankTimeline> ranks;    // ranks[r].rank == r; one per program of the plan or device (more as events name them where the header names none)
  std::vector<TraceRunError> errors;
  std::optional<TraceRunEnd> run_end;
  TimeNs t_min = 0, t_max = 0;        // time range of all events; both 0 before the first event
  // Every op begin and end time over all ranks, sorted and unique, kept so as events arrive (the playhead steps
  // through them without re-sorting). A SegmentedArray, as StreamSpans' arrays are.
  SegmentedArray<TimeNs> boundaries;
  std::uint64_t event_count = 0;
  std::uint64_t unmatched_op_ends = 0;  // OpEnd with no open OpBegin of that (rank, op)
  std::uint64_t ignored_events = 0;
  std::vector<std::string> texts;  // the distinct span and tensor texts of a plan-less trace (see RankTimeline)
  std::vector<std::optional<SpanKind>> text_span_kinds;  // span_kind_of_text of each of texts

  const RankTimeline* rank(int r) const {
    return r >= 0 && static_cast<std::size_t>(r) < ranks.size() ? &ranks[static_cast<std::size_t>(r)] : nullptr;
  }
  // The text a plan-less trace gave op `op` / tensor `tensor` of rank `r`; "" when it gave none.
  std::string_view op_text(int r, OpIndex op) const;
  std::string_view tensor_text(int r, TensorId tensor) const;
  // What op `op`'s span on rank `r` is: its plan op's kinds, or what a plan-less trace's text names (span_kind.h);
  // nullopt when neither says.
  std::optional<SpanKind> span_kind(int r, OpIndex op) const;
};

class TraceStore : public TraceSink {
 public:
  void begin(const TraceHeader& header) override;  // starts afresh: drops what a previous run left
  void emit(const TraceEvent& event) override;
  void end() override;

  template <class Fn>
  decltype(auto) read(Fn&& fn) const {
    std::lock_guard lock(mutex_);
    if (!boundary_tail_.empty()) merge_boundary_tail();  // readers see data.boundaries sorted and unique
    return fn(static_cast<const TraceData&>(data_));
  }
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Convenience copies (each takes the lock once).
  TraceHeader header() const;
  int rank_count() const;
  std::pair<TimeNs, TimeNs> time_range() const;
  std::vector<TraceSpan> spans_in(int rank, Stream stream, TimeNs t0, TimeNs t1) const;
  TraceMemorySample memory_at(int rank, TimeNs t) const;
  TraceMemoryPeak peak(int rank) const;
  std::vector<TracePhaseMarker> phases(int rank) const;
  std::vector<TraceRunError> errors() const;
  std::optional<TraceRunEnd> run_end() const;

 private:
  struct OpenSpan {
    OpIndex op;
    Stream stream;
    std::size_t index;  // into the stream's spans
  };
  RankTimeline& timeline(int rank);
  bool admits(const TraceEvent& e) const;  // names only ranks, ops and tensors the header has (see above)
  void open_span(const TraceEvent& e);
  void close_span(const TraceEvent& e);
  void add_boundary(TimeNs t);
  void merge_boundary_tail() const;
  std::uint32_t intern(const std::string& text);

  mutable std::mutex mutex_;
  TraceData data_;
  std::vector<std::vector<OpenSpan>> open_;  // per rank: spans begun and not ended (about one per stream)
  mutable std::vector<TimeNs> boundary_tail_;  // boundaries before the newest, not yet merged into data_.boundaries
  int header_ranks_ = 0;                     // ranks the header names (0: none; events may open ranks)
  std::unordered_map<std::string, std::uint32_t> text_index_;  // data_.texts' index of each text
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace shardscope
