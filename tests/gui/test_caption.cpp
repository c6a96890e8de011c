// The "what is happening now" caption from a hand-made trace: compute and communication in flight, one only,
// neither; and which rank the caption picks.
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "gui/logic/caption.h"
#include "trace/events/run_events.h"
#include "engine/trace_test_helpers.h"
#include "plan/program_builder.h"

namespace shardscope::gui {
namespace {

// Rank 0: "fc7 backward" on compute [0, 100) and "all-reduce bucket 3" (32 MiB) on communication [10, 60).
// Rank 1: only "fc7 backward" [0, 100).
std::unique_ptr<TraceStore> two_ranks() {
  auto plan = std::make_shared<Plan>();
  plan->groups = {{0, 1}};
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r);
    b.compute(ComputeKind::Backward, "fc7 backward", 1e9, 0, 7);
    b.collective(CollectiveKind::AllReduce, 0, 32 * kMiB, "all-reduce bucket 3");
    plan->programs.push_back(b.finish());
  }
  auto store = std::make_unique<TraceStore>();
  TraceHeader header;
  header.plan = plan;
  store->begin(header);
  auto op = [&](TraceEventKind kind, int rank, TimeNs t, OpIndex index, Stream stream) {
    store->emit(shardscope::testing::ev(kind, rank, t, index, 0, stream));
  };
  op(TraceEventKind::OpBegin, 0, 0, 0, Stream::Compute);
  op(TraceEventKind::OpBegin, 1, 0, 0, Stream::Compute);
  op(TraceEventKind::OpBegin, 0, 10, 1, Stream::Communication);
  op(TraceEventKind::OpEnd, 0, 60, 1, Stream::Communication);
  op(TraceEventKind::OpEnd, 0, 100, 0, Stream::Compute);
  op(TraceEventKind::OpEnd, 1, 100, 0, Stream::Compute);
  store->end();
  return store;
}

TEST(Caption, SaysWhatEachStreamDoes) {
  const auto store = two_ranks();
  store->read([](const TraceData& data) {
    EXPECT_EQ(describe_rank_at(data, 0, 30), "rank 0: all-reduce bucket 3 (32.00 MiB) while computing fc7 backward");
    EXPECT_EQ(describe_rank_at(data, 0, 5), "rank 0: computing fc7 backward");
    EXPECT_EQ(describe_rank_at(data, 0, 60), "rank 0: computing fc7 backward");  // the all-reduce ended at 60
    EXPECT_EQ(describe_rank_at(data, 1, 100), "rank 1: idle");
  });
}

TEST(Caption, PicksTheRankThatOverlapsCommunicationWithCompute) {
  const auto store = two_ranks();
  store->read([](const TraceData& data) {
    EXPECT_EQ(most_telling_rank(data, 30), 0);
    EXPECT_EQ(most_telling_rank(data, 80), 0);  // both compute only: the lowest
    EXPECT_EQ(most_telling_rank(data, 200), 0);
  });
}

// An op whose label already holds its size is not given it again: "bucket 0 (3.82 MiB) (3.82 MiB)".
TEST(Caption, ASizeInTheLabelIsNotRepeated) {
  auto plan = std::make_shared<Plan>();
  plan->groups = {{0}};
  ProgramBuilder b(0);
  b.collective(CollectiveKind::Broadcast, 0, 4004352, "broadcast module states, bucket 0 (3.82 MiB)", 0);
  plan->programs.push_back(b.finish());
  TraceStore store;
  TraceHeader header;
  header.plan = plan;
  store.begin(header);
  store.emit(shardscope::testing::ev(TraceEventKind::OpBegin, 0, 0, 0, 0, Stream::Communication));
  store.emit(shardscope::testing::ev(TraceEventKind::OpEnd, 0, 10, 0, 0, Stream::Communication));
  store.end();
  store.read([](const TraceData& data) {
    EXPECT_EQ(describe_rank_at(data, 0, 5), "rank 0: broadcast module states, bucket 0 (3.82 MiB), compute idle");
  });
}

// With the playhead on a marker (--at forward), the caption names the phase just reached; a moment later, the next.
TEST(Caption, OnAMarkerNamesThePhaseReached) {
  RankTimeline rank;
  rank.phases = {{"model_created", 0, 10}, {"wrapped", 0, 20}, {"forward", 1, 100}, {"before_step", 1, 300}};
  EXPECT_EQ(phase_under_way_at(rank, 100), "step 1, after forward");
  EXPECT_EQ(phase_under_way_at(rank, 101), "step 1, backward");
  EXPECT_EQ(phase_under_way_at(rank, 99), "step 1, forward");
  EXPECT_EQ(phase_under_way_at(rank, 20), "wrapped");
}

