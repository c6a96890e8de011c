// .sstrace files: write -> read round trip of every field, reading after a crash at any byte, clear errors for
// files that are not traces, following a file while it grows, several writer threads.
#include <gtest/gtest.h>

#include <thread>

#include "trace/trace_file_reader.h"
#include "trace/trace_file_writer.h"
#include "trace/trace_format.h"
#include "trace_test_helpers.h"

namespace shardscope {
namespace {

using testing::TempFile;

// Every event kind, extreme and default values, texts with quotes, newlines and UTF-8.
std::vector<TraceEvent> all_kinds_events() {
  using testing::ev;
  using testing::mem;
  using testing::with_text;
  using K = TraceEventKind;
  std::vector<TraceEvent> events = testing::store_events();
  events.push_back(mem(K::Alloc, 2, 5'000'000'000'000, 7, 0, Category::OptimizerState, 80 * kGiB, 80 * kGiB + 1, 96 * kGiB));
  events.push_back(mem(K::Free, 2, 4'999'999'999'000, 8, 0, Category::CommunicationBuffers, 1, 0, 0));  // time going back
  events.push_back(with_text(ev(K::Phase, 2, 6'000'000'000'000, 9, 3, Stream::Copy), "before_step \"x\"\nline ✓"));
  events.push_back(ev(K::OpBegin, 2, 6'000'000'000'001, 2'000'000'000, -7, Stream::Copy));
  TraceEvent odd = ev(K::DeviceMemory, 1, 0);
  odd.bytes = -5;  // a negative difference must survive too
  odd.tensor = 123456;
  odd.category = Category::DdpBuckets;
  events.push_back(odd);
  events.push_back(with_text(ev(K::Error, -1, 7'000'000'000'000), std::string("nul\0inside", 10)));
  return events;
}

TEST(TraceFile, RoundTripKeepsEveryField) {
  TempFile file("roundtrip");
  const TraceHeader header = testing::small_header();
  const auto events = all_kinds_events();
  {
    TraceFileWriter writer(file.path());
    writer.begin(header);
    for (const auto& e : events) writer.emit(e);
    writer.end();
    EXPECT_EQ(writer.events_written(), events.size());
  }
  const TraceReadResult r = read_trace_file(file.path());
  EXPECT_FALSE(r.truncated) << r.problem;
  EXPECT_EQ(r.problem, "");
  EXPECT_EQ(r.valid_bytes, r.file_bytes);
  EXPECT_EQ(r.header.format_version, 1);
  EXPECT_EQ(r.header.tool_version, header.tool_version);
  EXPECT_EQ(r.header.source, header.source);
  EXPECT_EQ(r.header.scenario_json, header.scenario_json);
  EXPECT_EQ(r.header.accounting_rules, header.accounting_rules);
  ASSERT_EQ(r.header.devices.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.header.devices[i].rank, header.devices[i].rank);
    EXPECT_EQ(r.header.devices[i].name, header.devices[i].name);
    EXPECT_EQ(r.header.devices[i].capacity, header.devices[i].capacity);
    EXPECT_EQ(r.header.devices[i].physical_device, header.devices[i].physical_device);
  }
  ASSERT_TRUE(r.header.plan);
  testing::expect_plan_eq(*r.header.plan, *header.plan);
  EXPECT_TRUE(r.header.plan->programs[0].ops[2].deps.empty());  // deps are not stored
  ASSERT_EQ(r.events.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) testing::expect_event_eq(r.events[i], events[i], "event " + std::to_string(i));

  // Rank 1's program equals rank 0's and is stored by reference.
  EXPECT_NE(testing::read_bytes(file.path()).find("\"same_as\":0"), std::string::npos);
}

TEST(TraceFile, HeaderWithoutPlanRoundTrips) {
  TempFile file("noplan");
  TraceHeader header;
  header.source = "executor cpu";
  {
    TraceFileWriter writer(file.path());
    writer.begin(header);
    writer.end();
  }
  const auto r = read_trace_file(file.path());
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.header.source, "executor cpu");
  EXPECT_FALSE(r.header.plan);
  EXPECT_TRUE(r.events.empty());
}

// Writes every record as it comes; returns the file size after the header (index 0) and after each event.
std::vector<std::uint64_t> write_unbuffered(const std::string& path, const std::vector<TraceEvent>& events) {
  std::vector<std::uint64_t> record_end;
  TraceFileWriter writer(path, {.buffer_bytes = 0});
  writer.begin(testing::small_header());
  record_end.push_back(writer.bytes_written());
  for (const auto& e : events) {
    writer.emit(e);
    record_end.push_back(writer.bytes_written());
  }
  writer.end();
  return record_end;
}

// A writer killed at any moment: every prefix of the file reads the records complete before the cut.
TEST(TraceFile, ReadsUpToTheLastCompleteRecordAtEveryCut) {
  TempFile file("cuts");
  const auto events = all_kinds_events();
  const auto record_end = write_unbuffered(file.path(), events);
  const std::string full = testing::read_bytes(file.path());
  ASSERT_GT(full.size(), record_end.back());  // the End record follows the last event

  TempFile cut_file("cut");
  int checked = 0;
  for (std::size_t cut = 0; cut <= full.size(); ++cut) {
    testing::write_bytes(cut_file.path(), full.substr(0, cut));
    if (cut < record_end[0]) {
      EXPECT_THROW(read_trace_file(cut_file.path()), TraceFileError) << "cut " << cut;
      continue;
    }
    const auto r = read_trace_file(cut_file.path());
    std::size_t complete = 0;
    while (complete + 1 < record_end.size() && record_end[complete + 1] <= cut) ++complete;
    ASSERT_EQ(r.events.size(), complete) << "cut " << cut;
    if (complete > 0) testing::expect_event_eq(r.events.back(), events[complete - 1], "cut " + std::to_string(cut));
    EXPECT_EQ(r.valid_bytes, cut == full.size() ? full.size() : record_end[complete]) << "cut " << cut;
    EXPECT_EQ(r.truncated, cut != full.size()) << "cut " << cut;
    if (cut != full.size() && cut != record_end[complete]) {
      EXPECT_NE(r.problem.find("ends inside a record"), std::string::npos) << r.problem;
    }
    if (cut == record_end[complete] && cut != full.size()) {
      EXPECT_NE(r.problem.find("no end record"), std::string::npos) << r.problem;
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(full.size() - record_end[0] + 1));
}

TEST(TraceFile, DamagedEventStopsReadingThereWithoutThrowing) {
  TempFile file("damaged");
  const auto events = testing::store_events();
  const auto record_end = write_unbuffered(file.path(), events);
  std::string bytes = testing::read_bytes(file.path());
  bytes[record_end[5] + 3] ^= 0x40;  // inside event 5's payload
  testing::write_bytes(file.path(), bytes);
  const auto r = read_trace_file(file.path());
  EXPECT_EQ(r.events.size(), 5u);
  EXPECT_TRUE(r.truncated);
  EXPECT_NE(r.problem.find("at byte " + std::to_string(record_end[5])), std::string::npos) << r.problem;
  EXPECT_NE(r.problem.find("checksum mismatch"), std::string::npos) << r.problem;
}

std::string error_of(const std::string& path) {
  try {
    read_trace_file(path);
  } catch (const TraceFileError& e) {
    EXPECT_EQ(e.path(), path);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    return e.problem();
  }
  return "(no error)";
}

TEST(TraceFile, FilesThatAreNotReadableTracesGiveAClearError) {
  TempFile file("bad");
  TempFile good("good");
  {
    TraceFileWriter writer(good.path());
    writer.begin(testing::small_header());
    writer.end();
  }
  const std::string valid = testing::read_bytes(good.path());

  EXPECT_NE(error_of("/nonexistent/dir/run.sstrace").find("cannot be opened"), std::string::npos);

  testing::write_bytes(file.path(), "");
  EXPECT_EQ(error_of(file.path()), "the file is empty");

  testing::write_bytes(file.path(), "{\"traceEvents\": []}\n");
  EXPECT_NE(error_of(file.path()).find("not a ShardScope trace"), std::string::npos);

  std::string garbage(4096, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 2654435761u) >> 13);
  testing::write_bytes(file.path(), garbage);
  EXPECT_NE(error_of(file.path()).find("not a ShardScope trace"), std::string::npos);

  std::string wrong_magic = valid;
  wrong_magic[6] = 'X';
  testing::write_bytes(file.path(), wrong_magic);
  EXPECT_NE(error_of(file.path()).find("not a ShardScope trace"), std::string::npos);

  std::string future = valid;
  future[8] = 2;  // format version 2
  testing::write_bytes(file.path(), future);
  const std::string version_error = error_of(file.path());
  EXPECT_NE(version_error.find("format version 2"), std::string::npos) << version_error;
  EXPECT_NE(version_error.find("up to version 1"), std::string::npos) << version_error;

  std::string corrupt_header = valid;
  corrupt_header[trace_format::kPreambleBytes + 20] ^= 0x01;
  testing::write_bytes(file.path(), corrupt_header);
  EXPECT_NE(error_of(file.path()).find("header record is corrupt (checksum mismatch)"), std::string::npos);

  // Checksums fine, content not a header.
  std::string not_json = trace_format::encode_preamble();
  trace_format::append_record(not_json, trace_format::RecordType::Header, "{not json");
  testing::write_bytes(file.path(), not_json);
  EXPECT_NE(error_of(file.path()).find("header is not valid JSON"), std::string::npos);

  std::string missing_field = trace_format::encode_preamble();
  trace_format::append_record(missing_field, trace_format::RecordType::Header, R"({"format":"shardscope-trace","format_version":1})");
  testing::write_bytes(file.path(), missing_field);
  EXPECT_NE(error_of(file.path()).find("header field missing"), std::string::npos);

  std::string event_first = trace_format::encode_preamble();
  trace_format::append_record(event_first, trace_format::RecordType::Event, "x");
  testing::write_bytes(file.path(), event_first);
  EXPECT_EQ(error_of(file.path()), "the first record is not a header");

  testing::write_bytes(file.path(), trace_format::encode_preamble());
  EXPECT_EQ(error_of(file.path()), "there is no header record");
}

TEST(TraceFile, WriterNamesThePathItCannotOpen) {
  try {
    TraceFileWriter writer("/nonexistent/dir/run.sstrace");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/run.sstrace"), std::string::npos) << e.what();
  }
}

TEST(TraceFile, UnknownRecordTypesAreSkipped) {
  TempFile file("unknown");
  std::string bytes = trace_format::encode_preamble();
  trace_format::append_record(bytes, trace_format::RecordType::Header, trace_format::encode_header_json(testing::small_header()));
  trace_format::append_record(bytes, static_cast<trace_format::RecordType>(42), "from a later revision");
  std::string payload;
  trace_format::append_event_payload(payload, testing::ev(TraceEventKind::OpBegin, 0, 10, 2, 1), 0);
  trace_format::append_record(bytes, trace_format::RecordType::Event, payload);
  trace_format::append_record(bytes, trace_format::RecordType::End, "");
  testing::write_bytes(file.path(), bytes);
  const auto r = read_trace_file(file.path());
  EXPECT_FALSE(r.truncated);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].t_ns, 10);
}

