// TraceStore: spans, memory series, peaks, markers and lookups from the hand-made run of trace_test_helpers.h,
// whose figures are worked out by hand below; then producers and a reader on several threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <tuple>

#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"
#include "trace/store/trace_store.h"
#include "trace_test_helpers.h"

namespace shardscope {
namespace {

TraceEvent with_text_error(TimeNs t) { return testing::with_text(testing::ev(TraceEventKind::Error, 0, t), "late"); }

void fill(TraceStore& store) {
  store.begin(testing::small_header());
  for (const auto& e : testing::store_events()) store.emit(e);
  store.end();
}

TEST(TraceStore, SpansPerRankAndStream) {
  TraceStore store;
  fill(store);
  store.read([](const TraceData& d) {
    ASSERT_EQ(d.ranks.size(), 3u);  // three programs in the plan
    const RankTimeline& r0 = *d.rank(0);
    const auto& compute = r0.stream(Stream::Compute).spans;
    ASSERT_EQ(compute.size(), 2u);
    EXPECT_EQ(compute[0].op, 2);
    EXPECT_EQ(compute[0].step, 1);
    EXPECT_EQ(compute[0].begin_ns, 100);
    EXPECT_EQ(compute[0].end_ns, 400);
    EXPECT_EQ(compute[1].op, 2);  // the same op replayed in step 2
    EXPECT_EQ(compute[1].step, 2);
    EXPECT_EQ(compute[1].begin_ns, 500);
    EXPECT_EQ(compute[1].end_ns, 900);
    const auto& comm = r0.stream(Stream::Communication).spans;
    ASSERT_EQ(comm.size(), 2u);
    EXPECT_EQ(comm[0].op, 4);
    EXPECT_EQ(comm[0].begin_ns, 400);
    EXPECT_EQ(comm[0].end_ns, 1234567);
    EXPECT_EQ(comm[1].op, 6);
    EXPECT_TRUE(comm[1].open());
    EXPECT_EQ(r0.open_spans, 1u);
    EXPECT_TRUE(r0.stream(Stream::Copy).spans.empty());
    EXPECT_TRUE(d.rank(1)->stream(Stream::Compute).spans.empty());
    EXPECT_EQ(d.rank(3), nullptr);
    EXPECT_EQ(d.event_count, 15u);
    EXPECT_EQ(d.unmatched_op_ends, 0u);
    EXPECT_TRUE(d.ended);
  });
}

TEST(TraceStore, SpansOverlappingARange) {
  TraceStore store;
  fill(store);
  auto ops = [&](Stream s, TimeNs t0, TimeNs t1) {
    std::vector<std::pair<OpIndex, int>> out;
    for (const auto& span : store.spans_in(0, s, t0, t1)) out.emplace_back(span.op, span.step);
    return out;
  };
  using V = std::vector<std::pair<OpIndex, int>>;
  EXPECT_EQ(ops(Stream::Compute, 0, 99), V{});
  EXPECT_EQ(ops(Stream::Compute, 0, 100), (V{{2, 1}}));        // touching the begin counts
  EXPECT_EQ(ops(Stream::Compute, 401, 499), V{});              // the gap between the two runs of op 2
  EXPECT_EQ(ops(Stream::Compute, 400, 500), (V{{2, 1}, {2, 2}}));
  EXPECT_EQ(ops(Stream::Compute, 901, 2'000'000), V{});
  EXPECT_EQ(ops(Stream::Communication, 1234567, 1300000), (V{{4, 1}, {6, 1}}));
  EXPECT_EQ(ops(Stream::Communication, 1234568, 1299999), V{});
  EXPECT_EQ(ops(Stream::Communication, 9'000'000, 9'000'001), (V{{6, 1}}));  // open: reaches to the end
  EXPECT_TRUE(store.spans_in(7, Stream::Compute, 0, 1'000'000).empty());    // no such rank
}

TEST(TraceStore, MemorySeriesAndPeak) {
  TraceStore store;
  fill(store);
  store.read([](const TraceData& d) {
    const auto& m = d.rank(0)->memory;
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0].t_ns, 0);
    EXPECT_EQ(m[0].allocated, 1000);
    EXPECT_EQ(m[0].reserved, 2048);
    EXPECT_EQ(m[0].by_category[Category::Parameters], 1000);
    EXPECT_EQ(m[0].by_category.total(), 1000);
    EXPECT_EQ(m[1].t_ns, 150);
    EXPECT_EQ(m[1].allocated, 1500);
    EXPECT_EQ(m[1].by_category[Category::Activations], 500);
    EXPECT_EQ(m[1].by_category.total(), 1500);
    EXPECT_EQ(m[2].t_ns, 1000);
    EXPECT_EQ(m[2].allocated, 1000);
    EXPECT_EQ(m[2].by_category[Category::Activations], 0);
    EXPECT_EQ(m[2].by_category[Category::Parameters], 1000);

    const auto& r1 = *d.rank(1);
    ASSERT_EQ(r1.memory.size(), 1u);
    EXPECT_EQ(r1.memory[0].t_ns, 50);
    ASSERT_EQ(r1.device_memory.size(), 1u);
    EXPECT_EQ(r1.device_memory[0].used, 3000);
    EXPECT_EQ(r1.device_memory[0].total, 80 * kGiB);
    EXPECT_TRUE(d.rank(2)->memory.empty());
  });
  const TraceMemoryPeak peak = store.peak(0);
  EXPECT_EQ(peak.allocated, 1500);
  EXPECT_EQ(peak.t_ns, 150);
  EXPECT_EQ(peak.by_category[Category::Parameters], 1000);
  EXPECT_EQ(peak.by_category[Category::Activations], 500);
  EXPECT_EQ(peak.reserved, 2048);
  EXPECT_EQ(peak.reserved_t_ns, 0);
  EXPECT_EQ(store.peak(1).allocated, 1000);
  EXPECT_EQ(store.peak(1).t_ns, 50);
}

