// TraceStore: incremental spans, memory series and peaks per rank (see trace_store.h).
#include "trace/store/trace_store.h"

#include <algorithm>

namespace shardscope {

std::pair<std::size_t, std::size_t> StreamSpans::overlapping(TimeNs t0, TimeNs t1) const {
  const auto last = std::upper_bound(spans.begin(), spans.end(), t1, [](TimeNs t, const TraceSpan& s) { return t < s.begin_ns; });
  const auto first = std::lower_bound(reach.begin(), reach.end(), t0);
  const auto l = static_cast<std::size_t>(last - spans.begin());
  const auto f = static_cast<std::size_t>(first - reach.begin());
  return {std::min(f, l), l};
}

TraceMemorySample RankTimeline::memory_at(TimeNs t) const {
  const std::size_t through = memory.samples_through(t);
  if (through == 0) {
    TraceMemorySample zero;
    zero.t_ns = t;
    return zero;
  }
  return memory[through - 1];
}

std::size_t RankTimeline::highest_allocated(std::size_t first, std::size_t last) const {
  return memory_highest.argmax(first, last, [&](std::size_t i) { return memory.allocated_at(i); });
}

namespace {

bool within_trace_bytes(Bytes b) { return b <= kMaxTraceBytes && b >= -kMaxTraceBytes; }

// Recomputes reach from index `from` on, stopping once the values no longer change.
void update_reach(StreamSpans& s, std::size_t from) {
  for (std::size_t i = from; i < s.spans.size(); ++i) {
    const TimeNs value = std::max(i == 0 ? std::numeric_limits<TimeNs>::min() : s.reach[i - 1], s.spans[i].end_ns);
    if (i > from && s.reach[i] == value) break;
    s.reach[i] = value;
  }
}

// One more (t, allocated) sample folded into a rank's series signature (splitmix64 finaliser of a running value).
std::uint64_t fold(std::uint64_t signature, TimeNs t, Bytes allocated) {
  std::uint64_t x = signature ^ (static_cast<std::uint64_t>(t) * 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(allocated);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A Send or Recv of the header's plan (admits() has checked the op index).
bool is_message(const TraceData& data, const TraceEvent& e) {
  const Plan* plan = data.header.plan.get();
  if (!plan || e.op < 0 || static_cast<std::size_t>(e.rank) >= plan->programs.size()) return false;
  const Op& op = plan->programs[static_cast<std::size_t>(e.rank)].ops[static_cast<std::size_t>(e.op)];
  return op.kind == OpKind::Send || op.kind == OpKind::Recv;
}

}  // namespace

void TraceStore::begin(const TraceHeader& header) {
  {
    std::lock_guard lock(mutex_);
    data_ = TraceData{};
    data_.header = header;
    data_.begun = true;
    open_.clear();
    boundary_tail_.clear();
    text_index_.clear();
    std::size_t ranks = header.devices.size();
    if (header.plan) ranks = std::max(ranks, header.plan->programs.size());
    // A header naming more ranks than a run can have (only a damaged or hostile file does: the reader refuses it)
    // names none, so events may open up to kMaxTraceRanks ranks as without a header.
    header_ranks_ = ranks <= static_cast<std::size_t>(kMaxTraceRanks) ? static_cast<int>(ranks) : 0;
    for (int r = 0; r < header_ranks_; ++r) timeline(r);
  }
  generation_.fetch_add(1, std::memory_order_release);
}

void TraceStore::end() {
  {
    std::lock_guard lock(mutex_);
    data_.ended = true;
  }
  generation_.fetch_add(1, std::memory_order_release);
}

RankTimeline& TraceStore::timeline(int rank) {
  while (data_.ranks.size() <= static_cast<std::size_t>(rank)) {
    data_.ranks.emplace_back();
    data_.ranks.back().rank = static_cast<int>(data_.ranks.size()) - 1;
    open_.emplace_back();
  }
  return data_.ranks[static_cast<std::size_t>(rank)];
}

bool TraceStore::admits(const TraceEvent& e) const {
  if (e.rank < 0 || e.rank >= (header_ranks_ > 0 ? header_ranks_ : kMaxTraceRanks)) return false;
  if (e.op < -1 || e.tensor < -1) return false;
  const Plan* plan = data_.header.plan.get();
  if (plan && static_cast<std::size_t>(e.rank) < plan->programs.size()) {
    const Program& program = plan->programs[static_cast<std::size_t>(e.rank)];
    if (e.op >= 0 && static_cast<std::size_t>(e.op) >= program.ops.size()) return false;
    if (e.tensor >= 0 && static_cast<std::size_t>(e.tensor) >= program.tensors.size()) return false;
  }
  return true;
}

void TraceStore::emit(const TraceEvent& e) {
  {
    std::lock_guard lock(mutex_);
    if (e.t_ns > kMaxTraceTimeNs || e.t_ns < -kMaxTraceTimeNs) {
      ++data_.ignored_events;
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    if (data_.event_count == 0) {
      data_.t_min = data_.t_max = e.t_ns;
    } else {
      data_.t_min = std::min(data_.t_min, e.t_ns);
      data_.t_max = std::max(data_.t_max, e.t_ns);
    }
    ++data_.event_count;
    if (e.kind == TraceEventKind::Error) {
      data_.errors.push_back({e.rank, e.step, e.t_ns, e.text});
    } else if (e.kind == TraceEventKind::RunEnd) {
      data_.run_end = TraceRunEnd{e.t_ns, e.text};
    } else if (!admits(e)) {
      ++data_.ignored_events;
    } else {
      RankTimeline& r = timeline(e.rank);
      const bool named = !e.text.empty() && !data_.header.plan;
      switch (e.kind) {
        case TraceEventKind::OpBegin:
          if (named && e.op >= 0) r.op_texts.emplace(e.op, intern(e.text));
          open_span(e);
          break;
        case TraceEventKind::OpEnd: close_span(e); break;
        case TraceEventKind::Alloc:
        case TraceEventKind::Free: {
          // Byte counts past ±kMaxTraceBytes (a damaged or hostile trace; the reader refuses them) are ignored, and so
          // is a change that would take a category's total past them: sums of them cannot overflow.
          if (!within_trace_bytes(e.bytes) || !within_trace_bytes(e.allocated_after) || !within_trace_bytes(e.reserved_after)) {
            ++data_.ignored_events;
            break;
          }
          const Bytes change = e.kind == TraceEventKind::Alloc ? e.bytes : -e.bytes;
          const Bytes total = r.memory.latest_by_category()[e.category] + change;  // both within ±kMaxTraceBytes: no overflow
          if (!within_trace_bytes(total)) {
            ++data_.ignored_events;
            break;
          }
          // A change reported late counts at the rank's latest sample time, so samples stay ordered.
          const TimeNs t = r.memory.empty() ? e.t_ns : std::max(e.t_ns, r.memory.latest_t_ns());
          if (e.allocated_after > r.peak.allocated) {
            r.peak.allocated = e.allocated_after;
            r.peak.t_ns = t;
            r.peak.by_category = r.memory.latest_by_category();
            r.peak.by_category[e.category] = total;
          }
          if (e.reserved_after > r.peak.reserved) {
            r.peak.reserved = e.reserved_after;
            r.peak.reserved_t_ns = t;
          }
          if (named && e.kind == TraceEventKind::Alloc && e.tensor >= 0) r.tensor_texts.emplace(e.tensor, intern(e.text));
          r.memory.append(t, e.allocated_after, e.reserved_after, e.category, change, e.tensor);
          r.memory_highest.push_back(r.memory.size() - 1, [&](std::size_t i) { return r.memory.allocated_at(i); });
          r.memory_signature = fold(r.memory_signature, t, e.allocated_after);
          break;
        }
        case TraceEventKind::Phase: r.phases.push_back({e.text, e.step, e.t_ns}); break;
        case TraceEventKind::DeviceMemory: r.device_memory.push_back({e.t_ns, e.bytes, e.reserved_after, e.allocated_after}); break;
        case TraceEventKind::Error:
        case TraceEventKind::RunEnd: break;
      }
    }
  }
  generation_.fetch_add(1, std::memory_order_release);
}

void TraceStore::open_span(const TraceEvent& e) {
  RankTimeline& r = data_.ranks[static_cast<std::size_t>(e.rank)];
  StreamSpans& s = r.streams[static_cast<std::size_t>(e.stream)];
  auto& open = open_[static_cast<std::size_t>(e.rank)];
  // Limits (trace_store.h): each event costs at most a few hundred steps. A rank's oldest open span stops being
  // matched (it stays open, as a span whose end never came) when the limit is reached; a begin too late is ignored.
  if (open.size() >= kMaxOpenSpansPerRank) open.erase(open.begin());
  std::size_t index = s.spans.size();
  if (!s.spans.empty() && s.spans.back().begin_ns > e.t_ns) {  // a late begin: keep spans ordered by begin
    index = static_cast<std::size_t>(std::upper_bound(s.spans.begin(), s.spans.end(), e.t_ns,
                                                      [](TimeNs t, const TraceSpan& x) { return t < x.begin_ns; }) -
                                     s.spans.begin());
    if (s.spans.size() - index > kMaxLateBeginSpans) {
      ++data_.ignored_events;
      return;
    }
    for (auto& o : open)
      if (o.stream == e.stream && o.index >= index) ++o.index;
  }
  s.spans.insert(s.spans.begin() + static_cast<std::ptrdiff_t>(index), TraceSpan{e.op, e.step, e.t_ns, kSpanOpen});
  s.reach.insert(s.reach.begin() + static_cast<std::ptrdiff_t>(index), kSpanOpen);
  update_reach(s, index);
  if (is_message(data_, e)) s.message_begins.insert(std::upper_bound(s.message_begins.begin(), s.message_begins.end(), e.t_ns), e.t_ns);
  open.push_back({e.op, e.stream, index});
  ++r.open_spans;
  add_boundary(e.t_ns);
}

void TraceStore::close_span(const TraceEvent& e) {
  RankTimeline& r = data_.ranks[static_cast<std::size_t>(e.rank)];
  auto& open = open_[static_cast<std::size_t>(e.rank)];
  const auto it = std::find_if(open.begin(), open.end(), [&](const OpenSpan& o) { return o.op == e.op; });
  if (it == open.end()) {
    ++data_.unmatched_op_ends;
    return;
  }
  StreamSpans& s = r.streams[static_cast<std::size_t>(it->stream)];
  s.spans[it->index].end_ns = std::max(e.t_ns, s.spans[it->index].begin_ns);
  update_reach(s, it->index);
  add_boundary(s.spans[it->index].end_ns);
  open.erase(it);
  --r.open_spans;
}

// Each rank's events arrive in time order, but ranks take turns (a file holds a rank's events in runs, a queue
// whatever threads handed over): a time before the newest waits in an unsorted tail, and the tail is merged in once,
// when the store is next read, instead of one insertion (and a move of everything after it) per event.
void TraceStore::add_boundary(TimeNs t) {
  SegmentedArray<TimeNs>& times = data_.boundaries;
  if (times.empty() || times.back() < t) times.push_back(t);
  else if (times.back() != t) boundary_tail_.push_back(t);
}

void TraceStore::merge_boundary_tail() const {
  // Only a store that was written to has a tail: the data is not const where this writes it.
  auto& times = const_cast<SegmentedArray<TimeNs>&>(data_.boundaries);
  std::sort(boundary_tail_.begin(), boundary_tail_.end());
  boundary_tail_.erase(std::unique(boundary_tail_.begin(), boundary_tail_.end()), boundary_tail_.end());
  const auto from = static_cast<std::ptrdiff_t>(std::lower_bound(times.begin(), times.end(), boundary_tail_.front()) - times.begin());
  const auto middle = static_cast<std::ptrdiff_t>(times.size());
  times.append(boundary_tail_.begin(), boundary_tail_.end());
  std::inplace_merge(times.begin() + from, times.begin() + middle, times.end());
  times.erase_to_end(std::unique(times.begin() + from, times.end()));
  boundary_tail_.clear();
}

std::uint32_t TraceStore::intern(const std::string& text) {
  const auto [it, added] = text_index_.emplace(text, static_cast<std::uint32_t>(data_.texts.size()));
  if (added) {
    data_.texts.push_back(text);
    data_.text_span_kinds.push_back(span_kind_of_text(text));
  }
  return it->second;
}

namespace {

template <class Map, class Key>
std::string_view text_of(const TraceData& d, const Map RankTimeline::*map, int r, Key key) {
  const RankTimeline* rank = d.rank(r);
  if (!rank) return {};
  const auto it = (rank->*map).find(key);
  return it == (rank->*map).end() ? std::string_view{} : std::string_view(d.texts[it->second]);
}

}  // namespace

std::string_view TraceData::op_text(int r, OpIndex op) const { return text_of(*this, &RankTimeline::op_texts, r, op); }
std::string_view TraceData::tensor_text(int r, TensorId tensor) const { return text_of(*this, &RankTimeline::tensor_texts, r, tensor); }

std::optional<SpanKind> TraceData::span_kind(int r, OpIndex op) const {
  if (header.plan) {
    if (r < 0 || static_cast<std::size_t>(r) >= header.plan->programs.size()) return std::nullopt;
    const auto& ops = header.plan->programs[static_cast<std::size_t>(r)].ops;
    if (op < 0 || static_cast<std::size_t>(op) >= ops.size()) return std::nullopt;
    return span_kind_of(ops[static_cast<std::size_t>(op)]);
  }
  const RankTimeline* rank = this->rank(r);
  if (!rank) return std::nullopt;
  const auto it = rank->op_texts.find(op);
  return it == rank->op_texts.end() ? std::nullopt : text_span_kinds[it->second];
}

TraceHeader TraceStore::header() const {
  return read([](const TraceData& d) { return d.header; });
}

int TraceStore::rank_count() const {
  return read([](const TraceData& d) { return static_cast<int>(d.ranks.size()); });
}

std::pair<TimeNs, TimeNs> TraceStore::time_range() const {
  return read([](const TraceData& d) { return std::pair{d.t_min, d.t_max}; });
}

std::vector<TraceSpan> TraceStore::spans_in(int rank, Stream stream, TimeNs t0, TimeNs t1) const {
  return read([&](const TraceData& d) {
    std::vector<TraceSpan> out;
    if (const auto* r = d.rank(rank)) r->stream(stream).for_each_overlapping(t0, t1, [&](const TraceSpan& s) { out.push_back(s); });
    return out;
  });
}

TraceMemorySample TraceStore::memory_at(int rank, TimeNs t) const {
  return read([&](const TraceData& d) {
    const auto* r = d.rank(rank);
    return r ? r->memory_at(t) : RankTimeline{}.memory_at(t);
  });
}

TraceMemoryPeak TraceStore::peak(int rank) const {
  return read([&](const TraceData& d) {
    const auto* r = d.rank(rank);
    return r ? r->peak : TraceMemoryPeak{};
  });
}

std::vector<TracePhaseMarker> TraceStore::phases(int rank) const {
  return read([&](const TraceData& d) {
    const auto* r = d.rank(rank);
    return r ? r->phases : std::vector<TracePhaseMarker>{};
  });
}

std::vector<TraceRunError> TraceStore::errors() const {
  return read([](const TraceData& d) { return d.errors; });
}

std::optional<TraceRunEnd> TraceStore::run_end() const {
  return read([](const TraceData& d) { return d.run_end; });
}

}  // namespace shardscope
