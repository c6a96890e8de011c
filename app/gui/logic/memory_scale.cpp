// The memory charts' y-axis scale (memory_scale.h).
#include "gui/logic/memory_scale.h"

#include <algorithm>

namespace shardscope::gui {

MemoryScale memory_scale(const MemoryScaleInput& input) {
  const Bytes used = std::max(input.allocated, input.reserved);
  MemoryScale scale;
  if (input.to_capacity) {
    const Bytes highest = std::max({used, input.capacity, input.device_use});
    scale.top = std::max<Bytes>(1, highest * 21 / 20);
  } else if (input.capacity > 0 && used > input.capacity / 2) {
    scale.top = std::max(used, input.capacity) * 21 / 20;
  } else {
    scale.top = std::max<Bytes>(1, used * 23 / 20);
  }
  scale.capacity_on_chart = input.capacity > 0 && input.capacity <= scale.top;
  scale.device_use_on_chart = input.device_use > 0 && input.device_use <= scale.top;
  return scale;
}

bool recorded_from_pytorch(const std::string& trace_source) { return trace_source.rfind("pytorch ", 0) == 0; }

std::string above_scale_note(const MemoryScaleInput& input, const MemoryScale& scale) {
  // A prediction (no reserved or device use drawn) names nothing: its capacity is on the device card, and two lines
  // about a menu would crowd a projected lesson's chart.
  if (input.reserved == 0 && input.device_use == 0) return {};
  std::string above;
  if (input.capacity > 0 && !scale.capacity_on_chart) above = "capacity " + format_bytes(input.capacity);
  if (input.device_use > 0 && !scale.device_use_on_chart)
    above += (above.empty() ? "" : " and ") + std::string("device use ") + format_bytes(input.device_use);
  if (above.empty()) return above;
  return above + " above the scale (View > Memory scale up to the capacity)";
}

}  // namespace shardscope::gui
