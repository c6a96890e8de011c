// .sstrace files: write -> read round trip of every field, reading after a crash at any byte, clear errors for
// files that are not traces, following a file while it grows, several writer threads.
#include <gtest/gtest.h>

#include <chrono>
#include <new>
#include <nlohmann/json.hpp>
#include <thread>

#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"
#include "trace/file/trace_format.h"
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
  EXPECT_EQ(r.header.format_version, 2);
  EXPECT_EQ(r.format_version, 2u);
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
  future[8] = 3;  // format version 3
  testing::write_bytes(file.path(), future);
  const std::string version_error = error_of(file.path());
  EXPECT_NE(version_error.find("format version 3"), std::string::npos) << version_error;
  EXPECT_NE(version_error.find("up to version 2"), std::string::npos) << version_error;

  std::string corrupt_header = valid;
  corrupt_header[trace_format::kPreambleBytes + 20] ^= 0x01;
  testing::write_bytes(file.path(), corrupt_header);
  EXPECT_NE(error_of(file.path()).find("header record is corrupt (checksum mismatch)"), std::string::npos);

  // Checksums fine, content not a header.
  std::string not_json = trace_format::encode_preamble();
  trace_format::append_record(not_json, trace_format::RecordType::Header, "{not json");
  testing::write_bytes(file.path(), not_json);
  EXPECT_NE(error_of(file.path()).find("header: is not valid JSON"), std::string::npos);

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
  std::string bytes = trace_format::encode_preamble(1);  // a version 1 file (one Event record per event)
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

  // Half of the next record on disk: nothing new until the rest arrives. (The block is coded as the writer would:
  // against the four events before it.)
  std::string record, ignored;
  trace_format::EventBlockEncoder encoder;
  for (std::size_t i = 0; i < 4; ++i) encoder.add(events[i]);
  encoder.close_block(ignored);
  encoder.add(events[4]);
  encoder.close_block(record);
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

