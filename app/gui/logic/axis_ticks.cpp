// Binary axis ticks and their labels.
#include "gui/logic/axis_ticks.h"

#include <cstdio>

namespace shardscope::gui {

std::vector<Bytes> binary_ticks(Bytes scale) {
  std::vector<Bytes> ticks;
  if (scale < kKiB) return ticks;
  Bytes step = kKiB;
  while (step * 2 * 3 <= scale) step *= 2;
  for (Bytes t = step; t <= scale; t += step) ticks.push_back(t);
  return ticks;
}

std::string tick_label(Bytes bytes) {
  const auto [unit, name] = bytes >= kGiB ? std::pair{kGiB, "GiB"} : bytes >= kMiB ? std::pair{kMiB, "MiB"} : std::pair{kKiB, "KiB"};
  char text[32];
  std::snprintf(text, sizeof text, "%g %s", static_cast<double>(bytes) / static_cast<double>(unit), name);
  return text;
}

}  // namespace shardscope::gui
