// engine/trace/file/FORMAT.md's worked example is what the writer produces: the hex dump in the document is compared
// byte for byte with TraceFileWriter's file for the same header and events, so the document cannot drift from the
// code. (tests/cli/check_format_example.py checks what `trace info` reads from the same bytes.)
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "trace_test_helpers.h"
#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"
#include "trace/file/trace_format.h"

namespace shardscope {
namespace {

// The example as FORMAT.md describes it in words ("The example").
TraceHeader example_header() {
  TraceHeader h;
  h.tool_version = "ShardScope (example)";
  h.source = "example";
  h.scenario_json = "{}";
  h.accounting_rules = "exact";
  h.devices = {{0, "CPU", 0, -1}, {1, "CPU", 0, -1}};
  h.host = "lab-pc";
  h.recorded_at = "2026-11-25T20:00:00Z";
  return h;
}

std::vector<TraceEvent> example_events() {
  TraceEvent alloc = testing::mem(TraceEventKind::Alloc, 0, 1000, -1, -1, Category::Parameters, 4096, 4096, 4096);
  TraceEvent phase = testing::with_text(testing::ev(TraceEventKind::Phase, 1, 1500, -1, 1), "forward");
  TraceEvent end = testing::with_text(testing::ev(TraceEventKind::RunEnd, -1, 2500), "ok");
  return {alloc, phase, end};
}

// The document's dump format: "0010: 01 ab ...  |ascii|", 16 bytes a line.
std::string hex_dump(const std::string& bytes) {
  std::string out;
  for (std::size_t line = 0; line < bytes.size(); line += 16) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%04zx:", line);
    out += buf;
    std::string ascii;
    for (std::size_t i = line; i < line + 16; ++i) {
      if (i < bytes.size()) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        std::snprintf(buf, sizeof buf, " %02x", b);
        out += buf;
        ascii += (b >= 0x20 && b < 0x7f) ? static_cast<char>(b) : '.';
      } else {
        out += "   ";
      }
    }
    out += "  |" + ascii + "|\n";
  }
  return out;
}

// The bytes of the dump between the example markers of FORMAT.md (`which`: "example" or "example-v1").
std::string document_bytes(const std::string& doc, const std::string& which = "example") {
  const std::string begin = "<!-- " + which + "-hex-begin -->", end = "<!-- " + which + "-hex-end -->";
  const auto from = doc.find(begin), to = doc.find(end);
  if (from == std::string::npos || to == std::string::npos) return "";
  std::istringstream lines(doc.substr(from + begin.size(), to - from - begin.size()));
  std::string bytes, line;
  while (std::getline(lines, line)) {
    const auto colon = line.find(':');
    if (line.rfind("```", 0) == 0 || colon == std::string::npos) continue;
    EXPECT_EQ(std::stoul(line.substr(0, colon), nullptr, 16), bytes.size()) << line;
    std::istringstream hex(line.substr(colon + 1, line.find('|') - colon - 1));
    std::string word;
    while (hex >> word) bytes.push_back(static_cast<char>(std::stoul(word, nullptr, 16)));
  }
  return bytes;
}

TEST(TraceFormatDocument, TheWorkedExampleIsWhatTheWriterWrites) {
  testing::TempFile file("format_doc");
  {
    TraceFileWriter writer(file.path());
    writer.begin(example_header());
    for (const auto& e : example_events()) writer.emit(e);
    writer.end();
  }
  const std::string written = testing::read_bytes(file.path());
  const std::string doc = testing::read_bytes(std::string(SHARDSCOPE_SOURCE_DIR) + "/engine/trace/file/FORMAT.md");
  ASSERT_FALSE(doc.empty()) << "engine/trace/file/FORMAT.md not found";
  const std::string documented = document_bytes(doc);
  EXPECT_EQ(hex_dump(documented), hex_dump(written)) << "FORMAT.md's example differs from the writer's bytes; the writer's:\n"
                                                      << hex_dump(written);
}

TEST(TraceFormatDocument, TheExampleReadsBackAsDescribed) {
  const std::string doc = testing::read_bytes(std::string(SHARDSCOPE_SOURCE_DIR) + "/engine/trace/file/FORMAT.md");
  const TraceReadResult r = read_trace_bytes(document_bytes(doc), "FORMAT.md example");
  EXPECT_FALSE(r.truncated) << r.problem;
  EXPECT_EQ(r.header.host, "lab-pc");
  EXPECT_FALSE(r.header.nccl_version.has_value());
  const auto events = example_events();
  ASSERT_EQ(r.events.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) testing::expect_event_eq(r.events[i], events[i], "event " + std::to_string(i));
}

// Format version 1 (one Event record per event), as ShardScope wrote it before event blocks: the old code path
// (trace_format's version 1 encoder) gives the document's version 1 dump, and it reads back as the same events.
TEST(TraceFormatDocument, TheVersion1ExampleIsWhatTheOldWriterWroteAndStillReads) {
  const std::string doc = testing::read_bytes(std::string(SHARDSCOPE_SOURCE_DIR) + "/engine/trace/file/FORMAT.md");
  const std::string documented = document_bytes(doc, "example-v1");
  std::string json = trace_format::encode_header_json(example_header());
  const std::string v2_key = "\"format_version\":2", v1_key = "\"format_version\":1";
  ASSERT_NE(json.find(v2_key), std::string::npos);
  json.replace(json.find(v2_key), v2_key.size(), v1_key);
  std::string v1 = trace_format::encode_preamble(1);
  trace_format::append_record(v1, trace_format::RecordType::Header, json);
  TimeNs previous = 0;
  for (const auto& e : example_events()) {
    std::string payload;
    trace_format::append_event_payload(payload, e, previous);
    previous = e.t_ns;
    trace_format::append_record(v1, trace_format::RecordType::Event, payload);
  }
  trace_format::append_record(v1, trace_format::RecordType::End, "");
  EXPECT_EQ(hex_dump(documented), hex_dump(v1));

  const TraceReadResult r = read_trace_bytes(documented, "FORMAT.md version 1 example");
  EXPECT_FALSE(r.truncated) << r.problem;
  EXPECT_EQ(r.format_version, 1u);
  EXPECT_EQ(r.header.format_version, 1);
  EXPECT_EQ(r.header.host, "lab-pc");
  const auto events = example_events();
  ASSERT_EQ(r.events.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) testing::expect_event_eq(r.events[i], events[i], "event " + std::to_string(i));
}

}  // namespace
}  // namespace shardscope