// A window following a fast run takes the file a slice at a time (Session polls 64 KiB slices until its frame budget
// is spent): read 100 bytes a call, the follower yields every event, in order, and never reads past the slice.
TEST(TraceFile, FollowerReadsAtMostTheBytesItIsGiven) {
  TempFile file("follow_slices");
  std::vector<TraceEvent> events;
  for (int i = 0; i < 3000; ++i) events.push_back(testing::ev(i % 2 ? TraceEventKind::OpEnd : TraceEventKind::OpBegin, i % 3, 10 * i, i / 2, 1));
  {
    TraceFileWriter writer(file.path(), {.buffer_bytes = 4096});
    writer.begin(testing::small_header());
    for (const auto& e : events) writer.emit(e);
    writer.end();
  }
  const auto file_bytes = static_cast<std::uint64_t>(std::filesystem::file_size(file.path()));
  VectorTraceSink sink;
  TraceFileFollower follower(file.path());
  std::size_t polls = 0;
  while (!follower.finished() && polls < file_bytes) {
    const std::uint64_t before = follower.received();
    follower.poll(sink, 100);
    EXPECT_LE(follower.received() - before, 100u);
    ++polls;
  }
  EXPECT_TRUE(follower.finished());
  EXPECT_FALSE(follower.corrupt());
  EXPECT_EQ(follower.received(), file_bytes);
  EXPECT_GE(polls, file_bytes / 100);  // every byte came through a slice of 100
  ASSERT_EQ(sink.events().size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) testing::expect_event_eq(sink.events()[i], events[i], "event " + std::to_string(i));
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


// ---- Untrusted input: hand-crafted files that a writer never produces (see trace_file_reader.h). ----

// A version 1 file (what earlier builds wrote, which still reads) of a preamble, a header record holding
// `header_json`, one Event record per event and an End record.
std::string crafted_trace(const std::string& header_json, const std::vector<TraceEvent>& events = {}) {
  std::string bytes = trace_format::encode_preamble(1);
  trace_format::append_record(bytes, trace_format::RecordType::Header, header_json);
  TimeNs previous = 0;
  for (const auto& e : events) {
    std::string payload;
    trace_format::append_event_payload(payload, e, previous);
    previous = e.t_ns;
    trace_format::append_record(bytes, trace_format::RecordType::Event, payload);
  }
  trace_format::append_record(bytes, trace_format::RecordType::End, "");
  return bytes;
}

nlohmann::json small_header_json() { return nlohmann::json::parse(trace_format::encode_header_json(testing::small_header())); }

// The error reading `bytes` gives ("(no error)" when it reads).
std::string read_error(const std::string& bytes) {
  try {
    read_trace_bytes(bytes, "crafted.sstrace");
  } catch (const TraceFileError& e) {
    EXPECT_EQ(e.path(), "crafted.sstrace");
    return e.problem();
  }
  return "(no error)";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(UntrustedTrace, InMemoryReadMatchesTheFileRead) {
  TempFile file("in_memory");
  const std::string bytes = crafted_trace(trace_format::encode_header_json(testing::small_header()), testing::store_events());
  testing::write_bytes(file.path(), bytes);
  const auto a = read_trace_file(file.path());
  const auto b = read_trace_bytes(bytes, "mem");
  EXPECT_EQ(a.path, file.path());
  EXPECT_EQ(b.path, "mem");
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) testing::expect_event_eq(a.events[i], b.events[i], "event " + std::to_string(i));
  EXPECT_EQ(a.valid_bytes, b.valid_bytes);
  EXPECT_FALSE(b.truncated);
}

// A header claiming 10^12 ops (or tensors) would make the reader allocate ~200 TB: a header cannot describe more
// ops than it has bytes, so the count is refused by name before anything is allocated.
TEST(UntrustedTrace, HeaderCountsAreCappedByTheHeaderBytes) {
  auto j = small_header_json();
  j["plan"]["programs"][0]["ops"]["count"] = 1'000'000'000'000;
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "ops.count 1000000000000 is more than the header's");

  j = small_header_json();
  j["plan"]["programs"][2]["tensors"] = {{"count", 1u << 20}};  // no columns: a million default tensors in a few bytes
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "tensors.count 1048576 is more than the header's");

  // As many as the header has bytes is allowed (the padding is the header's own bytes).
  j = small_header_json();
  j["plan"]["programs"][2]["tensors"] = {{"count", 5000}};
  j["scenario_json"] = std::string(6000, ' ');
  const auto r = read_trace_bytes(crafted_trace(j.dump()), "padded");
  EXPECT_EQ(r.header.plan->programs[2].tensors.size(), 5000u);

  j = small_header_json();
  j["plan"]["programs"][0]["ops"]["count"] = -1;
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "ops.count is not an integer in range");
}

// Programs stored once and copied to other ranks ("same_as") may not add up to more ops and tensors than
// kPlanRowsPerHeaderByte per header byte.
TEST(UntrustedTrace, CopiedProgramsAreBoundedToo) {
  auto j = small_header_json();
  auto& programs = j["plan"]["programs"];
  programs[2]["tensors"] = {{"count", 8000}};
  j["scenario_json"] = std::string(8000, ' ');
  const std::size_t copies = 150;  // 150 × 8,000 rows: far more than 64 per byte of a ~13 kB header
  for (std::size_t r = 3; r < 3 + copies; ++r) programs.push_back({{"rank", r}, {"same_as", 2}});
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "ops and tensors in all, more than its");

  programs.erase(programs.begin() + 3 + 40, programs.end());  // 40 copies: within the limit
  const auto r = read_trace_bytes(crafted_trace(j.dump()), "copies");
  EXPECT_EQ(r.header.plan->programs.size(), 43u);
  EXPECT_EQ(r.header.plan->programs[42].tensors.size(), 8000u);
  EXPECT_EQ(r.header.plan->programs[42].rank, 42);
}

