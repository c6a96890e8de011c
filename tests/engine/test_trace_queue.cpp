// TraceQueue: producers on several threads while a consumer drains, producers never held up by a reader of the
// store, and the store's derived series (boundaries, series signatures) equal to a computation from scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <random>
#include <thread>

#include "trace/events/trace_queue.h"
#include "trace_test_helpers.h"

namespace shardscope {
namespace {

using testing::ev;
using K = TraceEventKind;

TEST(TraceQueue, EveryEventArrivesOnceInEachProducersOrder) {
  constexpr int kProducers = 4, kEvents = 5000;
  TraceQueue queue;
  TraceStore store;
  queue.begin(TraceHeader{});  // no plan: any rank, op and tensor (the store checks them against a plan)
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.emplace_back([&queue, p] {
      for (int i = 0; i < kEvents; ++i) {
        TraceEvent e = ev(K::Phase, p, i);  // rank p, time i: the producer's own order
        e.text = "mark";
        queue.emit(e);
      }
    });
  std::size_t drained = 0;
  while (drained < static_cast<std::size_t>(kProducers * kEvents)) drained += queue.drain_into(store);
  for (auto& t : producers) t.join();
  queue.end();
  drained += queue.drain_into(store);
  EXPECT_EQ(drained, static_cast<std::size_t>(kProducers * kEvents));
  EXPECT_EQ(queue.produced(), static_cast<std::uint64_t>(kProducers * kEvents));
  store.read([&](const TraceData& d) {
    EXPECT_TRUE(d.begun);
    EXPECT_TRUE(d.ended);
    EXPECT_EQ(d.event_count, static_cast<std::uint64_t>(kProducers * kEvents));
    for (int p = 0; p < kProducers; ++p) {
      const auto& phases = d.rank(p)->phases;
      ASSERT_EQ(phases.size(), static_cast<std::size_t>(kEvents));
      for (int i = 0; i < kEvents; ++i) ASSERT_EQ(phases[static_cast<std::size_t>(i)].t_ns, i) << "producer " << p;
    }
  });
}

// The window drains a frame's share at a time: 1,000 events and the end, drained 300 at a time, arrive as 300, 300,
// 300, 100, in order, with the end only after the last; a run begun afresh drops the rest of the old batch.
TEST(TraceQueue, BoundedDrainsMoveEveryEventOnceAndTheEndLast) {
  TraceQueue queue;
  TraceStore store;
  queue.begin(TraceHeader{});
  for (int i = 0; i < 1000; ++i) queue.emit(ev(K::OpBegin, 0, i, i));
  queue.end();
  std::vector<std::size_t> slices;
  for (int call = 0; call < 4; ++call) {
    slices.push_back(queue.drain_into(store, 300));
    EXPECT_EQ(store.read([](const TraceData& d) { return d.ended; }), call == 3) << "after drain " << call;
  }
  EXPECT_EQ(slices, (std::vector<std::size_t>{300, 300, 300, 100}));
  EXPECT_EQ(queue.drain_into(store, 300), 0u);
  store.read([](const TraceData& d) {
    const auto& spans = d.rank(0)->stream(Stream::Compute).spans;
    ASSERT_EQ(spans.size(), 1000u);
    for (std::size_t i = 0; i < spans.size(); ++i) ASSERT_EQ(spans[i].begin_ns, static_cast<TimeNs>(i));
  });

  for (int i = 0; i < 10; ++i) queue.emit(ev(K::OpBegin, 0, 2000 + i, i));
  EXPECT_EQ(queue.drain_into(store, 4), 4u);
  queue.begin(TraceHeader{});  // a new run: the 6 events left of the old one are dropped
  queue.emit(ev(K::OpBegin, 1, 5, 0));
  EXPECT_EQ(queue.drain_into(store, 4), 1u);
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.event_count, 1u);
    EXPECT_TRUE(d.rank(0) == nullptr || d.rank(0)->stream(Stream::Compute).spans.empty());
  });
}