TEST(TraceFile, FollowerReadsRecordsAsTheyAreWritten) {
  TempFile file("follow");
  VectorTraceSink sink;
  TraceFileFollower follower(file.path());
  EXPECT_EQ(follower.poll(sink), 0u);  // no file yet
  EXPECT_FALSE(follower.has_header());

  const auto events = testing::store_events();
  TraceFileWriter writer(file.path(), {.buffer_bytes = 0});
  EXPECT_EQ(follower.poll(sink), 0u);  // preamble only
  writer.begin(testing::small_header());
  EXPECT_EQ(follower.poll(sink), 0u);
  EXPECT_TRUE(follower.has_header());
  EXPECT_EQ(sink.header().source, "simulator");
  for (std::size_t i = 0; i < 4; ++i) writer.emit(events[i]);
  EXPECT_EQ(follower.poll(sink), 4u);

  // Half of the next record on disk: nothing new until the rest arrives.
  std::string record;
  std::string payload;
  trace_format::append_event_payload(payload, events[4], events[3].t_ns);
  trace_format::append_record(record, trace_format::RecordType::Event, payload);
  {
    std::ofstream out(file.path(), std::ios::binary | std::ios::app);
    out.write(record.data(), 3);
  }
  EXPECT_EQ(follower.poll(sink), 0u);
  {
    std::ofstream out(file.path(), std::ios::binary | std::ios::app);
    out.write(record.data() + 3, static_cast<std::streamsize>(record.size() - 3));
  }
  EXPECT_EQ(follower.poll(sink), 1u);
  EXPECT_FALSE(follower.finished());
  ASSERT_EQ(sink.events().size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) testing::expect_event_eq(sink.events()[i], events[i], "event " + std::to_string(i));
  EXPECT_FALSE(follower.corrupt());
}