// However large the header, a plan holds at most kMaxTracePlanOps ops (and as many tensors), copies included, and the
// copies are counted before any is made: 100 copies of a program of 200,000 default ops (20 M, within 64 a byte of a
// 400 kB header) are refused at once, not after 2.4 GB of copies.
TEST(UntrustedTrace, CopiedProgramsStopAtTheTraceOpLimitBeforeTheyAreMade) {
  static_assert(trace_format::kMaxTracePlanOps == 16'000'000);
  auto j = small_header_json();
  auto& programs = j["plan"]["programs"];
  programs[2]["ops"] = {{"count", 200'000}};
  j["scenario_json"] = std::string(400'000, ' ');
  for (std::size_t r = 3; r < 3 + 100; ++r) programs.push_back({{"rank", r}, {"same_as", 2}});
  const auto started = std::chrono::steady_clock::now();
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "more than the 16000000 of each a trace may hold (kMaxTracePlanOps)");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));

  programs.erase(programs.begin() + 3 + 2, programs.end());  // 2 copies: read, each a whole program
  const auto r = read_trace_bytes(crafted_trace(j.dump()), "copies");
  ASSERT_EQ(r.header.plan->programs.size(), 5u);
  EXPECT_EQ(r.header.plan->programs[4].ops.size(), 200'000u);
  EXPECT_EQ(r.header.plan->programs[4].rank, 4);

  programs[3]["same_as"] = 4;  // a copy of a program not yet read
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "program 3 refers to a rank stored after it");
}

TEST(UntrustedTrace, HeaderRanksMustBeIndicesWithinTheWorldMaximum) {
  auto j = small_header_json();
  j["plan"]["programs"][1]["rank"] = 7;
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "program 1 says it is rank 7");

  j = small_header_json();
  j["devices"] = nlohmann::json::array();
  for (int r = 0; r <= kMaxTraceRanks; ++r) j["devices"].push_back({{"rank", r}, {"name", ""}, {"capacity", 0}, {"physical_device", -1}});
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "65537 devices, more than 65536");

  j = small_header_json();
  for (int r = 3; r <= kMaxTraceRanks; ++r) j["plan"]["programs"].push_back({{"rank", r}, {"same_as", 0}});
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "65537 programs, more than 65536");
}

// Integers that are floats or out of their type's range are refused, never converted (a float past INT_MAX cast to
// int is undefined behaviour); so are byte counts past ±2^56 (readers scale and add them) and fields of the wrong
// JSON type anywhere (a named TraceFileError, not a JSON library exception).
TEST(UntrustedTrace, HeaderValuesOfTheWrongTypeOrRangeAreRefused) {
  auto j = small_header_json();
  j["devices"][0]["rank"] = 1e300;
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "devices[].rank is not an integer in range");

  j = small_header_json();
  j["plan"]["programs"][0]["ops"]["step"][0] = 4294967296;
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "column 'step' is not an integer in range");

  j = small_header_json();
  j["plan"]["programs"][0]["ops"]["payload"][4] = std::numeric_limits<std::int64_t>::min();
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "column 'payload' -9223372036854775808 is past ±2^56 bytes");

  j = small_header_json();
  j["devices"][1]["capacity"] = std::int64_t{1} << 62;
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "devices[].capacity 4611686018427387904 is past ±2^56 bytes");

  j = small_header_json();
  j["format"] = 5;
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "not a ShardScope trace header");

  j = small_header_json();
  j["plan"]["legend"]["op_kind"] = {1, 2};
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "legend.op_kind entry is not a string");

  j = small_header_json();
  j["plan"]["groups"] = {{0, 1.5}};
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "plan.groups[][] is not an integer in range");

  j = small_header_json();
  j["plan"]["programs"][0]["ops"] = "seven";
  EXPECT_CONTAINS(read_error(crafted_trace(j.dump())), "header field missing or of the wrong type");
}