// A reader holds the store (as the window does while it draws); producers writing into the queue finish meanwhile.
// Were they writing into the store, they would wait for its lock, and the reader would see them unfinished.
TEST(TraceQueue, ProducersFinishWhileAReaderHoldsTheStore) {
  TraceQueue queue;
  TraceStore store;
  queue.begin(TraceHeader{});  // no plan: any rank, op and tensor (the store checks them against a plan)
  queue.drain_into(store);
  std::mutex m;
  std::condition_variable changed;
  bool reader_inside = false, producers_done = false, done_seen_inside = false;
  std::thread reader([&] {
    store.read([&](const TraceData&) {
      std::unique_lock lock(m);
      reader_inside = true;
      changed.notify_all();
      // Generous: producers take microseconds; this only bounds a failing run.
      done_seen_inside = changed.wait_for(lock, std::chrono::seconds(20), [&] { return producers_done; });
    });
  });
  {
    std::unique_lock lock(m);
    changed.wait(lock, [&] { return reader_inside; });
  }
  std::thread producer([&] {
    for (int i = 0; i < 1000; ++i) queue.emit(ev(K::OpBegin, 0, i, i));
    std::lock_guard lock(m);
    producers_done = true;
    changed.notify_all();
  });
  producer.join();
  reader.join();
  EXPECT_TRUE(done_seen_inside);
  EXPECT_EQ(queue.drain_into(store), 1000u);
}

// Spans with begins and ends arriving out of order across ranks (and late within a rank): the store's sorted,
// unique boundaries equal those collected from its final spans and sorted afterwards.
TEST(TraceQueue, BoundariesKeptAsEventsArriveEqualASortOfTheSpans) {
  std::mt19937 random(7);
  std::vector<TraceEvent> events;
  for (int rank = 0; rank < 3; ++rank)
    for (int op = 0; op < 200; ++op) {
      const TimeNs begin = static_cast<TimeNs>(random() % 10000), length = static_cast<TimeNs>(random() % 50);
      const Stream stream = op % 2 ? Stream::Compute : Stream::Communication;
      events.push_back(ev(K::OpBegin, rank, begin, op, 1, stream));
      events.push_back(ev(K::OpEnd, rank, begin + length, op, 1, stream));
    }
  // Nearly in time order, as live ranks deliver them: sorted by time, then neighbours swapped now and then, an end
  // never before its begin.
  std::stable_sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) { return a.t_ns < b.t_ns; });
  for (std::size_t i = 0; i + 1 < events.size(); i += 7)
    if (!(events[i].rank == events[i + 1].rank && events[i].op == events[i + 1].op)) std::swap(events[i], events[i + 1]);
  TraceStore store;
  store.begin(TraceHeader{});  // no plan: any rank, op and tensor
  for (const auto& e : events) store.emit(e);
  store.read([](const TraceData& d) {
    std::vector<TimeNs> expected;
    for (const auto& rank : d.ranks)
      for (const auto& stream : rank.streams)
        for (const auto& span : stream.spans) {
          expected.push_back(span.begin_ns);
          if (!span.open()) expected.push_back(span.end_ns);
        }
    std::sort(expected.begin(), expected.end());
    expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
    EXPECT_EQ(std::vector<TimeNs>(d.boundaries.begin(), d.boundaries.end()), expected);
  });
}

// Ranks with the same (t, allocated) series have equal signatures; one different sample tells them apart.
TEST(TraceQueue, SeriesSignaturesTellIdenticalRanks) {
  TraceStore store;
  store.begin(TraceHeader{});  // no plan: any rank, op and tensor
  for (int rank = 0; rank < 3; ++rank)
    for (int i = 0; i < 50; ++i) {
      const Bytes allocated = (i + 1) * 512 + (rank == 2 && i == 30 ? 512 : 0);
      store.emit(testing::mem(K::Alloc, rank, i * 10, i, i, Category::Activations, 512, allocated, 2 * kMiB));
    }
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.rank(0)->memory_signature, d.rank(1)->memory_signature);
    EXPECT_NE(d.rank(0)->memory_signature, d.rank(2)->memory_signature);
  });
}

}  // namespace
}  // namespace shardscope