// highest_allocated answers from an index of blocks; every answer is checked against a plain left-to-right scan
// that keeps the first highest value, over every range of a series with ties, rises and falls.
TEST(TraceStore, HighestAllocatedInEveryRangeIsTheFirstHighestSample) {
  TraceStore store;
  store.begin(testing::small_header());
  std::uint32_t seed = 12345;
  Bytes allocated = 0;
  for (int i = 0; i < 300; ++i) {
    seed = seed * 1103515245u + 12345u;
    allocated = static_cast<Bytes>((seed >> 16) % 40) * 100;  // 40 levels over 300 samples: many ties
    store.emit(testing::mem(TraceEventKind::Alloc, 0, i, 0, 0, Category::Parameters, 0, allocated, allocated));
  }
  store.read([](const TraceData& d) {
    const auto& m = d.rank(0)->memory;
    ASSERT_EQ(m.size(), 300u);
    // The scan's answer kept as each range grows by one sample (a sample replaces it only when strictly higher).
    for (std::size_t first = 0; first < m.size(); ++first) {
      std::size_t expected = first;
      for (std::size_t last = first + 1; last <= m.size(); ++last) {
        if (m[last - 1].allocated > m[expected].allocated) expected = last - 1;
        ASSERT_EQ(d.rank(0)->highest_allocated(first, last), expected) << "range [" << first << ", " << last << ")";
      }
    }
  });
}

// first_after narrows by the checkpoints' times (every 64th sample) before it searches the samples; every answer is
// checked against a left-to-right scan for the first later sample, over every range of 300 samples whose times
// repeat (a run of 1 to 5 samples at each time, so checkpoints fall inside runs of equal times) and every time.
TEST(TraceStore, FirstSampleAfterATimeInEveryRangeIsTheScansAnswer) {
  TraceMemorySeries series;
  std::uint32_t seed = 777;
  TimeNs t = 0;
  for (int i = 0; i < 300; ++i) {
    seed = seed * 1103515245u + 12345u;
    if ((seed >> 16) % 3 == 0) t += 10;  // equal times in runs
    series.append(t, i, i, Category::Activations, 1, i);
  }
  const TimeNs last_time = series.t_ns_at(series.size() - 1);
  for (TimeNs probe = -10; probe <= last_time + 10; probe += 5) {
    // The scan over the whole series; times never decrease, so within [first, last) the first later sample is the
    // whole series' one, moved into the range.
    std::size_t later = 0;
    while (later < series.size() && series.t_ns_at(later) <= probe) ++later;
    for (std::size_t first = 0; first <= series.size(); ++first)
      for (std::size_t last = first; last <= series.size(); ++last)
        ASSERT_EQ(series.first_after(first, last, probe), std::min(std::max(first, later), last))
            << "range [" << first << ", " << last << "), t = " << probe;
  }
}

