// The visible time range shared by the memory charts and the timeline, so both zoom and pan together.
// Pure logic (no ImGui); the panels map it onto their pixel widths.
#pragma once
#include <algorithm>

#include "core/units.h"

namespace shardscope::gui {

class TimeView {
 public:
  // The run's full range; resets the view when the run changes.
  void set_run_range(TimeNs begin_ns, TimeNs end_ns) {
    run_begin_ = begin_ns;
    run_end_ = std::max(end_ns, begin_ns + 1);
    t0_ = run_begin_;
    t1_ = run_end_;
  }
  TimeNs t0() const { return t0_; }
  TimeNs t1() const { return t1_; }
  double span_ns() const { return static_cast<double>(t1_ - t0_); }

  double x_of(TimeNs t, float x0, float width) const { return x0 + (static_cast<double>(t - t0_) / span_ns()) * width; }
  TimeNs t_of(double x, float x0, float width) const { return t0_ + static_cast<TimeNs>((x - x0) / width * span_ns()); }

  // Zooms by `factor` (<1 in, >1 out) keeping time `anchor` under the same pixel.
  void zoom(double factor, TimeNs anchor) {
    const double left = static_cast<double>(anchor - t0_) * factor;
    const double right = static_cast<double>(t1_ - anchor) * factor;
    set(anchor - static_cast<TimeNs>(left), anchor + static_cast<TimeNs>(right));
  }
  void pan(double delta_ns) { set(t0_ + static_cast<TimeNs>(delta_ns), t1_ + static_cast<TimeNs>(delta_ns)); }
  void reset() { set(run_begin_, run_end_); }
  void show(TimeNs begin_ns, TimeNs end_ns) { set(begin_ns, end_ns); }  // a range to look at (a lesson step's span)
  // Keeps `t` visible, scrolling by whole views (follow the playhead).
  void follow(TimeNs t) {
    if (t < t0_ || t > t1_) pan(static_cast<double>(t - t0_) - span_ns() * 0.1);
  }

 private:
  void set(TimeNs a, TimeNs b) {
    const TimeNs width = std::clamp<TimeNs>(b - a, 100, (run_end_ - run_begin_) * 4 + 100);  // 100 ns: the deepest zoom
    const TimeNs margin = (run_end_ - run_begin_) / 2;
    a = std::clamp<TimeNs>(a, run_begin_ - margin, run_end_ + margin - width);
    t0_ = a;
    t1_ = a + width;
  }

  TimeNs run_begin_ = 0, run_end_ = 1;
  TimeNs t0_ = 0, t1_ = 1;
};

}  // namespace shardscope::gui
