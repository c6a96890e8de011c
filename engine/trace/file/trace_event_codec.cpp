// Format version 2's event blocks: the encoder the file writer and the stream server use, the decoder the reader
// uses (see trace_event_codec.h and FORMAT.md).
#include "trace/file/trace_event_codec.h"

#include "trace/file/trace_format.h"

namespace shardscope::trace_format {

namespace {

// Head byte: kind in bits 0-2, stream in bits 3-4, then which parts follow.
constexpr std::uint8_t kHeadRank = 1 << 5;      // the rank differs from the previous event's
constexpr std::uint8_t kHeadOp = 1 << 6;        // an op (absent: -1)
constexpr std::uint8_t kHeadPresence = 1 << 7;  // a presence varint
// Presence bits.
constexpr std::uint64_t kStep = 1 << 0, kCategory = 1 << 1, kBytes = 1 << 2, kAllocated = 1 << 3, kReserved = 1 << 4,
                        kTensor = 1 << 5, kText = 1 << 6;
constexpr int kEventKindCount = 8;

// Deltas are taken modulo 2^64 so any pair of values codes exactly; the decoder's range checks catch damage.
std::uint64_t delta(std::uint64_t value, std::uint64_t reference) { return zigzag(static_cast<std::int64_t>(value - reference)); }

bool get_u(const unsigned char*& p, const unsigned char* end, std::uint64_t& v) { return read_varint(p, end, v); }

// reference + the zigzag delta read next, modulo 2^64.
bool get_delta(const unsigned char*& p, const unsigned char* end, std::uint64_t reference, std::uint64_t& value) {
  std::uint64_t u = 0;
  if (!read_varint(p, end, u)) return false;
  value = reference + static_cast<std::uint64_t>(unzigzag(u));
  return true;
}

template <class Int>
bool fits(std::int64_t v) {
  return static_cast<std::int64_t>(static_cast<Int>(v)) == v;
}

bool bytes_in_range(std::int64_t b) { return b <= kMaxTraceBytes && b >= -kMaxTraceBytes; }

}  // namespace

void EventCodingState::remember(const TraceEvent& e, std::uint8_t head, std::uint64_t presence) {
  RankCodingState& r = rank_state(e.rank);
  previous_rank = e.rank;
  r.t_ns = e.t_ns;
  r.step = e.step;
  if (head & kHeadOp) r.op = e.op;
  if (presence & kAllocated) r.allocated = static_cast<std::uint64_t>(e.allocated_after);
  if (presence & kReserved) r.reserved = static_cast<std::uint64_t>(e.reserved_after);
  if (presence & kTensor) r.tensor = e.tensor;
}

RankCodingState& EventCodingState::rank_state(int rank) {
  const std::size_t slot = rank >= -1 && rank < kMaxTraceRanks ? static_cast<std::size_t>(rank + 1) : static_cast<std::size_t>(kMaxTraceRanks) + 1;
  if (slot >= ranks_.size()) ranks_.resize(slot + 1);
  return ranks_[slot];
}

namespace {

// An event's text cut to kMaxEventTextBytes at a UTF-8 character boundary (see kMaxRecordBytes): an error message
// of megabytes would otherwise make a record readers refuse.
std::string_view bounded_text(const std::string& text) {
  if (text.size() <= kMaxEventTextBytes) return text;
  std::size_t cut = kMaxEventTextBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string_view(text).substr(0, cut);
}

}  // namespace

void EventBlockEncoder::add(const TraceEvent& event) {
  if (event.text.size() > kMaxEventTextBytes) {
    TraceEvent cut = event;
    cut.text = std::string(bounded_text(event.text));
    add(cut);
    return;
  }
  const TraceEvent& e = event;
  RankCodingState& r = state_.rank_state(e.rank);
  std::uint8_t head = static_cast<std::uint8_t>(static_cast<int>(e.kind) | (static_cast<int>(e.stream) << 3));
  std::uint64_t presence = 0;
  if (e.rank != state_.previous_rank) head |= kHeadRank;
  if (e.op != -1) head |= kHeadOp;
  if (e.step != r.step) presence |= kStep;
  if (e.category != Category::Temporaries) presence |= kCategory;
  if (e.bytes != 0) presence |= kBytes;
  if (e.allocated_after != 0) presence |= kAllocated;
  if (e.reserved_after != 0) presence |= kReserved;
  if (e.tensor != -1) presence |= kTensor;
  if (!e.text.empty()) presence |= kText;
  if (presence) head |= kHeadPresence;
  payload_.push_back(static_cast<char>(head));
  if (head & kHeadRank) put_varint(payload_, zigzag(e.rank));
  put_varint(payload_, delta(static_cast<std::uint64_t>(e.t_ns), static_cast<std::uint64_t>(r.t_ns)));
  if (head & kHeadOp) put_varint(payload_, delta(static_cast<std::uint64_t>(e.op), static_cast<std::uint64_t>(r.op)));
  if (presence) put_varint(payload_, presence);
  if (presence & kStep) put_varint(payload_, delta(static_cast<std::uint64_t>(e.step), static_cast<std::uint64_t>(r.step)));
  if (presence & kCategory) payload_.push_back(static_cast<char>(e.category));
  if (presence & kBytes) put_varint(payload_, zigzag(e.bytes));
  if (presence & kAllocated) put_varint(payload_, delta(static_cast<std::uint64_t>(e.allocated_after), r.allocated));
  if (presence & kReserved) put_varint(payload_, delta(static_cast<std::uint64_t>(e.reserved_after), r.reserved));
  if (presence & kTensor) put_varint(payload_, delta(static_cast<std::uint64_t>(e.tensor), static_cast<std::uint64_t>(r.tensor)));
  if (presence & kText) {
    const auto known = texts_.find(e.text);
    if (known != texts_.end()) {
      put_varint(payload_, std::uint64_t{known->second} + 1);
    } else {
      payload_.push_back(0);  // a new text, spelled out
      put_varint(payload_, e.text.size());
      payload_.append(e.text);
      if (texts_.size() < kMaxInternedTexts) texts_.emplace(e.text, static_cast<std::uint32_t>(texts_.size()));
    }
  }
  state_.remember(e, head, presence);
  ++events_;
}

void EventBlockEncoder::close_block(std::string& out) {
  if (events_ == 0) return;
  std::string count;
  put_varint(count, events_);
  append_record(out, RecordType::EventBlock, count, payload_);
  payload_.clear();
  events_ = 0;
}

bool EventBlockDecoder::decode(const unsigned char* p, std::size_t size, std::vector<TraceEvent>& events) {
  const unsigned char* end = p + size;
  std::uint64_t count = 0;
  if (!get_u(p, end, count) || count == 0 || count > kMaxBlockEvents) return false;
  // Every event takes at least two bytes: a count the payload cannot hold is damage, found before any allocation.
  if (count > static_cast<std::uint64_t>(end - p) / 2) return false;
  events.resize(static_cast<std::size_t>(count));
  for (auto& e : events)
    if (!decode_event(p, end, e)) return false;
  return p == end;
}

bool EventBlockDecoder::decode_event(const unsigned char*& p, const unsigned char* end, TraceEvent& e) {
  if (p == end) return false;
  const std::uint8_t head = *p++;
  const int kind = head & 0x07, stream = (head >> 3) & 0x03;
  if (kind >= kEventKindCount || stream >= kStreamCount) return false;
  e.kind = static_cast<TraceEventKind>(kind);
  e.stream = static_cast<Stream>(stream);
  std::uint64_t u = 0;
  if (head & kHeadRank) {
    if (!get_u(p, end, u) || !fits<int>(unzigzag(u))) return false;
    e.rank = static_cast<int>(unzigzag(u));
  } else {
    e.rank = state_.previous_rank;
  }
  RankCodingState& r = state_.rank_state(e.rank);
  if (!get_delta(p, end, static_cast<std::uint64_t>(r.t_ns), u)) return false;
  e.t_ns = static_cast<TimeNs>(u);
  if (e.t_ns > kMaxTraceTimeNs || e.t_ns < -kMaxTraceTimeNs) return false;
  e.op = -1;
  if (head & kHeadOp) {
    if (!get_delta(p, end, static_cast<std::uint64_t>(r.op), u) || !fits<OpIndex>(static_cast<std::int64_t>(u))) return false;
    e.op = static_cast<OpIndex>(static_cast<std::int64_t>(u));
  }
  std::uint64_t presence = 0;
  if ((head & kHeadPresence) && (!get_u(p, end, presence) || presence == 0 || presence > 0x7F)) return false;
  e.step = static_cast<int>(r.step);
  if (presence & kStep) {
    if (!get_delta(p, end, static_cast<std::uint64_t>(r.step), u) || !fits<int>(static_cast<std::int64_t>(u))) return false;
    e.step = static_cast<int>(static_cast<std::int64_t>(u));
  }
  e.category = Category::Temporaries;
  if (presence & kCategory) {
    if (p == end || *p >= kCategoryCount) return false;
    e.category = static_cast<Category>(*p++);
  }
  e.bytes = 0;
  if (presence & kBytes) {
    if (!get_u(p, end, u) || !bytes_in_range(unzigzag(u))) return false;
    e.bytes = unzigzag(u);
  }
  e.allocated_after = 0;
  if (presence & kAllocated) {
    if (!get_delta(p, end, r.allocated, u) || !bytes_in_range(static_cast<std::int64_t>(u))) return false;
    e.allocated_after = static_cast<Bytes>(u);
  }
  e.reserved_after = 0;
  if (presence & kReserved) {
    if (!get_delta(p, end, r.reserved, u) || !bytes_in_range(static_cast<std::int64_t>(u))) return false;
    e.reserved_after = static_cast<Bytes>(u);
  }
  e.tensor = -1;
  if (presence & kTensor) {
    if (!get_delta(p, end, static_cast<std::uint64_t>(r.tensor), u) || !fits<TensorId>(static_cast<std::int64_t>(u))) return false;
    e.tensor = static_cast<TensorId>(static_cast<std::int64_t>(u));
  }
  e.text.clear();
  if (presence & kText) {
    if (!get_u(p, end, u)) return false;
    if (u == 0) {
      std::uint64_t n = 0;
      if (!get_u(p, end, n) || n > static_cast<std::uint64_t>(end - p)) return false;
      e.text.assign(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
      p += n;
      if (texts_.size() < kMaxInternedTexts) texts_.push_back(e.text);
    } else {
      if (u > texts_.size()) return false;
      e.text = texts_[static_cast<std::size_t>(u - 1)];
    }
  }
  state_.remember(e, head, presence);
  return true;
}

}  // namespace shardscope::trace_format
