// Trace files at scale: write and read 1 M events (events/s, file bytes per event), feed them to a TraceStore,
// and write the header of the largest plan `memory` supports (64-rank DDP, about 2 M ops). The *_9M benchmarks are
// issue 22's row: 9.1 M events shaped like `simulate --world 64 --steps 285` (64 ranks; 37 % op begins / ends, 62 %
// allocs / frees, phase markers), written (bytes per event, events/s) and loaded straight into a TraceStore
// (events/s, and the store's heap bytes per event, measured with mallinfo2).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "strategy/lower.h"
#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"
#include "trace/file/trace_format.h"
#include "trace/store/trace_store.h"

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

// A simulated DDP run's event mix, made one event at a time (9.1 M TraceEvents would take 650 MB themselves): the 64
// ranks run the same op at about the same time, round by round, and the events come out in time order as the
// simulator emits them; per op of a rank its begin and end, then three or four allocations or frees (DDP buckets,
// gradients, activations), and a phase marker every 150 ops.
class DdpLikeEvents {
 public:
  static constexpr int kRanks = 64;
  bool next(TraceEvent& e) {
    if (queue_.empty()) refill();
    e = std::move(queue_.back());
    queue_.pop_back();
    return true;
  }

 private:
  void refill() {
    const int rank = static_cast<int>(ops_ % kRanks);
    if (rank == 0) {  // a new round: every rank runs the next op
      round_t_ += round_duration_ + 500 + static_cast<TimeNs>(rng_() % 4000);
      round_duration_ = 2000 + static_cast<TimeNs>(rng_() % 300000);
    }
    auto& r = ranks_[static_cast<std::size_t>(rank)];
    const OpIndex op = static_cast<OpIndex>(r.op++ % 500);
    const int step = 1 + static_cast<int>(r.op / 500);
    std::vector<TraceEvent> out;
    TraceEvent b;
    b.rank = rank;
    b.step = step;
    b.op = op;
    b.stream = op % 9 == 0 ? Stream::Communication : Stream::Compute;
    b.t_ns = round_t_ + rank * 7;
    out.push_back(b);
    b.kind = TraceEventKind::OpEnd;
    b.t_ns = round_t_ + round_duration_ + rank * 7;
    out.push_back(b);
    r.t = b.t_ns;
    const int memory_events = op % 5 < 2 ? 4 : 3;
    for (int i = 0; i < memory_events; ++i) {
      TraceEvent m;
      m.rank = rank;
      m.step = step;
      m.op = op;
      m.t_ns = r.t;
      const bool alloc = r.live.empty() || rng_() % 2 == 0;
      m.kind = alloc ? TraceEventKind::Alloc : TraceEventKind::Free;
      if (alloc) {
        m.category = static_cast<Category>(rng_() % kCategoryCount);
        m.bytes = static_cast<Bytes>(rng_() % (64 * kMiB)) & ~Bytes{511};
        m.tensor = static_cast<TensorId>(r.next_tensor++ % 4000);
        r.live.push_back({m.tensor, m.bytes, m.category});
      } else {
        const auto freed = r.live.back();
        r.live.pop_back();
        m.tensor = freed.tensor;
        m.bytes = freed.bytes;
        m.category = freed.category;
      }
      r.allocated += alloc ? m.bytes : -m.bytes;
      m.allocated_after = r.allocated;
      r.reserved = std::max(r.reserved, round_up(r.allocated, 2 * kMiB));
      m.reserved_after = r.reserved;
      out.push_back(m);
    }
    if (ops_ % 150 == 0) {
      TraceEvent p;
      p.kind = TraceEventKind::Phase;
      p.rank = rank;
      p.t_ns = r.t;
      p.step = step;
      p.text = op < 250 ? "forward" : "backward";
      out.push_back(p);
    }
    ++ops_;
    queue_.assign(std::make_move_iterator(out.rbegin()), std::make_move_iterator(out.rend()));
  }
  struct Live {
    TensorId tensor;
    Bytes bytes;
    Category category;
  };
  struct Rank {
    TimeNs t = 0;
    std::uint64_t op = 0, next_tensor = 0;
    Bytes allocated = 0, reserved = 0;
    std::vector<Live> live;
  };
  std::vector<Rank> ranks_ = std::vector<Rank>(kRanks);
  std::vector<TraceEvent> queue_;
  std::uint64_t ops_ = 0;
  TimeNs round_t_ = 0, round_duration_ = 0;
  std::mt19937_64 rng_{7};
};

constexpr std::size_t kEvents9M = 9'100'000;

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

std::size_t write_9m_file(const std::string& path) {
  TraceFileWriter writer(path);
  TraceHeader h = header();
  h.devices.resize(DdpLikeEvents::kRanks);
  for (int r = 0; r < DdpLikeEvents::kRanks; ++r) h.devices[static_cast<std::size_t>(r)].rank = r;
  writer.begin(h);
  DdpLikeEvents source;
  TraceEvent e;
  for (std::size_t i = 0; i < kEvents9M; ++i) {
    source.next(e);
    writer.emit(e);
  }
  writer.end();
  return std::filesystem::file_size(path);
}

std::size_t heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

void BM_WriteTrace_9M(benchmark::State& state) {
  const std::string path = bench_path();
  std::size_t bytes = 0;
  for (auto _ : state) bytes = write_9m_file(path);
  std::filesystem::remove(path);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(kEvents9M * state.iterations()), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["bytes/event"] = static_cast<double>(bytes) / static_cast<double>(kEvents9M);
}

// The window's and `trace info`'s path: the file straight into a TraceStore. memory/event: the heap the loaded store
// holds (mallinfo2, after the load, minus before), per event.
void BM_LoadTraceIntoStore_9M(benchmark::State& state) {
  const std::string path = bench_path();
  write_9m_file(path);
  double per_event = 0;
  for (auto _ : state) {
    const std::size_t before = heap_bytes();
    TraceStore store;
    const TraceReadResult r = load_trace_file(path, store);
    if (r.event_count != kEvents9M || r.truncated) state.SkipWithError("loaded the wrong events");
    per_event = static_cast<double>(heap_bytes() - before) / static_cast<double>(kEvents9M);
    benchmark::DoNotOptimize(store.rank_count());
  }
  std::filesystem::remove(path);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(kEvents9M * state.iterations()), benchmark::Counter::kIsRate);
  state.counters["memory_B/event"] = per_event;
}

// The same file decoded into a sink that keeps nothing: the reader's share of the load.
class CountingSink : public TraceSink {
 public:
  void begin(const TraceHeader&) override {}
  void emit(const TraceEvent& e) override { sum_ += static_cast<std::uint64_t>(e.t_ns); }
  void end() override {}
  std::uint64_t sum_ = 0;
};

void BM_DecodeTraceFile_9M(benchmark::State& state) {
  const std::string path = bench_path();
  write_9m_file(path);
  for (auto _ : state) {
    CountingSink sink;
    const TraceReadResult r = load_trace_file(path, sink);
    if (r.event_count != kEvents9M || r.truncated) state.SkipWithError("decoded the wrong events");
    benchmark::DoNotOptimize(sink.sum_);
  }
  std::filesystem::remove(path);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(kEvents9M * state.iterations()), benchmark::Counter::kIsRate);
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
BENCHMARK(BM_WriteTrace_9M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_LoadTraceIntoStore_9M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_DecodeTraceFile_9M)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_EncodeHeader_Ddp_Mlp1000x1024_64Ranks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeHeader_Ddp_Mlp1000x1024_64Ranks)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
