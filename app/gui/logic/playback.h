// The playhead every panel follows: play / pause, speed, op-by-op stepping and phase jumps over a run's time axis.
// Pure logic (no ImGui), so it is unit-tested; the transport bar and key bindings drive it.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace shardscope::gui {

struct PhaseMark {
  std::string name;  // "forward", "before_step", ...
  int step = 0;
  TimeNs t_ns = 0;
};

class Playback {
 public:
  // `boundaries`: sorted times where something happens (op begins and ends); `phases` in time order.
  void set_timeline(std::vector<TimeNs> boundaries, std::vector<PhaseMark> phases, TimeNs end_ns);
  // The same with the boundaries kept elsewhere (a store's millions, which a live run's refresh should not copy):
  // next_after(t) gives the first boundary > t, last_before(t) the last one < t, nullopt when there is none.
  struct BoundaryLookup {
    std::function<std::optional<TimeNs>(TimeNs)> next_after, last_before;
  };
  void set_timeline_lookup(BoundaryLookup boundaries, std::vector<PhaseMark> phases, TimeNs end_ns);

  TimeNs now_ns() const { return now_ns_; }
  TimeNs end_ns() const { return end_ns_; }
  bool playing() const { return playing_; }
  // Playing speed as the wall-clock seconds the whole run takes (default 4), so it holds as a live run grows.
  double run_seconds() const { return run_seconds_; }
  void set_run_seconds(double seconds) { run_seconds_ = seconds; }
  // Simulated (or recorded) nanoseconds per wall-clock second.
  double speed() const { return static_cast<double>(end_ns_) / run_seconds_; }

  void toggle_play();
  void pause() { playing_ = false; }
  void seek(TimeNs t_ns);
  void step_forward();   // to the next boundary after now
  void step_back();      // to the previous boundary before now
  void next_phase();
  void previous_phase();
  // Advances by wall-clock seconds while playing; stops at the end.
  void advance(double wall_seconds);

  // The phase whose marker is the last one at or before now (nullptr before the first).
  const PhaseMark* current_phase() const;
  // The first marker after now (nullptr past the last): markers sit where a phase ends, so it names the phase under way.
  const PhaseMark* upcoming_phase() const;
  // Finds a phase by "name" (first occurrence) or "step N name"; nullptr if none.
  const PhaseMark* find_phase(const std::string& text) const;

 private:
  std::vector<TimeNs> boundaries_;
  BoundaryLookup lookup_;  // used instead of boundaries_ when set
  std::vector<PhaseMark> phases_;
  TimeNs end_ns_ = 0;
  TimeNs now_ns_ = 0;
  bool playing_ = false;
  double run_seconds_ = 4;
  double carry_ns_ = 0;  // fractional ns between frames
};

// Parses "12.5ms", "300us", "2s", "1500ns" or a bare number of ns; nullopt-like -1 when not a time.
TimeNs parse_time_text(const std::string& text);

}  // namespace shardscope::gui
