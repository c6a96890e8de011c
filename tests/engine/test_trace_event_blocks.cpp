// Format version 2's event blocks (trace_event_codec.h): every field round-trips, whatever the values; a damaged
// block ends the read at its start; a version 1 file loads exactly as before; load_trace_file streams into a sink;
// the store's compact memory series rebuilds the samples a plain running sum gives.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "trace/file/trace_event_codec.h"
#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"
#include "trace/file/trace_format.h"
#include "trace/store/trace_store.h"
#include "trace_test_helpers.h"

namespace shardscope {
namespace {

using K = TraceEventKind;

// Events with every field set to values far apart, negative, at the limits, repeated texts, ranks -1 and past the
// world: what the per-rank deltas and the text index must code exactly.
std::vector<TraceEvent> varied_events() {
  std::vector<TraceEvent> events;
  std::mt19937_64 rng(5);
  const std::vector<std::string> texts = {"forward", "backward", "", "forward", "out of memory", "ok"};
  for (int i = 0; i < 3000; ++i) {
    TraceEvent e;
    e.kind = static_cast<K>(rng() % 8);
    const int ranks[] = {0, 1, 7, -1, 65535, 2'000'000'000, -5};
    e.rank = ranks[rng() % 7];
    e.t_ns = static_cast<TimeNs>(rng() % (2 * (kMaxTraceTimeNs / 1024))) - kMaxTraceTimeNs / 1024;
    if (i % 97 == 0) e.t_ns = (i % 2 ? kMaxTraceTimeNs : -kMaxTraceTimeNs);
    e.step = static_cast<int>(rng() % 5) - 1;
    e.op = rng() % 3 == 0 ? -1 : static_cast<OpIndex>(rng() % 100000);
    if (i % 101 == 0) e.op = std::numeric_limits<OpIndex>::max();
    e.stream = static_cast<Stream>(rng() % kStreamCount);
    e.category = static_cast<Category>(rng() % kCategoryCount);
    e.bytes = rng() % 2 ? 0 : static_cast<Bytes>(rng() % (2 * kMaxTraceBytes)) - kMaxTraceBytes;
    e.allocated_after = rng() % 2 ? 0 : static_cast<Bytes>(rng() % kMaxTraceBytes);
    e.reserved_after = i % 89 == 0 ? -kMaxTraceBytes : static_cast<Bytes>(rng() % 1000);
    e.tensor = rng() % 3 == 0 ? -1 : static_cast<TensorId>(rng() % 5000);
    if (i % 103 == 0) e.tensor = std::numeric_limits<TensorId>::min();
    e.text = texts[rng() % texts.size()];
    events.push_back(e);
  }
  return events;
}

std::string file_of(const std::vector<TraceEvent>& events, std::size_t block_every) {
  std::string bytes = trace_format::encode_preamble();
  trace_format::append_record(bytes, trace_format::RecordType::Header, trace_format::encode_header_json(testing::small_header()));
  trace_format::EventBlockEncoder encoder;
  for (std::size_t i = 0; i < events.size(); ++i) {
    encoder.add(events[i]);
    if ((i + 1) % block_every == 0 || encoder.full()) encoder.close_block(bytes);
  }
  encoder.close_block(bytes);
  trace_format::append_record(bytes, trace_format::RecordType::End, "");
  return bytes;
}

TEST(EventBlocks, EveryFieldRoundTripsWhateverTheBlockSizes) {
  const auto events = varied_events();
  for (const std::size_t every : {std::size_t{1}, std::size_t{7}, std::size_t{5000}}) {
    const auto r = read_trace_bytes(file_of(events, every), "blocks");
    EXPECT_FALSE(r.truncated) << r.problem;
    EXPECT_EQ(r.format_version, 2u);
    ASSERT_EQ(r.events.size(), events.size()) << every;
    for (std::size_t i = 0; i < events.size(); ++i) testing::expect_event_eq(r.events[i], events[i], "event " + std::to_string(i));
  }
}

// A typical run's events take a few bytes each: a begin / end pair of one rank, in one block, 4 + 3 bytes here (head,
// dt, op delta), against version 1's 6 bytes of framing alone per event.
TEST(EventBlocks, AnOpBeginAndEndTakeAFewBytes) {
  std::string block;
  trace_format::EventBlockEncoder encoder;
  encoder.add(testing::ev(K::OpBegin, 0, 1000, 5));  // head, dt 2000 (2 bytes), op +5: 4 bytes
  encoder.add(testing::ev(K::OpEnd, 0, 1050, 5));    // head, dt 50 (1 byte), op +0: 3 bytes
  encoder.close_block(block);
  // type, length, count, 7 bytes of events, CRC.
  EXPECT_EQ(block.size(), 1u + 1u + 1u + 7u + 4u);
}

TEST(EventBlocks, ADamagedBlockEndsTheReadAtItsStart) {
  const auto events = varied_events();
  const std::string good = file_of(events, 1000);
  // The second block's first event gets an unknown stream (3): its CRC recomputed, so only the content is wrong.
  auto records = [&](const std::string& bytes) {
    std::vector<std::size_t> starts;
    std::size_t pos = trace_format::kPreambleBytes;
    while (pos < bytes.size()) {
      starts.push_back(pos);
      const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data()) + pos + 1;
      const unsigned char* q = p;
      std::uint64_t length = 0;
      trace_format::read_varint(q, reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size(), length);
      pos += 1 + static_cast<std::size_t>(q - p) + length + 4;
    }
    return starts;
  };
  const auto starts = records(good);
  ASSERT_GE(starts.size(), 4u);  // header, blocks..., End
  const std::size_t second = starts[2];
  std::string payload;
  {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(good.data()) + second + 1;
    const unsigned char* q = p;
    std::uint64_t length = 0;
    trace_format::read_varint(q, p + 8, length);
    payload.assign(reinterpret_cast<const char*>(q), length);
  }
  std::size_t head = 0;
  while (static_cast<unsigned char>(payload[head]) & 0x80) ++head;  // past the count varint
  ++head;
  payload[head] = static_cast<char>(static_cast<unsigned char>(payload[head]) | 0x18);  // stream bits = 3
  std::string damaged = good.substr(0, second);
  trace_format::append_record(damaged, trace_format::RecordType::EventBlock, payload);
  damaged += good.substr(starts[3]);
  const auto r = read_trace_bytes(damaged, "damaged");
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.events.size(), 1000u);  // the first block's, none of the damaged one's
  EXPECT_EQ(r.valid_bytes, second);
  EXPECT_NE(r.problem.find("malformed event block"), std::string::npos) << r.problem;
  // A count the payload cannot hold, and a text index not given yet, are damage too.
  for (const std::string& bad : {std::string("\x05\x00\x00", 3), std::string("\x01\x84\x00\x40\x05", 5)}) {
    std::string bytes = good.substr(0, starts[1]);
    trace_format::append_record(bytes, trace_format::RecordType::EventBlock, bad);
    const auto b = read_trace_bytes(bytes, "bad");
    EXPECT_TRUE(b.truncated);
    EXPECT_TRUE(b.events.empty());
    EXPECT_NE(b.problem.find("malformed event block"), std::string::npos) << b.problem;
  }
}

// Files recorded before version 2 (one Event record per event) load exactly as before: the same events, the same
// store, and a version 1 event record in a version 2 file is damage.
TEST(EventBlocks, AVersion1FileLoadsAsItAlwaysDid) {
  const auto events = testing::store_events();
  std::string v1 = trace_format::encode_preamble(1);
  trace_format::append_record(v1, trace_format::RecordType::Header, trace_format::encode_header_json(testing::small_header()));
  TimeNs previous = 0;
  for (const auto& e : events) {
    std::string payload;
    trace_format::append_event_payload(payload, e, previous);
    previous = e.t_ns;
    trace_format::append_record(v1, trace_format::RecordType::Event, payload);
  }
  trace_format::append_record(v1, trace_format::RecordType::End, "");
  const auto r = read_trace_bytes(v1, "v1");
  EXPECT_FALSE(r.truncated) << r.problem;
  EXPECT_EQ(r.format_version, 1u);
  ASSERT_EQ(r.events.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) testing::expect_event_eq(r.events[i], events[i], "event " + std::to_string(i));

  std::string mixed = trace_format::encode_preamble();
  mixed.append(v1.substr(trace_format::kPreambleBytes));
  const auto m = read_trace_bytes(mixed, "mixed");
  EXPECT_TRUE(m.truncated);
  EXPECT_TRUE(m.events.empty());
  EXPECT_NE(m.problem.find("a version 1 event record in a version 2 file"), std::string::npos) << m.problem;
}

// load_trace_file hands every event to the sink as read_trace_file keeps them, and says the same about a cut file.
TEST(EventBlocks, LoadStreamsIntoTheSinkAsReadKeeps) {
  testing::TempFile file("load_stream");
  const auto events = varied_events();
  {
    TraceFileWriter writer(file.path());
    writer.begin(testing::small_header());
    for (const auto& e : events) writer.emit(e);
    writer.end();
  }
  VectorTraceSink sink;
  const auto loaded = load_trace_file(file.path(), sink);
  const auto read = read_trace_file(file.path());
  EXPECT_TRUE(loaded.events.empty());
  EXPECT_EQ(loaded.event_count, events.size());
  EXPECT_EQ(loaded.valid_bytes, read.valid_bytes);
  EXPECT_EQ(loaded.file_bytes, read.file_bytes);
  EXPECT_FALSE(loaded.truncated);
  ASSERT_EQ(sink.events().size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) testing::expect_event_eq(sink.events()[i], events[i], "event " + std::to_string(i));

  const std::string whole = testing::read_bytes(file.path());
  testing::write_bytes(file.path(), whole.substr(0, whole.size() - 9));  // inside the last block
  VectorTraceSink cut_sink;
  const auto cut = load_trace_file(file.path(), cut_sink);
  const auto cut_read = read_trace_file(file.path());
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.problem, cut_read.problem);
  EXPECT_EQ(cut.valid_bytes, cut_read.valid_bytes);
  EXPECT_EQ(cut.event_count, cut_read.events.size());
  EXPECT_EQ(describe_cut(cut), describe_cut(cut_read));
}