// The timeline finds each pipeline message among thousands of folded spans by its begin time: the send of rank 0
// (op 6, begun at 1300000) is the only message of the hand-made run's communication lanes.
TEST(TraceStore, MessagesAreListedByBeginTime) {
  TraceStore store;
  fill(store);
  store.read([](const TraceData& d) {
    const auto& messages = d.rank(0)->stream(Stream::Communication).message_begins;
    EXPECT_EQ(std::vector<TimeNs>(messages.begin(), messages.end()), std::vector<TimeNs>{1300000});
    EXPECT_TRUE(d.rank(0)->stream(Stream::Compute).message_begins.empty());
    EXPECT_TRUE(d.rank(1)->stream(Stream::Communication).message_begins.empty());
  });
}

// Ranks take turns: rank 0's ops [10, 20] and [30, 40] arrive before rank 1's [5, 30] and [35, 50]. The boundaries
// are every begin and end once, in order: 5 10 20 30 35 40 50 (30 is both an end and a begin).
TEST(TraceStore, BoundariesOfRanksArrivingInTurnsAreSortedAndUnique) {
  TraceStore store;
  store.begin(testing::small_header());
  using K = TraceEventKind;
  for (const auto& [rank, begin, end] : {std::tuple{0, 10, 20}, {0, 30, 40}, {1, 5, 30}, {1, 35, 50}}) {
    store.emit(testing::ev(K::OpBegin, rank, begin, 2, 1));
    store.emit(testing::ev(K::OpEnd, rank, end, 2, 1));
  }
  EXPECT_EQ(store.read([](const TraceData& d) { return std::vector<TimeNs>(d.boundaries.begin(), d.boundaries.end()); }), (std::vector<TimeNs>{5, 10, 20, 30, 35, 40, 50}));
  store.emit(testing::ev(K::OpBegin, 1, 45, 2, 1));  // after a read, more arrive out of order
  store.emit(testing::ev(K::OpEnd, 1, 60, 2, 1));
  EXPECT_EQ(store.read([](const TraceData& d) { return std::vector<TimeNs>(d.boundaries.begin(), d.boundaries.end()); }), (std::vector<TimeNs>{5, 10, 20, 30, 35, 40, 45, 50, 60}));
}

TEST(TraceStore, MemoryAtTime) {
  TraceStore store;
  fill(store);
  EXPECT_EQ(store.memory_at(0, -1).allocated, 0);  // before anything
  EXPECT_EQ(store.memory_at(0, -1).t_ns, -1);
  EXPECT_EQ(store.memory_at(0, 0).allocated, 1000);
  EXPECT_EQ(store.memory_at(0, 149).allocated, 1000);
  EXPECT_EQ(store.memory_at(0, 150).allocated, 1500);
  EXPECT_EQ(store.memory_at(0, 150).by_category[Category::Activations], 500);
  EXPECT_EQ(store.memory_at(0, 999).allocated, 1500);
  EXPECT_EQ(store.memory_at(0, 1000).allocated, 1000);
  EXPECT_EQ(store.memory_at(0, 1'000'000'000).t_ns, 1000);
  EXPECT_EQ(store.memory_at(1, 49).allocated, 0);
  EXPECT_EQ(store.memory_at(1, 50).reserved, 1000);
  EXPECT_EQ(store.memory_at(9, 50).allocated, 0);  // no such rank
}

TEST(TraceStore, MarkersErrorsRunEndAndTimeRange) {
  TraceStore store;
  fill(store);
  const auto phases = store.phases(0);
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_EQ(phases[0].name, "model_created");
  EXPECT_EQ(phases[0].step, 0);
  EXPECT_EQ(phases[0].t_ns, 0);
  const auto errors = store.errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rank, 1);
  EXPECT_EQ(errors[0].step, 1);
  EXPECT_EQ(errors[0].t_ns, 70);
  EXPECT_EQ(errors[0].message, "out of memory");
  ASSERT_TRUE(store.run_end());
  EXPECT_EQ(store.run_end()->t_ns, 1500000);
  EXPECT_EQ(store.run_end()->text, "rank 1 failed");
  EXPECT_EQ(store.time_range(), (std::pair<TimeNs, TimeNs>{0, 1500000}));
  EXPECT_EQ(store.rank_count(), 3);
  EXPECT_EQ(store.header().source, "simulator");
}

TEST(TraceStore, BeginStartsAfreshAndUnmatchedEndsAreCounted) {
  TraceStore store;
  fill(store);
  const auto g = store.generation();
  store.begin(TraceHeader{});
  EXPECT_GT(store.generation(), g);
  EXPECT_EQ(store.rank_count(), 0);
  store.emit(testing::ev(TraceEventKind::OpEnd, 2, 10, 5));
  store.emit(testing::ev(TraceEventKind::Phase, -1, 10));
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.ranks.size(), 3u);  // grown to the rank an event named
    EXPECT_EQ(d.unmatched_op_ends, 1u);
    EXPECT_EQ(d.ignored_events, 1u);
    EXPECT_FALSE(d.ended);
  });
}

