// Trace files at scale: write and read 1 M events (events/s, file bytes per event), feed them to a TraceStore,
// and write the header of the largest plan `memory` supports (64-rank DDP, about 2 M ops).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "strategy/lower.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_file_writer.h"
#include "trace/trace_format.h"
#include "trace/trace_store.h"

namespace {

using namespace shardscope;

constexpr std::size_t kEvents = 1'000'000;

// A run-like mix on 8 ranks: per op a begin and an end (compute or communication stream, µs-scale durations),
// every fourth op an alloc or a free with its category and running totals, a phase marker now and then.
std::vector<TraceEvent> make_events() {
  std::vector<TraceEvent> events;
  events.reserve(kEvents);
  std::mt19937_64 rng(42);
  constexpr int kRanks = 8;
  std::vector<TimeNs> t(kRanks, 0);
  std::vector<Bytes> allocated(kRanks, 0);
  OpIndex op = 0;
  while (events.size() < kEvents) {
    const int rank = static_cast<int>(rng() % kRanks);
    const Stream stream = rng() % 3 == 0 ? Stream::Communication : Stream::Compute;
    TraceEvent e;
    e.rank = rank;
    e.step = 1 + op / 20000;
    e.op = op % 20000;
    e.stream = stream;
    e.kind = TraceEventKind::OpBegin;
    e.t_ns = t[static_cast<std::size_t>(rank)] += static_cast<TimeNs>(rng() % 2000);
    events.push_back(e);
    e.kind = TraceEventKind::OpEnd;
    e.t_ns = t[static_cast<std::size_t>(rank)] += 1000 + static_cast<TimeNs>(rng() % 200000);
    events.push_back(e);
    if (op % 4 == 0) {
      TraceEvent m;
      m.rank = rank;
      m.t_ns = e.t_ns;
      m.step = e.step;
      m.op = e.op + 1;
      const bool alloc = allocated[static_cast<std::size_t>(rank)] == 0 || rng() % 2 == 0;
      m.kind = alloc ? TraceEventKind::Alloc : TraceEventKind::Free;
      m.category = static_cast<Category>(rng() % kCategoryCount);
      m.bytes = static_cast<Bytes>(rng() % (64 * kMiB)) & ~Bytes{511};
      if (!alloc) m.bytes = std::min(m.bytes, allocated[static_cast<std::size_t>(rank)]);
      allocated[static_cast<std::size_t>(rank)] += alloc ? m.bytes : -m.bytes;
      m.allocated_after = allocated[static_cast<std::size_t>(rank)];
      m.reserved_after = round_up(m.allocated_after + 1, 2 * kMiB);
      m.tensor = e.op / 2;
      events.push_back(m);
    }
    if (op % 1000 == 0) {
      TraceEvent p;
      p.kind = TraceEventKind::Phase;
      p.rank = rank;
      p.t_ns = e.t_ns;
      p.step = e.step;
      p.text = "before_step";
      events.push_back(p);
    }
    ++op;
  }
  events.resize(kEvents);
  return events;
}

const std::vector<TraceEvent>& events() {
  static const std::vector<TraceEvent> e = make_events();
  return e;
}

std::string bench_path() {
  return (std::filesystem::temp_directory_path() / ("shardscope_bench_" + std::to_string(::getpid()) + ".sstrace")).string();
}

TraceHeader header() {
  TraceHeader h;
  h.tool_version = "bench";
  h.source = "simulator";
  return h;
}

void write_file(const std::string& path) {
  TraceFileWriter writer(path);
  writer.begin(header());
  for (const auto& e : events()) writer.emit(e);
  writer.end();
}

void BM_WriteTrace_1M(benchmark::State& state) {
  const std::string path = bench_path();
  events();
  for (auto _ : state) write_file(path);
  const auto bytes = std::filesystem::file_size(path);
  std::filesystem::remove(path);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(kEvents * state.iterations()), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["bytes/event"] = static_cast<double>(bytes) / static_cast<double>(kEvents);
}

void BM_ReadTrace_1M(benchmark::State& state) {
  const std::string path = bench_path();
  write_file(path);
  for (auto _ : state) {
    const auto r = read_trace_file(path);
    if (r.events.size() != kEvents || r.truncated) state.SkipWithError("read back the wrong events");
    benchmark::DoNotOptimize(r.events.data());
  }
  std::filesystem::remove(path);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(kEvents * state.iterations()), benchmark::Counter::kIsRate);
}

void BM_TraceStoreIngest_1M(benchmark::State& state) {
  events();
  for (auto _ : state) {
    TraceStore store;
    store.begin(header());
    for (const auto& e : events()) store.emit(e);
    store.end();
    benchmark::DoNotOptimize(store.rank_count());
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(kEvents * state.iterations()), benchmark::Counter::kIsRate);
}

TraceHeader ddp_64_rank_header() {
  Scenario s;
  s.model.spec = "mlp:1000x1024";
  s.strategy.kind = StrategyKind::Ddp;
  s.cluster.world = 64;
  s.training.batch = 8;
  s.training.steps = 2;
  TraceHeader h = header();
  h.plan = std::make_shared<Plan>(lower_plan(resolve_scenario(s)));
  return h;
}

// The header the simulator writes before its first event, for the largest plan the memory bench lowers.
void BM_EncodeHeader_Ddp_Mlp1000x1024_64Ranks(benchmark::State& state) {
  const TraceHeader h = ddp_64_rank_header();
  std::size_t bytes = 0;
  for (auto _ : state) bytes = trace_format::encode_header_json(h).size();
  state.counters["ops"] = static_cast<double>(h.plan->op_count());
  state.counters["header_MB"] = static_cast<double>(bytes) / 1e6;
}

void BM_DecodeHeader_Ddp_Mlp1000x1024_64Ranks(benchmark::State& state) {
  const TraceHeader h = ddp_64_rank_header();
  const std::string json = trace_format::encode_header_json(h);
  for (auto _ : state) benchmark::DoNotOptimize(trace_format::decode_header_json(json).plan->op_count());
}

BENCHMARK(BM_WriteTrace_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadTrace_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TraceStoreIngest_1M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeHeader_Ddp_Mlp1000x1024_64Ranks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeHeader_Ddp_Mlp1000x1024_64Ranks)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