// The compact series gives back, for every sample, the category totals a plain running sum of the changes gives.
TEST(TraceMemorySeries, SamplesRebuildTheRunningCategoryTotals) {
  TraceMemorySeries series;
  CategoryBytes running;
  std::vector<CategoryBytes> expected;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const auto c = static_cast<Category>(rng() % kCategoryCount);
    const Bytes change = static_cast<Bytes>(rng() % 10000) - 5000;
    running[c] += change;
    expected.push_back(running);
    series.append(i, 100 + i, 200 + i, c, change, i % 13);
  }
  ASSERT_EQ(series.size(), 1000u);
  for (std::size_t i = 0; i < 1000; ++i) {
    const TraceMemorySample s = series[i];
    EXPECT_EQ(s.t_ns, static_cast<TimeNs>(i));
    EXPECT_EQ(s.allocated, static_cast<Bytes>(100 + i));
    EXPECT_EQ(s.reserved, static_cast<Bytes>(200 + i));
    EXPECT_EQ(s.by_category.bytes, expected[i].bytes) << i;
    EXPECT_EQ(series.allocation(i).tensor, static_cast<TensorId>(i % 13));
  }
  EXPECT_EQ(series.latest_by_category().bytes, running.bytes);
  const auto at = std::upper_bound(series.begin(), series.end(), TimeNs{500},
                                   [](TimeNs t, const TraceMemorySample& s) { return t < s.t_ns; });
  EXPECT_EQ(at - series.begin(), 501);
}

}  // namespace
}  // namespace shardscope