TEST(TraceStore, LateBeginKeepsSpansOrdered) {
  TraceStore store;
  store.begin(TraceHeader{});
  using K = TraceEventKind;
  store.emit(testing::ev(K::OpBegin, 0, 500, 1));
  store.emit(testing::ev(K::OpBegin, 0, 100, 0));  // reported late
  store.emit(testing::ev(K::OpEnd, 0, 200, 0));
  store.emit(testing::ev(K::OpEnd, 0, 700, 1));
  store.read([](const TraceData& d) {
    const auto& s = d.rank(0)->stream(Stream::Compute);
    ASSERT_EQ(s.spans.size(), 2u);
    EXPECT_EQ(s.spans[0].op, 0);
    EXPECT_EQ(s.spans[0].end_ns, 200);
    EXPECT_EQ(s.spans[1].op, 1);
    EXPECT_EQ(s.spans[1].end_ns, 700);
    EXPECT_EQ(std::vector<TimeNs>(s.reach.begin(), s.reach.end()), (std::vector<TimeNs>{200, 700}));
  });
  EXPECT_EQ(store.spans_in(0, Stream::Compute, 300, 400).size(), 0u);
  EXPECT_EQ(store.spans_in(0, Stream::Compute, 150, 600).size(), 2u);
}

// 131,072 begins that never end, then as many ops that begin and end: ends are matched among the rank's
// kMaxOpenSpansPerRank most recent open spans (not all 131,072: 31 s before the limit), and every span is kept.
TEST(TraceStore, BeginsThatNeverEndAreBoundedByTheOpenSpanLimit) {
  static_assert(kMaxOpenSpansPerRank == 256);
  TraceStore store;
  store.begin(TraceHeader{});  // no plan: any op
  using K = TraceEventKind;
  const int n = 131072;
  for (int i = 0; i < n; ++i) store.emit(testing::ev(K::OpBegin, 0, 0, i));
  for (int i = 0; i < n; ++i) {
    store.emit(testing::ev(K::OpBegin, 0, 1 + 2 * i, n + i, 0, Stream::Communication));
    store.emit(testing::ev(K::OpEnd, 0, 2 + 2 * i, n + i, 0, Stream::Communication));
  }
  store.emit(testing::ev(K::OpEnd, 0, 3 * n, n - 1));  // the newest never-ending one: still matched
  store.emit(testing::ev(K::OpEnd, 0, 3 * n, 0));      // the oldest: no longer among the 256
  store.read([&](const TraceData& d) {
    EXPECT_EQ(d.ignored_events, 0u);
    EXPECT_EQ(d.unmatched_op_ends, 1u);
    const auto& compute = d.rank(0)->stream(Stream::Compute).spans;
    ASSERT_EQ(compute.size(), static_cast<std::size_t>(n));
    EXPECT_TRUE(compute[0].open());
    EXPECT_EQ(compute[n - 1].end_ns, 3 * n);
    EXPECT_EQ(d.rank(0)->open_spans, static_cast<std::size_t>(n - 1));
    const auto& comm = d.rank(0)->stream(Stream::Communication).spans;
    ASSERT_EQ(comm.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(comm[n - 1].begin_ns, 1 + 2 * (n - 1));
    EXPECT_EQ(comm[n - 1].end_ns, 2 + 2 * (n - 1));
  });
}

// Spans arriving in reverse time order: each would go before all the others. Up to kMaxLateBeginSpans spans back a
// late begin is placed in order; beyond, it is ignored (and its end is unmatched), so no begin moves more than 256
// spans (every begin moving every span took more than 100 s for 131,072).
TEST(TraceStore, ABeginLaterThanTheLateLimitIsIgnored) {
  static_assert(kMaxLateBeginSpans == 256);
  TraceStore store;
  store.begin(TraceHeader{});
  using K = TraceEventKind;
  const int n = 131072;
  for (int i = 0; i < n; ++i) {
    const TimeNs t = 10 * static_cast<TimeNs>(n - i);
    store.emit(testing::ev(K::OpBegin, 0, t, i));
    store.emit(testing::ev(K::OpEnd, 0, t + 5, i));
  }
  store.read([&](const TraceData& d) {
    // The first lands on an empty stream; the next 256 go before 1..256 spans; the rest would go before 257.
    const auto& spans = d.rank(0)->stream(Stream::Compute).spans;
    ASSERT_EQ(spans.size(), 257u);
    EXPECT_EQ(d.ignored_events, static_cast<std::uint64_t>(n - 257));
    EXPECT_EQ(d.unmatched_op_ends, static_cast<std::uint64_t>(n - 257));
    for (std::size_t i = 0; i < spans.size(); ++i) {  // ordered by begin: op 256 first, op 0 last
      EXPECT_EQ(spans[i].op, static_cast<OpIndex>(256 - i));
      EXPECT_EQ(spans[i].end_ns, spans[i].begin_ns + 5);
    }
  });
}

// A live store and one replayed from the file written alongside it (a TeeTraceSink) hold the same.
TEST(TraceStore, ReplayedFileGivesTheSameStore) {
  testing::TempFile file("replay");
  TraceStore live;
  {
    TraceFileWriter writer(file.path());
    TeeTraceSink tee({&writer, &live});
    tee.begin(testing::small_header());
    for (const auto& e : testing::store_events()) tee.emit(e);
    tee.end();
  }
  TraceStore replayed;
  replay_trace(read_trace_file(file.path()), replayed);
  live.read([&](const TraceData& a) {
    replayed.read([&](const TraceData& b) {
      ASSERT_EQ(a.ranks.size(), b.ranks.size());
      for (std::size_t r = 0; r < a.ranks.size(); ++r) {
        for (int s = 0; s < kStreamCount; ++s) {
          const auto& x = a.ranks[r].streams[static_cast<std::size_t>(s)].spans;
          const auto& y = b.ranks[r].streams[static_cast<std::size_t>(s)].spans;
          ASSERT_EQ(x.size(), y.size());
          for (std::size_t i = 0; i < x.size(); ++i) {
            EXPECT_EQ(x[i].op, y[i].op);
            EXPECT_EQ(x[i].begin_ns, y[i].begin_ns);
            EXPECT_EQ(x[i].end_ns, y[i].end_ns);
          }
        }
        ASSERT_EQ(a.ranks[r].memory.size(), b.ranks[r].memory.size());
        for (std::size_t i = 0; i < a.ranks[r].memory.size(); ++i)
          EXPECT_EQ(a.ranks[r].memory[i].by_category.bytes, b.ranks[r].memory[i].by_category.bytes);
        EXPECT_EQ(a.ranks[r].peak.allocated, b.ranks[r].peak.allocated);
      }
      EXPECT_EQ(b.header.plan->programs[0].ops[4].label, "all-reduce bucket 0");
      EXPECT_EQ(a.t_max, b.t_max);
      EXPECT_TRUE(b.ended);
    });
  });
}

// Producers on rank threads, a reader polling as the run grows: every span ends up closed and ordered.
TEST(TraceStore, ProducersAndAReaderOnSeveralThreads) {
  TraceStore store;
  store.begin(TraceHeader{});  // no plan: ranks and op indices are whatever the producers say
  constexpr int kRanks = 4, kOps = 20000;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    std::uint64_t last = 0;
    while (!done.load()) {
      if (store.generation() == last) continue;
      last = store.generation();
      store.read([](const TraceData& d) {
        for (const auto& r : d.ranks) {
          const auto& spans = r.stream(Stream::Compute).spans;
          for (std::size_t i = 1; i < spans.size(); ++i) ASSERT_LE(spans[i - 1].begin_ns, spans[i].begin_ns);
        }
      });
      (void)store.spans_in(0, Stream::Compute, 1000, 2000);
    }
  });
  std::vector<std::thread> producers;
  for (int r = 0; r < kRanks; ++r)
    producers.emplace_back([&store, r] {
      for (int i = 0; i < kOps; ++i) {
        store.emit(testing::ev(TraceEventKind::OpBegin, r, 10 * i, i));
        store.emit(testing::ev(TraceEventKind::OpEnd, r, 10 * i + 5, i));
      }
    });
  for (auto& t : producers) t.join();
  done = true;
  reader.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(store.spans_in(r, Stream::Compute, 0, 10 * kOps).size(), static_cast<std::size_t>(kOps));
    const auto mid = store.spans_in(r, Stream::Compute, 1000, 1000);
    ASSERT_EQ(mid.size(), 1u);
    EXPECT_EQ(mid[0].op, 100);
  }
}