// An event's time is the previous one plus a difference: one past ±2^60 ns (or a difference that overflows) is
// damage, and so are byte counts past ±2^56. The read stops there, keeping the events before.
TEST(UntrustedTrace, EventTimesAndBytesOutOfRangeEndTheReadThere) {
  const std::string header = trace_format::encode_header_json(testing::small_header());
  using testing::ev;
  using K = TraceEventKind;
  const TraceEvent fine = ev(K::OpBegin, 0, 100, 2, 1);

  for (const TimeNs t : {kMaxTraceTimeNs + 1, -kMaxTraceTimeNs - 1, std::numeric_limits<TimeNs>::max()}) {
    const auto r = read_trace_bytes(crafted_trace(header, {fine, ev(K::OpEnd, 0, t, 2, 1), fine}), "t");
    EXPECT_EQ(r.events.size(), 1u) << t;
    EXPECT_TRUE(r.truncated);
    EXPECT_CONTAINS(r.problem, "is damaged (malformed event)");
  }
  // previous + difference overflowing int64: the writer never makes such a difference, so build it by hand.
  std::string bytes = trace_format::encode_preamble(1);
  trace_format::append_record(bytes, trace_format::RecordType::Header, header);
  std::string payload;
  trace_format::append_event_payload(payload, ev(K::OpBegin, 0, kMaxTraceTimeNs, 2, 1), 0);
  trace_format::append_record(bytes, trace_format::RecordType::Event, payload);
  payload.clear();
  trace_format::append_event_payload(payload, ev(K::OpEnd, 0, std::numeric_limits<TimeNs>::max(), 2, 1), 0);  // dt = INT64_MAX
  trace_format::append_record(bytes, trace_format::RecordType::Event, payload);
  const auto overflow = read_trace_bytes(bytes, "dt");
  EXPECT_EQ(overflow.events.size(), 1u);
  EXPECT_CONTAINS(overflow.problem, "malformed event");

  for (const Bytes b : {kMaxTraceBytes + 1, -kMaxTraceBytes - 1, std::numeric_limits<Bytes>::min()}) {
    const auto r = read_trace_bytes(
        crafted_trace(header, {fine, testing::mem(K::Alloc, 0, 200, 3, 1, Category::Activations, b, 0, 0)}), "bytes");
    EXPECT_EQ(r.events.size(), 1u) << b;
    EXPECT_CONTAINS(r.problem, "malformed event");
    const auto after = read_trace_bytes(
        crafted_trace(header, {fine, testing::mem(K::Alloc, 0, 200, 3, 1, Category::Activations, 1, b, 0)}), "allocated");
    EXPECT_EQ(after.events.size(), 1u) << b;
  }
  // At the limits: read.
  const auto edge = read_trace_bytes(
      crafted_trace(header, {ev(K::OpBegin, 0, -kMaxTraceTimeNs, 2, 1),
                             testing::mem(K::Alloc, 0, kMaxTraceTimeNs, 3, 1, Category::Activations, kMaxTraceBytes, -kMaxTraceBytes, 0)}),
      "edge");
  EXPECT_EQ(edge.events.size(), 2u);
  EXPECT_FALSE(edge.truncated);
}

// Events naming an op, tensor or rank the plan lacks are kept by the reader (it reads the format; TraceStore judges
// them against the header: test_trace_store.cpp).
TEST(UntrustedTrace, EventsNamingWhatThePlanLacksAreReadAsTheyAre) {
  using testing::ev;
  using K = TraceEventKind;
  const auto r = read_trace_bytes(crafted_trace(trace_format::encode_header_json(testing::small_header()),
                                                {ev(K::OpBegin, 0, 10, 2'000'000'000, 1), ev(K::OpBegin, 2'000'000'000, 20, 1, 1)}),
                                  "lacking");
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].op, 2'000'000'000);
  EXPECT_EQ(r.events[1].rank, 2'000'000'000);
}

// A sink that runs out of memory: replay names the file instead of letting a bare std::bad_alloc out.
TEST(UntrustedTrace, RunningOutOfMemoryIsANamedError) {
  struct Starved : TraceSink {
    void begin(const TraceHeader&) override {}
    void emit(const TraceEvent&) override { throw std::bad_alloc(); }
  } starved;
  const auto trace = read_trace_bytes(crafted_trace(trace_format::encode_header_json(testing::small_header()), testing::store_events()),
                                      "big.sstrace");
  try {
    replay_trace(trace, starved);
    FAIL() << "no exception";
  } catch (const TraceFileError& e) {
    EXPECT_EQ(e.path(), "big.sstrace");
    EXPECT_CONTAINS(e.problem(), "not enough memory to replay its 15 events");
  }
}

}  // namespace
}  // namespace shardscope