// The markers of two steps as a run emits them (a marker sits where its phase ends): what the caption says between.
TEST(Caption, NamesThePhaseUnderWayNotTheLastOneEnded) {
  Playback p;
  p.set_timeline({}, {{"model_created", 0, 10}, {"wrapped", 0, 20}, {"forward", 1, 100}, {"before_step", 1, 300},
                      {"after_step", 1, 350}, {"forward", 2, 450}, {"before_step", 2, 650}, {"after_step", 2, 700}},
                 700);
  const auto at = [&](TimeNs t) {
    p.seek(t);
    return phase_under_way(p.upcoming_phase(), p.current_phase());
  };
  EXPECT_EQ(at(5), "creating the model");
  EXPECT_EQ(at(15), "wrapping the model");
  EXPECT_EQ(at(50), "step 1, forward");
  EXPECT_EQ(at(200), "step 1, backward");       // the whole backward, not "after forward"
  EXPECT_EQ(at(320), "step 1, optimizer step");
  EXPECT_EQ(at(400), "step 2, forward");        // not "step 1, after step"
  EXPECT_EQ(at(500), "step 2, backward");
  EXPECT_EQ(at(700), "step 2, after step");     // the end of the run
}

// What a rank holds at an instant, replayed from its Alloc / Free events: a 100 B and a 300 B tensor, the first
// freed at 30, a 200 B one from 40; without a plan in the header the tensors are named by id.
TEST(Caption, NamesTheLargestTensorsHeldAtAnInstant) {
  using K = TraceEventKind;
  TraceStore store;
  store.begin(TraceHeader{});
  store.emit(shardscope::testing::mem(K::Alloc, 0, 10, 0, 0, Category::Activations, 100, 100, 100));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 20, 1, 1, Category::Parameters, 300, 400, 400));
  store.emit(shardscope::testing::mem(K::Free, 0, 30, 2, 0, Category::Activations, 100, 300, 400));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 40, 3, 2, Category::Gradients, 200, 500, 500));
  store.read([](const TraceData& d) {
    auto names = [&](TimeNs t, std::size_t n) {
      std::string text;
      for (const auto& live : live_tensors_at(d, 0, t, n)) text += live.name + "=" + std::to_string(live.bytes) + " ";
      return text;
    };
    EXPECT_EQ(names(25, 5), "tensor 1=300 tensor 0=100 ");
    EXPECT_EQ(names(30, 5), "tensor 1=300 ");
    EXPECT_EQ(names(45, 5), "tensor 1=300 tensor 2=200 ");
    EXPECT_EQ(names(45, 1), "tensor 1=300 ");
    EXPECT_EQ(names(5, 5), "");
    EXPECT_EQ(live_tensors_at(d, 0, 45, 5)[1].category, Category::Gradients);
  });
}

// Equal sizes keep the order of their ids (a 200 B tensor 7, then the 100 B tensors 3, 5 and 9 allocated out of id
// order), and only the `count` largest come back.
TEST(Caption, TensorsOfEqualSizeAreListedByIdAndCutAtCount) {
  using K = TraceEventKind;
  TraceStore store;
  store.begin(TraceHeader{});
  store.emit(shardscope::testing::mem(K::Alloc, 0, 10, 0, 5, Category::Activations, 100, 100, 100));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 20, 1, 9, Category::Activations, 100, 200, 200));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 30, 2, 3, Category::Activations, 100, 300, 300));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 40, 3, 7, Category::Gradients, 200, 500, 500));
  store.read([](const TraceData& d) {
    auto names = [&](std::size_t n) {
      std::string text;
      for (const auto& live : live_tensors_at(d, 0, 50, n)) text += live.name + "=" + std::to_string(live.bytes) + " ";
      return text;
    };
    EXPECT_EQ(names(10), "tensor 7=200 tensor 3=100 tensor 5=100 tensor 9=100 ");
    EXPECT_EQ(names(3), "tensor 7=200 tensor 3=100 tensor 5=100 ");
    EXPECT_EQ(names(0), "");
  });
}

