// Exports: Chrome trace JSON (parsed back with nlohmann) and the memory CSV, from the hand-made run of
// trace_test_helpers.h, with figures checked by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "trace/export/chrome_trace_export.h"
#include "trace/export/memory_csv_export.h"
#include "trace/store/trace_store.h"
#include "trace_test_helpers.h"

namespace shardscope {
namespace {

using nlohmann::json;

void fill(TraceStore& store) {
  store.begin(testing::small_header());
  for (const auto& e : testing::store_events()) store.emit(e);
  store.end();
}

TEST(ChromeTraceExport, MicrosecondsKeepNanoseconds) {
  EXPECT_EQ(chrome_trace_us(0), "0.000");
  EXPECT_EQ(chrome_trace_us(400), "0.400");
  EXPECT_EQ(chrome_trace_us(1234167), "1234.167");
  EXPECT_EQ(chrome_trace_us(-1500), "-1.500");
  EXPECT_EQ(chrome_trace_us(9'000'000'000'000'001), "9000000000000.001");
}

TEST(ChromeTraceExport, ParsesWithTheExpectedEvents) {
  TraceStore store;
  fill(store);
  std::ostringstream out;
  write_chrome_trace(store, out);
  const std::string text = out.str();
  const json j = json::parse(text);  // throws if not JSON
  ASSERT_TRUE(j.at("traceEvents").is_array());

  std::map<std::string, int> count;
  for (const auto& e : j.at("traceEvents")) ++count[e.at("ph").get<std::string>()];
  // M: process_name for ranks 0, 1, 2 + thread_name for rank 0's compute and communication streams.
  EXPECT_EQ(count["M"], 5);
  // X: op 2 twice, op 4, op 6 (unfinished).
  EXPECT_EQ(count["X"], 4);
  // C: rank 0's three memory samples, rank 1's one, rank 1's measured device memory.
  EXPECT_EQ(count["C"], 5);
  // i: phase model_created, the error, the run end.
  EXPECT_EQ(count["i"], 3);
  EXPECT_EQ(j.at("traceEvents").size(), 17u);

  std::vector<std::string> process_names;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name") process_names.push_back(e.at("args").at("name"));
  EXPECT_EQ(process_names, (std::vector<std::string>{"rank 0 (A100-80GB)", "rank 1 (A100-80GB)", "rank 2 (H100 \"SXM\")"}));

  // The all-reduce (rank 0, op 4): 400 ns -> 1234567 ns is ts 0.400 us, dur 1234.167 us.
  const json* allreduce = nullptr;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("args").at("op") == 4) allreduce = &e;
  ASSERT_NE(allreduce, nullptr);
  EXPECT_EQ((*allreduce)["name"], "all-reduce bucket 0");
  EXPECT_EQ((*allreduce)["cat"], "all-reduce");
  EXPECT_EQ((*allreduce)["pid"], 0);
  EXPECT_EQ((*allreduce)["tid"], 1);  // Stream::Communication
  EXPECT_DOUBLE_EQ((*allreduce)["ts"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ((*allreduce)["dur"].get<double>(), 1234.167);
  EXPECT_EQ((*allreduce)["args"]["payload_bytes"], 1000);
  EXPECT_EQ((*allreduce)["args"]["group"], 0);
  EXPECT_EQ((*allreduce)["args"]["step"], 1);
  EXPECT_NE(text.find("\"ts\":0.400,\"dur\":1234.167"), std::string::npos);

  // fc1 forward in step 2: [500, 900] ns, with its compute figures.
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e["args"]["op"] == 2 && e["args"]["step"] == 2) {
      EXPECT_EQ(e["name"], "fc1 forward");
      EXPECT_EQ(e["cat"], "forward");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.5);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.4);
      EXPECT_EQ(e["args"]["layer"], 0);
      EXPECT_DOUBLE_EQ(e["args"]["flops"].get<double>(), 2.5e6);
      EXPECT_EQ(e["args"]["bytes_accessed"], 4096);
    }
    if (e["args"]["op"] == 6) {  // never ended: drawn to the end of the trace, 1300000 -> 1500000 ns
      EXPECT_EQ(e["cat"], "send");
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 200.0);
      EXPECT_EQ(e["args"]["unfinished"], true);
      EXPECT_EQ(e["args"]["peer"], 2);
      EXPECT_EQ(e["args"]["micro_batch"], 0);
    }
  }

  // The memory counter at 150 ns on rank 0: 1000 B parameters, 500 B activations.
  bool seen_counter = false;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "C" && e.at("pid") == 0 && e.at("ts").get<double>() == 0.15) {
      seen_counter = true;
      EXPECT_EQ(e["name"], "memory (bytes)");
      EXPECT_EQ(e["args"]["parameters"], 1000);
      EXPECT_EQ(e["args"]["activations"], 500);
      EXPECT_EQ(e["args"].size(), static_cast<std::size_t>(kCategoryCount));
    }
  EXPECT_TRUE(seen_counter);
}

TEST(ChromeTraceExport, EmptyStoreIsValidJson) {
  TraceStore store;
  std::ostringstream out;
  write_chrome_trace(store, out);
  const json j = json::parse(out.str());
  EXPECT_TRUE(j.at("traceEvents").empty());
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(MemoryCsvExport, HeaderAndRows) {
  TraceStore store;
  fill(store);
  std::ostringstream out;
  write_memory_csv(store, out);
  const auto rows = lines(out.str());
  ASSERT_EQ(rows.size(), 5u);  // header + rank 0's three changes + rank 1's one
  EXPECT_EQ(rows[0],
            "t_ns,rank,allocated_bytes,reserved_bytes,parameters,gradients,ddp_buckets,optimizer_state,activations,temporaries,"
            "communication_buffers,gathered_parameters");
  // Ordered by time, then rank.
  EXPECT_EQ(rows[1], "0,0,1000,2048,1000,0,0,0,0,0,0,0");
  EXPECT_EQ(rows[2], "50,1,1000,1000,1000,0,0,0,0,0,0,0");
  EXPECT_EQ(rows[3], "150,0,1500,2048,1000,0,0,0,500,0,0,0");
  EXPECT_EQ(rows[4], "1000,0,1000,2048,1000,0,0,0,0,0,0,0");
}

}  // namespace
}  // namespace shardscope
