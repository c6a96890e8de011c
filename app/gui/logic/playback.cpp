// Playhead movement over a run's boundaries and phase markers.
#include "gui/logic/playback.h"

#include "core/untrusted_text.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace shardscope::gui {

void Playback::set_timeline(std::vector<TimeNs> boundaries, std::vector<PhaseMark> phases, TimeNs end_ns) {
  boundaries_ = std::move(boundaries);
  lookup_ = {};
  phases_ = std::move(phases);
  end_ns_ = end_ns;
  now_ns_ = std::clamp<TimeNs>(now_ns_, 0, end_ns_);
}

void Playback::set_timeline_lookup(BoundaryLookup boundaries, std::vector<PhaseMark> phases, TimeNs end_ns) {
  set_timeline(std::vector<TimeNs>{}, std::move(phases), end_ns);
  lookup_ = std::move(boundaries);
}

void Playback::toggle_play() {
  if (!playing_ && now_ns_ >= end_ns_) now_ns_ = 0;  // play again from the start
  playing_ = !playing_;
  carry_ns_ = 0;
}

void Playback::seek(TimeNs t_ns) { now_ns_ = std::clamp<TimeNs>(t_ns, 0, end_ns_); }

void Playback::step_forward() {
  playing_ = false;
  if (lookup_.next_after) return seek(lookup_.next_after(now_ns_).value_or(end_ns_));
  auto it = std::upper_bound(boundaries_.begin(), boundaries_.end(), now_ns_);
  seek(it == boundaries_.end() ? end_ns_ : *it);
}

void Playback::step_back() {
  playing_ = false;
  if (lookup_.last_before) return seek(lookup_.last_before(now_ns_).value_or(0));
  auto it = std::lower_bound(boundaries_.begin(), boundaries_.end(), now_ns_);
  seek(it == boundaries_.begin() ? 0 : *std::prev(it));
}

void Playback::next_phase() {
  playing_ = false;
  for (const auto& phase : phases_)
    if (phase.t_ns > now_ns_) return seek(phase.t_ns);
  seek(end_ns_);
}

void Playback::previous_phase() {
  playing_ = false;
  for (auto it = phases_.rbegin(); it != phases_.rend(); ++it)
    if (it->t_ns < now_ns_) return seek(it->t_ns);
  seek(0);
}

void Playback::advance(double wall_seconds) {
  if (!playing_) return;
  carry_ns_ += wall_seconds * speed();
  const double whole = std::floor(carry_ns_);
  carry_ns_ -= whole;
  seek(now_ns_ + static_cast<TimeNs>(whole));
  if (now_ns_ >= end_ns_) playing_ = false;
}

const PhaseMark* Playback::current_phase() const {
  const PhaseMark* current = nullptr;
  for (const auto& phase : phases_) {
    if (phase.t_ns > now_ns_) break;
    current = &phase;
  }
  return current;
}

const PhaseMark* Playback::upcoming_phase() const {
  for (const auto& phase : phases_)
    if (phase.t_ns > now_ns_) return &phase;
  return nullptr;
}

const PhaseMark* Playback::find_phase(const std::string& text) const {
  std::istringstream in(text);
  std::string first;
  in >> first;
  int step = -1;
  std::string name = first;
  if (first == "step") {  // "step K name", K a step number ("step -1 forward" names no phase)
    std::string step_text;
    in >> step_text >> name;
    const std::optional<int> count = parse_count(step_text);
    if (!in || !count) return nullptr;
    step = *count;
  }
  for (const auto& phase : phases_)
    if (phase.name == name && (step < 0 || phase.step == step)) return &phase;
  return nullptr;
}

TimeNs parse_time_text(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || value < 0) return -1;
  const std::string unit(end);
  double scale = 1;
  if (unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "us") scale = 1e3;
  else if (unit != "ns" && !unit.empty()) return -1;
  return static_cast<TimeNs>(std::llround(value * scale));
}

}  // namespace shardscope::gui