// PyTorch raises at the first allocation that does not fit and torchrun stops the other workers: what the trace holds
// from there on (the plan went on as if memory were unlimited) never happened. Capacity 1,000 B: rank 0 holds 400 B
// at t = 20, then asks for 700 B there (1,100 B: the failure), then 50 B more; rank 1 allocates only at t = 30.
TEST(Caption, NothingHappensAfterTheFirstOutOfMemory) {
  using K = TraceEventKind;
  TraceStore store;
  store.begin(TraceHeader{});
  store.emit(shardscope::testing::mem(K::Alloc, 0, 10, 0, 0, Category::Activations, 100, 100, 100));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 20, 1, 1, Category::Parameters, 300, 400, 400));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 20, 2, 2, Category::OptimizerState, 700, 1100, 1100));
  store.emit(shardscope::testing::mem(K::Alloc, 0, 20, 3, 3, Category::OptimizerState, 50, 1150, 1150));
  store.emit(shardscope::testing::mem(K::Alloc, 1, 30, 0, 0, Category::Activations, 100, 100, 100));
  store.emit(make_error_event(0, 20, "out of memory at \"alloc exp_avg\": 700 B requested, 400 B allocated"));
  store.end();
  store.read([](const TraceData& d) {
    ASSERT_TRUE(run_stopped_at(d).has_value());
    EXPECT_EQ(*run_stopped_at(d), 20);
    EXPECT_EQ(samples_before_stop(*d.rank(0), run_stopped_at(d), 1000), 2u);
    EXPECT_EQ(peak_before_stop(*d.rank(0), run_stopped_at(d), 1000).allocated, 400);
    EXPECT_EQ(samples_before_stop(*d.rank(1), run_stopped_at(d), 1000), 0u);
    EXPECT_EQ(peak_before_stop(*d.rank(0), std::nullopt, 1000).allocated, 1150);  // a run that did not stop: all of it
  });
}


// Untrusted traces: a TraceData whose span names an op past the plan (TraceStore ignores such events; filled by hand
// here) is described as idle rather than read out of bounds; tensor ids up to 2^31 without a plan are named without
// allocating a slot per id; sums past 2^63 saturate.
TEST(Caption, NamesNothingThePlanLacks) {
  TraceData data;
  auto plan = std::make_shared<Plan>();
  ProgramBuilder b(0);
  b.compute(ComputeKind::Backward, "fc7 backward", 1e9, 0, 7);
  plan->programs.push_back(b.finish());
  data.header.plan = plan;
  data.ranks.resize(2);
  data.ranks[1].rank = 1;
  auto& spans = data.ranks[0].streams[static_cast<std::size_t>(Stream::Compute)];
  spans.spans.push_back({2'000'000'000, 1, 0, 100});
  spans.reach.push_back(100);
  EXPECT_EQ(describe_rank_at(data, 0, 50), "rank 0: idle");
  EXPECT_EQ(describe_rank_at(data, 1, 50), "rank 1: idle");  // no program for rank 1
  EXPECT_EQ(describe_rank_at(data, -3, 50), "rank -3: idle");
  EXPECT_EQ(most_telling_rank(data, 50), 0);
  // Tensor ids past the plan's one tensor-less program are not named (and not allocated for).
  data.ranks[0].memory.append(10, 0, 0, Category::Activations, 100, 2'000'000'000);
  EXPECT_TRUE(live_tensors_at(data, 0, 50, 5).empty());
}

TEST(Caption, TensorIdsWithoutAPlanAreNamedSparsely) {
  using K = TraceEventKind;
  TraceStore store;
  store.begin(TraceHeader{});
  store.emit(shardscope::testing::mem(K::Alloc, 0, 10, -1, 2'000'000'000, Category::Activations, 100, 100, 100));
  store.read([](const TraceData& d) {
    const auto live = live_tensors_at(d, 0, 10, 5);
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].name, "tensor 2000000000");
    EXPECT_EQ(live[0].bytes, 100);
  });
  // Filled by hand (TraceStore keeps each category within ±2^56): one tensor's sum past 2^63 saturates.
  TraceData data;
  data.ranks.resize(1);
  for (int i = 0; i < 3; ++i) data.ranks[0].memory.append(i, 0, 0, Category::Parameters, std::numeric_limits<Bytes>::max() / 2, 7);
  const auto live = live_tensors_at(data, 0, 10, 5);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].bytes, std::numeric_limits<Bytes>::max());
}

}  // namespace
}  // namespace shardscope::gui
