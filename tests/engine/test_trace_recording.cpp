// Recordings that survive their writer (issue 19): the writer's timed and phase-boundary flushes (a writer killed
// with SIGKILL while its producer pauses leaves every event), and the header's
// recording metadata (host, start time, command line, runtime versions) with its forward compatibility.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "trace_test_helpers.h"
#include "trace/file/recording_stamp.h"
#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"
#include "trace/file/trace_format.h"

namespace shardscope {
namespace {

using namespace std::chrono_literals;

TraceHeader plain_header() {
  TraceHeader h;
  h.tool_version = "0.1.0-test";
  h.source = "simulator";
  h.scenario_json = "{}";
  h.accounting_rules = "exact";
  h.devices = {{0, "CPU", 0, -1}};
  return h;
}

// Events a reader finds in the file now (the writer still open: no End record yet).
std::size_t events_on_disk(const std::string& path) { return read_trace_file(path).events.size(); }

TEST(TraceRecording, APausedProducersEventReachesTheFileWithinTheDelay) {
  testing::TempFile file("timed");
  TraceFileWriter writer(file.path());  // default: 100 ms delay, a 256 KiB buffer one event does not fill
  writer.begin(plain_header());
  writer.emit(testing::ev(TraceEventKind::OpBegin, 0, 10, -1, 1));  // not a kind flushed at once
  const auto start = std::chrono::steady_clock::now();
  // The producer now pauses. The event must reach the file without another call to the writer: the header says
  // within max_delay (100 ms; the issue asks for 250 ms); 5 s leaves room for a loaded machine.
  while (events_on_disk(file.path()) == 0 && std::chrono::steady_clock::now() - start < 5s) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(events_on_disk(file.path()), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  writer.end();
}

TEST(TraceRecording, AWriterKilledWhilePausedLeavesEveryEventItEmitted) {
  testing::TempFile file("killed");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the recording process: 10 events, then a pause it never wakes from
    TraceFileWriter writer(file.path());
    writer.begin(plain_header());
    for (int i = 0; i < 10; ++i) writer.emit(testing::ev(TraceEventKind::OpBegin, 0, 100 * i, -1, 1));
    ::sleep(60);
    ::_exit(0);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto on_disk = [&]() -> std::size_t {
    try {
      return read_trace_file(file.path()).events.size();
    } catch (const TraceFileError&) {  // not created yet, or still without its header
      return 0;
    }
  };
  while (on_disk() < 10 && std::chrono::steady_clock::now() - start < 5s) std::this_thread::sleep_for(5ms);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  const TraceReadResult r = read_trace_file(file.path());
  ASSERT_EQ(r.events.size(), 10u);  // every event, though the producer never called the writer again
  EXPECT_EQ(r.events.back().t_ns, 900);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.valid_bytes, r.file_bytes);  // it ends at a record boundary
  EXPECT_NE(r.problem.find("no end record"), std::string::npos) << r.problem;
}

TEST(TraceRecording, APhaseBoundaryIsFlushedAtOnce) {
  testing::TempFile file("phase");
  TraceFileWriterOptions options;
  options.max_delay = std::chrono::milliseconds(std::chrono::hours(1));  // the timer never fires during the test
  TraceFileWriter writer(file.path(), options);
  writer.begin(plain_header());
  writer.emit(testing::ev(TraceEventKind::OpBegin, 0, 10, -1, 1));
  writer.emit(testing::ev(TraceEventKind::OpEnd, 0, 20, -1, 1));
  EXPECT_EQ(events_on_disk(file.path()), 0u);  // waiting in memory
  writer.emit(testing::with_text(testing::ev(TraceEventKind::Phase, 0, 30, -1, 1), "forward"));
  const auto on_disk = read_trace_file(file.path());
  ASSERT_EQ(on_disk.events.size(), 3u);  // the phase and everything before it
  EXPECT_EQ(on_disk.events[2].text, "forward");
  EXPECT_TRUE(on_disk.truncated);  // no End record while the writer is open
  writer.end();
  EXPECT_FALSE(read_trace_file(file.path()).truncated);
}

TEST(TraceRecording, WithoutATimerNothingIsWrittenBeforeAFlushPoint) {
  // max_delay 0 turns the timer off: this is what the timer test above relies on to mean something.
  testing::TempFile file("no_timer");
  TraceFileWriterOptions options;
  options.max_delay = 0ms;
  TraceFileWriter writer(file.path(), options);
  writer.begin(plain_header());
  writer.emit(testing::ev(TraceEventKind::OpBegin, 0, 10, -1, 1));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(events_on_disk(file.path()), 0u);
  writer.flush();
  EXPECT_EQ(events_on_disk(file.path()), 1u);
}

TEST(TraceRecording, RecordingMetadataRoundTrips) {
  TraceHeader h = plain_header();
  h.host = "lab-pc";
  h.recorded_at = "2026-11-25T20:00:00Z";
  h.command_line = "shardscope-cli run --backend cuda --out 'my run.sstrace'";
  h.driver_version = "13.0";
  h.cuda_runtime_version = "12.8";
  h.nccl_version = "2.28.9";
  const auto json = nlohmann::json::parse(trace_format::encode_header_json(h));
  EXPECT_EQ(json["host"], "lab-pc");
  EXPECT_EQ(json["recorded_at"], "2026-11-25T20:00:00Z");
  EXPECT_EQ(json["command_line"], h.command_line);
  EXPECT_EQ(json["driver_version"], "13.0");
  EXPECT_EQ(json["cuda_runtime_version"], "12.8");
  EXPECT_EQ(json["nccl_version"], "2.28.9");
  const TraceHeader back = trace_format::decode_header_json(json.dump());
  EXPECT_EQ(back.host, h.host);
  EXPECT_EQ(back.recorded_at, h.recorded_at);
  EXPECT_EQ(back.command_line, h.command_line);
  EXPECT_EQ(back.driver_version, h.driver_version);
  EXPECT_EQ(back.cuda_runtime_version, h.cuda_runtime_version);
  EXPECT_EQ(back.nccl_version, h.nccl_version);
}

TEST(TraceRecording, UnknownMetadataIsWrittenAsNull) {
  const auto json = nlohmann::json::parse(trace_format::encode_header_json(plain_header()));
  for (const char* key : {"host", "recorded_at", "command_line", "driver_version", "cuda_runtime_version", "nccl_version"}) {
    ASSERT_TRUE(json.contains(key)) << key;
    EXPECT_TRUE(json[key].is_null()) << key;
  }
}

TEST(TraceRecording, HeadersWithoutTheMetadataStillRead) {
  // A header as the first version wrote it: none of the recording keys.
  auto json = nlohmann::json::parse(trace_format::encode_header_json(plain_header()));
  for (const char* key : {"host", "recorded_at", "command_line", "driver_version", "cuda_runtime_version", "nccl_version"})
    json.erase(key);
  const TraceHeader h = trace_format::decode_header_json(json.dump());
  EXPECT_EQ(h.host, "");
  EXPECT_EQ(h.command_line, "");
  EXPECT_FALSE(h.driver_version.has_value());
  EXPECT_EQ(h.source, "simulator");
}

TEST(TraceRecording, KeysALaterVersionAddsAreIgnored) {
  auto json = nlohmann::json::parse(trace_format::encode_header_json(plain_header()));
  json["energy_joules"] = 12.5;
  json["cluster"] = {{"scheduler", "slurm"}, {"job", 42}};
  const TraceHeader h = trace_format::decode_header_json(json.dump());
  EXPECT_EQ(h.source, "simulator");
  ASSERT_EQ(h.devices.size(), 1u);
}

TEST(TraceRecording, MetadataOfTheWrongTypeIsRefused) {
  auto json = nlohmann::json::parse(trace_format::encode_header_json(plain_header()));
  json["host"] = 42;
  try {
    trace_format::decode_header_json(json.dump());
    FAIL() << "a numeric host was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("host is not a string"), std::string::npos) << e.what();
  }
}

TEST(TraceRecording, CommandLinesAreQuotedAsAShellReadsThem) {
  EXPECT_EQ(shell_quoted_command_line({"shardscope-cli", "run", "--out", "a/b.sstrace", "--lr", "1e-3"}),
            "shardscope-cli run --out a/b.sstrace --lr 1e-3");
  EXPECT_EQ(shell_quoted_command_line({"shardscope-cli", "--name", "my run", "it's", ""}),
            "shardscope-cli --name 'my run' 'it'\\''s' ''");
  EXPECT_EQ(shell_quoted_command_line({"a$b", "c;d", "e*"}), "'a$b' 'c;d' 'e*'");
}

TEST(TraceRecording, StartTimesAreUtcIso8601) {
  // 1 764 100 800 s after the epoch: 20 417 whole days (20 417 × 86 400 = 1 764 028 800; 1970-01-01 + 20 417 days =
  // 2025-11-25: 55 years with 14 leap days are 20 089 days to 2025-01-01, then 328 days to 25 November) and
  // 72 000 s = 20:00:00.
  const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1'764'100'800));
  EXPECT_EQ(utc_iso8601(t), "2025-11-25T20:00:00Z");
  EXPECT_EQ(utc_iso8601(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00Z");
}

TEST(TraceRecording, TheStampFillsOnlyWhatTheHeaderLacks) {
  VectorTraceSink out;
  StampingTraceSink stamped(out, {"lab-pc", "2026-11-25T20:00:00Z", "shardscope-cli simulate --out x.sstrace"});
  TraceHeader h = plain_header();
  h.host = "gpu-node-3";  // a producer that knows better keeps its value
  stamped.begin(h);
  stamped.emit(testing::ev(TraceEventKind::OpBegin, 0, 1));
  EXPECT_EQ(out.header().host, "gpu-node-3");
  EXPECT_EQ(out.header().recorded_at, "2026-11-25T20:00:00Z");
  EXPECT_EQ(out.header().command_line, "shardscope-cli simulate --out x.sstrace");
  EXPECT_EQ(out.events().size(), 1u);
}

TEST(TraceRecording, TheStampNamesThisHost) {
  const RecordingStamp stamp = make_recording_stamp("x");
  EXPECT_FALSE(stamp.host.empty());
  EXPECT_EQ(stamp.recorded_at.size(), std::string("2026-11-25T20:00:00Z").size());
  EXPECT_EQ(stamp.recorded_at.back(), 'Z');
}

}  // namespace
}  // namespace shardscope