// Untrusted traces: an event naming a rank, op or tensor the header lacks, a time past ±2^60 ns or bytes past ±2^56
// is counted as ignored and changes nothing else, so that readers of TraceData may index the plan with what it holds.
TEST(TraceStore, EventsNamingWhatTheHeaderLacksAreIgnored) {
  using testing::ev;
  using testing::mem;
  using K = TraceEventKind;
  TraceStore store;
  store.begin(testing::small_header());  // ranks 0 and 1: 7 ops, 2 tensors; rank 2: 3 ops, 1 tensor
  const std::vector<TraceEvent> refused = {
      ev(K::OpBegin, 0, 10, 7),                  // op past rank 0's program
      ev(K::OpBegin, 2, 10, 3),                  // past rank 2's
      ev(K::OpEnd, 2, 10, 2'000'000'000),
      ev(K::OpBegin, 0, 10, -2),                 // below -1
      mem(K::Alloc, 0, 10, 3, 2, Category::Activations, 100, 100, 100),   // tensor past rank 0's
      mem(K::Alloc, 2, 10, -1, 1, Category::Activations, 100, 100, 100),  // tensor past rank 2's
      mem(K::Free, 1, 10, 5, -7, Category::Activations, 100, 100, 100),
      ev(K::OpBegin, 3, 10, 0),                  // rank past the header's three
      ev(K::Phase, 2'000'000'000, 10, 1),
      ev(K::DeviceMemory, -5, 10),
      ev(K::OpBegin, 0, kMaxTraceTimeNs + 1, 2),  // time out of range
      with_text_error(kMaxTraceTimeNs + 1),
      mem(K::Alloc, 0, 10, 0, 0, Category::Parameters, kMaxTraceBytes + 1, 100, 100),  // bytes out of range
      mem(K::Alloc, 0, 10, 0, 0, Category::Parameters, 1, -kMaxTraceBytes - 1, 100),
      mem(K::Alloc, 0, 10, 0, 0, Category::Parameters, 1, 100, std::numeric_limits<Bytes>::min()),
  };
  for (const auto& e : refused) store.emit(e);
  store.emit(ev(K::OpBegin, 2, 100, 2));                                             // rank 2's last op
  store.emit(mem(K::Alloc, 2, 110, -1, 0, Category::OptimizerState, 80, 80, 80));    // its only tensor
  store.emit(testing::with_text(ev(K::Error, 2'000'000'000, 120), "a rank the plan lacks"));  // run-wide: kept
  store.read([&](const TraceData& d) {
    EXPECT_EQ(d.ignored_events, refused.size());
    EXPECT_EQ(d.ranks.size(), 3u);
    for (const auto& r : d.ranks) {
      EXPECT_TRUE(r.phases.empty());
      EXPECT_TRUE(r.device_memory.empty());
      if (r.rank != 2) {
        EXPECT_TRUE(r.memory.empty()) << r.rank;
        for (const auto& s : r.streams) EXPECT_TRUE(s.spans.empty()) << r.rank;
      }
    }
    ASSERT_EQ(d.ranks[2].stream(Stream::Compute).spans.size(), 1u);
    EXPECT_EQ(d.ranks[2].stream(Stream::Compute).spans[0].op, 2);
    ASSERT_EQ(d.ranks[2].memory.size(), 1u);
    EXPECT_EQ(d.ranks[2].peak.allocated, 80);
    ASSERT_EQ(d.errors.size(), 1u);
    EXPECT_EQ(d.t_min, 10);  // the ignored events in range still widen the time range
    EXPECT_EQ(d.t_max, 120);
  });
}

// Without a plan or devices in the header, events open ranks as they name them, up to kMaxTraceRanks (a rank of
// 2·10^9 would otherwise make the store allocate two billion timelines).
TEST(TraceStore, WithoutHeaderRanksEventsOpenRanksUpToTheWorldMaximum) {
  using K = TraceEventKind;
  TraceStore store;
  store.begin(TraceHeader{});
  store.emit(testing::ev(K::OpBegin, 5, 10, 123456));  // no plan: any op index
  store.emit(testing::ev(K::OpBegin, kMaxTraceRanks, 10, 0));
  store.emit(testing::ev(K::OpBegin, 2'000'000'000, 10, 0));
  store.emit(testing::mem(K::Alloc, 5, 20, -1, 2'000'000'000, Category::Activations, 10, 10, 10));  // any tensor id
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.ranks.size(), 6u);
    EXPECT_EQ(d.ignored_events, 2u);
    EXPECT_EQ(d.ranks[5].stream(Stream::Compute).spans.size(), 1u);
    EXPECT_EQ(d.ranks[5].allocations().size(), 1u);
  });
}

// A category's running total may not pass ±2^56 (its sum with the other six, as the memory chart stacks them, could
// otherwise overflow): the event that would take it there is ignored.
TEST(TraceStore, CategoryTotalsStayWithinRange) {
  using K = TraceEventKind;
  TraceStore store;
  store.begin(TraceHeader{});
  store.emit(testing::mem(K::Alloc, 0, 10, -1, 0, Category::Activations, kMaxTraceBytes, kMaxTraceBytes, kMaxTraceBytes));
  store.emit(testing::mem(K::Alloc, 0, 20, -1, 1, Category::Activations, 1, kMaxTraceBytes, kMaxTraceBytes));
  store.emit(testing::mem(K::Free, 0, 30, -1, 2, Category::Gradients, kMaxTraceBytes, 0, kMaxTraceBytes));
  store.emit(testing::mem(K::Free, 0, 40, -1, 3, Category::Gradients, 1, 0, kMaxTraceBytes));
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.ignored_events, 2u);
    ASSERT_EQ(d.ranks[0].memory.size(), 2u);
    EXPECT_EQ(d.ranks[0].memory.back().by_category[Category::Activations], kMaxTraceBytes);
    EXPECT_EQ(d.ranks[0].memory.back().by_category[Category::Gradients], -kMaxTraceBytes);
  });
}

// The same through a file: a trace whose events name an op past the plan and a rank of 2·10^9 reads (the reader
// keeps them) and replays into a store that ignores them.
TEST(TraceStore, ReplayedFileWithEventsThePlanLacks) {
  using K = TraceEventKind;
  testing::TempFile file("lacking");
  {
    TraceFileWriter writer(file.path());
    writer.begin(testing::small_header());
    writer.emit(testing::ev(K::OpBegin, 0, 10, 2'000'000'000, 1));
    writer.emit(testing::ev(K::OpBegin, 2'000'000'000, 20, 0, 1));
    writer.emit(testing::ev(K::OpBegin, 0, 30, 2, 1));
    writer.end();
  }
  TraceStore store;
  replay_trace(read_trace_file(file.path()), store);
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.ignored_events, 2u);
    EXPECT_EQ(d.ranks.size(), 3u);
    ASSERT_EQ(d.ranks[0].stream(Stream::Compute).spans.size(), 1u);
    EXPECT_EQ(d.ranks[0].stream(Stream::Compute).spans[0].op, 2);
  });
}

}  // namespace
}  // namespace shardscope
