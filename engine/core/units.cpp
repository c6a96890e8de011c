// Formatting of byte counts in binary units and of durations.
#include "core/units.h"

#include <cstdio>
#include <cstdlib>

namespace shardscope {

std::string format_bytes(Bytes bytes) {
  const Bytes magnitude = std::llabs(bytes);
  char buffer[48];
  if (magnitude >= kGiB) {
    std::snprintf(buffer, sizeof buffer, "%.2f GiB", static_cast<double>(bytes) / kGiB);
  } else if (magnitude >= kMiB) {
    std::snprintf(buffer, sizeof buffer, "%.2f MiB", static_cast<double>(bytes) / kMiB);
  } else if (magnitude >= kKiB) {
    std::snprintf(buffer, sizeof buffer, "%.2f KiB", static_cast<double>(bytes) / kKiB);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
  }
  return buffer;
}

std::string format_duration(TimeNs ns) {
  if (ns < 0) return "-" + format_duration(-ns);
  char buffer[48];
  const double value = static_cast<double>(ns);
  if (ns < 1000) std::snprintf(buffer, sizeof buffer, "%lld ns", static_cast<long long>(ns));
  else if (ns < 1000000) std::snprintf(buffer, sizeof buffer, "%.1f µs", value / 1e3);
  else if (ns < 1000000000) std::snprintf(buffer, sizeof buffer, "%.3f ms", value / 1e6);
  else std::snprintf(buffer, sizeof buffer, "%.3f s", value / 1e9);
  return buffer;
}

}  // namespace shardscope
