// Writes the trace fuzzers' seed corpus into DIR (run by CTest before the fuzz smoke tests, so nothing is downloaded
// or checked in): the hand-made run of tests/engine/trace_test_helpers.h, small simulated runs (DDP with its
// "same_as" programs, a 1F1B pipeline with sends and receives, ZeRO-3, a run out of memory with its Error event),
// one cut short mid-record, the hand-made run in format version 1 (one Event record per event, as files recorded
// before event blocks hold) and with one block per event (as a live stream carries it). Usage: write_trace_seeds DIR
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "engine/trace_test_helpers.h"
#include "scenario/scenario.h"
#include "sim/simulator.h"
#include "strategy/lower.h"
#include "trace/file/trace_file_writer.h"
#include "trace/file/trace_format.h"

namespace {

using namespace shardscope;

void simulate_into(const std::string& path, const std::string& scenario_json) {
  const ResolvedScenario scenario = resolve_scenario(parse_scenario_json(scenario_json, path));
  const Plan plan = lower_validated_plan(scenario);
  TraceFileWriter writer(path);
  simulate(scenario, plan, writer);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_trace_seeds DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  try {
    {
      TraceFileWriter writer((dir / "hand-made.sstrace").string());
      writer.begin(shardscope::testing::small_header());
      for (const auto& e : shardscope::testing::store_events()) writer.emit(e);
      writer.end();
    }
    simulate_into((dir / "ddp.sstrace").string(),
                  R"({"model": {"spec": "mlp:3x16:relu"}, "training": {"batch": 8, "steps": 2}, "cluster": {"world": 2},
                      "strategy": {"name": "ddp", "bucket_cap_mb": 0.001}})");
    simulate_into((dir / "pp-1f1b.sstrace").string(),
                  R"({"model": {"spec": "mlp:4x8"}, "training": {"batch": 8, "steps": 1}, "cluster": {"world": 2},
                      "strategy": {"name": "pp-1f1b", "stages": 2, "micro_batches": 2}})");
    simulate_into((dir / "zero3.sstrace").string(),
                  R"({"model": {"spec": "mlp:2x8"}, "training": {"batch": 4, "steps": 1}, "cluster": {"world": 2},
                      "strategy": {"name": "zero3"}})");
    simulate_into((dir / "oom.sstrace").string(),
                  R"({"model": {"spec": "mlp:2x64"}, "training": {"batch": 4, "steps": 1},
                      "cluster": {"world": 1, "device": "custom", "capacity_gib": 0.00002}, "strategy": {"name": "single"}})");
    {
      TraceFileWriter writer((dir / "one-event-blocks.sstrace").string(), {.buffer_bytes = 0, .max_delay = {}});
      writer.begin(shardscope::testing::small_header());
      for (const auto& e : shardscope::testing::store_events()) writer.emit(e);
      writer.end();
    }
    {
      std::string v1 = trace_format::encode_preamble(1);
      trace_format::append_record(v1, trace_format::RecordType::Header, trace_format::encode_header_json(shardscope::testing::small_header()));
      TimeNs previous = 0;
      for (const auto& e : shardscope::testing::store_events()) {
        std::string payload;
        trace_format::append_event_payload(payload, e, previous);
        previous = e.t_ns;
        trace_format::append_record(v1, trace_format::RecordType::Event, payload);
      }
      trace_format::append_record(v1, trace_format::RecordType::End, "");
      std::ofstream(dir / "version-1.sstrace", std::ios::binary) << v1;
    }
    // Cut short inside a record, as a crashed writer leaves it.
    std::ifstream in(dir / "hand-made.sstrace", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.sstrace", std::ios::binary) << bytes.substr(0, bytes.size() - 7);
  } catch (const std::exception& e) {
    std::cerr << "write_trace_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
