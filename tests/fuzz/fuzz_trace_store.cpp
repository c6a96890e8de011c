// libFuzzer target: a .sstrace file's bytes read, replayed into a TraceStore, then looked at the way the window does
// (app/gui/logic/caption.h at a few instants for every rank, the playhead over the run's boundaries and phases, a second
// run aligned by phase, the comparison table), its step times taken as `trace info` takes a plan-less run's, and
// exported (Chrome trace, memory CSV). Nothing may crash, allocate without bound, or trip ASan / UBSan.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "fuzz_trace_input.h"
#include "gui/logic/caption.h"
#include "gui/logic/playback.h"
#include "gui/logic/run_alignment.h"
#include "run/planless_step_timing.h"
#include "trace/export/chrome_trace_export.h"
#include "trace/export/memory_csv_export.h"
#include "trace/file/trace_file_reader.h"
#include "trace/store/trace_store.h"

namespace {

using namespace shardscope;

void look_at(const TraceData& d) {
  std::vector<TimeNs> times = {d.t_min, d.t_max, d.t_min + (d.t_max - d.t_min) / 2, d.t_min - 1, d.t_max + 1};
  for (std::size_t i = 0; i < d.boundaries.size() && i < 8; ++i) times.push_back(d.boundaries[i * d.boundaries.size() / 8]);
  const std::optional<TimeNs> stopped = gui::run_stopped_at(d);
  // Every rank up to 64 (a header may name 65,536), and the last.
  std::vector<int> ranks;
  for (int r = 0; r < static_cast<int>(d.ranks.size()) && r < 64; ++r) ranks.push_back(r);
  if (!d.ranks.empty()) ranks.push_back(static_cast<int>(d.ranks.size()) - 1);
  ranks.push_back(-1);
  ranks.push_back(static_cast<int>(d.ranks.size()));
  for (const TimeNs t : times) {
    (void)gui::most_telling_rank(d, t);
    for (const int r : ranks) {
      (void)gui::describe_rank_at(d, r, t);
      (void)gui::live_tensors_at(d, r, t, 10);
      if (const RankTimeline* timeline = d.rank(r)) {
        (void)gui::phase_under_way_at(*timeline, t);
        (void)timeline->memory_at(t);
        for (const auto& stream : timeline->streams) stream.for_each_overlapping(t, t + 1000, [](const TraceSpan&) {});
      }
    }
  }
  for (const int r : ranks) {
    (void)gui::first_out_of_memory(d, r);
    if (const RankTimeline* timeline = d.rank(r)) {
      Bytes capacity = 0;
      for (const auto& device : d.header.devices)
        if (device.rank == r) capacity = device.capacity;
      (void)gui::samples_before_stop(*timeline, stopped, capacity);
      (void)gui::peak_before_stop(*timeline, stopped, capacity);
    }
  }
  // The playhead over the run, as the transport bar drives it.
  if (!d.ranks.empty()) {
    std::vector<gui::PhaseMark> phases;
    for (const auto& p : d.ranks[0].phases) phases.push_back({p.name, p.step, p.t_ns});
    std::stable_sort(phases.begin(), phases.end(), [](const gui::PhaseMark& a, const gui::PhaseMark& b) { return a.t_ns < b.t_ns; });
    gui::Playback playback;
    playback.set_timeline({d.boundaries.begin(), d.boundaries.end()}, phases, d.t_max);
    for (int i = 0; i < 4; ++i) playback.step_forward();
    playback.next_phase();
    playback.previous_phase();
    playback.step_back();
    playback.seek(d.t_max / 2);
    playback.toggle_play();
    playback.advance(0.25);
    (void)gui::phase_under_way(playback.upcoming_phase(), playback.current_phase());
    (void)playback.find_phase("step 1 forward");
    // A second run aligned by phase: the last rank's markers onto rank 0's.
    const gui::PhaseAlignment alignment(d.ranks[0].phases, d.ranks.back().phases);
    for (const TimeNs t : times) (void)alignment.first_time_of(t);
  }
  (void)gui::compare_ranks(d, d);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = fuzz::trace_with_fixed_checksums(data, size);
  try {
    const TraceReadResult trace = read_trace_bytes(bytes, "fuzz.sstrace");
    TraceStore store;
    replay_trace(trace, store);
    store.read([](const TraceData& d) {
      look_at(d);
      if (!d.header.plan) planless_step_timings(d);  // trace info's and compare's step times of a recorded run
    });
    std::ostringstream chrome, csv;
    write_chrome_trace(store, chrome);
    write_memory_csv(store, csv);
  } catch (const TraceFileError&) {
  }
  return 0;
}
