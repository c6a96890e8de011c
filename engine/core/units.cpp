// Formatting of byte counts in binary units.
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

}  // namespace shardscope
