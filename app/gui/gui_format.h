// Short human formats for the GUI: durations with a unit chosen by size.
#pragma once
#include <cstdio>
#include <string>

#include "core/units.h"

namespace shardscope::gui {

// "850 ns", "12.4 µs", "3.21 ms", "1.500 s".
inline std::string format_duration(TimeNs ns) {
  char text[32];
  const double v = static_cast<double>(ns);
  if (ns < 0) return "-" + format_duration(-ns);
  if (ns < 1000) std::snprintf(text, sizeof text, "%lld ns", static_cast<long long>(ns));
  else if (ns < 1000000) std::snprintf(text, sizeof text, "%.1f µs", v / 1e3);
  else if (ns < 1000000000) std::snprintf(text, sizeof text, "%.2f ms", v / 1e6);
  else std::snprintf(text, sizeof text, "%.3f s", v / 1e9);
  return text;
}

}  // namespace shardscope::gui