TEST(TraceFile, FollowerSeesTheEnd) {
  TempFile file("follow_end");
  const auto events = testing::store_events();
  {
    TraceFileWriter writer(file.path());
    writer.begin(testing::small_header());
    for (const auto& e : events) writer.emit(e);
    writer.end();
  }
  VectorTraceSink sink;
  TraceFileFollower follower(file.path());
  EXPECT_EQ(follower.poll(sink), events.size());
  EXPECT_TRUE(follower.finished());
  EXPECT_EQ(follower.poll(sink), 0u);
}

TEST(TraceFile, SeveralWriterThreadsKeepEachRanksOrder) {
  TempFile file("threads");
  constexpr int kRanks = 4, kPerRank = 5000;
  {
    TraceFileWriter writer(file.path(), {.buffer_bytes = 4096});
    writer.begin(testing::small_header());
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&writer, r] {
        for (int i = 0; i < kPerRank; ++i)
          writer.emit(testing::ev(i % 2 ? TraceEventKind::OpEnd : TraceEventKind::OpBegin, r, 10 * i + r, i / 2, 1));
      });
    for (auto& t : threads) t.join();
    writer.end();
  }
  const auto result = read_trace_file(file.path());
  EXPECT_FALSE(result.truncated);
  ASSERT_EQ(result.events.size(), static_cast<std::size_t>(kRanks * kPerRank));
  std::vector<int> next(kRanks, 0);
  for (const auto& e : result.events) {
    const int i = next[static_cast<std::size_t>(e.rank)]++;
    ASSERT_EQ(e.t_ns, 10 * i + e.rank);
    ASSERT_EQ(e.op, i / 2);
  }
}

}  // namespace
}  // namespace shardscope
