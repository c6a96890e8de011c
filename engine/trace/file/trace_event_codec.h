// The compact event encoding of .sstrace format version 2 (engine/trace/file/FORMAT.md, "Event block"): events travel in
// EventBlock records, each event a head byte and the fields that differ from what the reader can predict (per-rank
// delta-coded times, ops, tensors, allocation totals; texts interned once per file and then named by index). The
// encoder and the decoder keep the same state, so each must see every event of the file, in order, from the start.
// Not for use outside engine/trace.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/events/trace_event.h"

namespace shardscope::trace_format {

// The writer closes a block at this many events or payload bytes (a flush closes it sooner); a reader refuses a
// block that claims more events, which bounds what one block can make it hold.
inline constexpr std::uint32_t kBlockEvents = 4096;
inline constexpr std::size_t kBlockPayloadBytes = 64 * 1024;
inline constexpr std::uint32_t kMaxBlockEvents = 65536;
// Texts interned per file (later new texts are written out each time and not given an index).
inline constexpr std::size_t kMaxInternedTexts = 65536;

// What the previous events of one rank leave for the next to be coded against.
struct RankCodingState {
  TimeNs t_ns = 0;
  std::int64_t step = 0;
  std::int64_t op = 0;
  std::int64_t tensor = 0;
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
};

// State shared by both directions: the per-rank references and the previous event's rank.
class EventCodingState {
 public:
  RankCodingState& rank_state(int rank);
  // What event e (coded with this head byte and presence bits) leaves for the next event, in either direction.
  void remember(const TraceEvent& e, std::uint8_t head, std::uint64_t presence);
  int previous_rank = 0;

 private:
  std::vector<RankCodingState> ranks_;  // slot rank + 1 for -1 <= rank < kMaxTraceRanks; one last slot for the rest
};

class EventBlockEncoder {
 public:
  // Appends `event` to the open block (its text cut to kMaxEventTextBytes, trace_format.h).
  void add(const TraceEvent& event);
  std::uint32_t events() const { return events_; }
  std::size_t payload_bytes() const { return payload_.size(); }
  bool full() const { return events_ >= kBlockEvents || payload_.size() >= kBlockPayloadBytes; }
  // Appends the open block as an EventBlock record to `out` (nothing if it is empty) and starts a new one.
  void close_block(std::string& out);

 private:
  EventCodingState state_;
  std::unordered_map<std::string, std::uint32_t> texts_;
  std::string payload_;
  std::uint32_t events_ = 0;
};

class EventBlockDecoder {
 public:
  // Decodes one EventBlock payload into `events` (replaced); false if it is malformed: a count of 0 or past
  // kMaxBlockEvents, a head or presence bit out of range, an overlong varint, a text index not yet defined, a time
  // past ±kMaxTraceTimeNs or a byte count past ±kMaxTraceBytes, a field that does not fit, bytes left over. After a
  // false the decoder's state is undefined: the stream is damaged there and nothing after it is read.
  bool decode(const unsigned char* data, std::size_t size, std::vector<TraceEvent>& events);

 private:
  bool decode_event(const unsigned char*& p, const unsigned char* end, TraceEvent& e);
  EventCodingState state_;
  std::vector<std::string> texts_;
};

}  // namespace shardscope::trace_format
