// Formatting of byte counts in binary units and of durations.
#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace shardscope {

std::string format_bytes(Bytes bytes) {
  // As unsigned: llabs(INT64_MIN) would overflow.
  const std::uint64_t magnitude = bytes < 0 ? 0 - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
  char buffer[48];
  if (magnitude >= static_cast<std::uint64_t>(kGiB)) {
    std::snprintf(buffer, sizeof buffer, "%.2f GiB", static_cast<double>(bytes) / kGiB);
  } else if (magnitude >= static_cast<std::uint64_t>(kMiB)) {
    std::snprintf(buffer, sizeof buffer, "%.2f MiB", static_cast<double>(bytes) / kMiB);
  } else if (magnitude >= static_cast<std::uint64_t>(kKiB)) {
    std::snprintf(buffer, sizeof buffer, "%.2f KiB", static_cast<double>(bytes) / kKiB);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld B", static_cast<long long>(bytes));
  }
  return buffer;
}

TimeNs saturating_duration_ns(double ns) {
  if (std::isnan(ns) || ns >= static_cast<double>(kMaxTimeNs)) return kMaxTimeNs;
  if (!(ns > 0)) return 0;
  return std::min<TimeNs>(static_cast<TimeNs>(std::llround(ns)), kMaxTimeNs);
}

TimeNs saturating_add(TimeNs a, TimeNs b) {
  a = std::clamp<TimeNs>(a, 0, kMaxTimeNs);
  b = std::clamp<TimeNs>(b, 0, kMaxTimeNs);
  return std::min(a + b, kMaxTimeNs);  // at most 2 · 10^18 < INT64_MAX: no overflow
}

std::string format_duration(TimeNs ns) {
  // The magnitude as unsigned: -INT64_MIN does not fit an int64, its unsigned magnitude does (no recursion).
  const bool negative = ns < 0;
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  const char* sign = negative ? "-" : "";
  char buffer[64];
  const double value = static_cast<double>(magnitude);
  if (magnitude < 1000) std::snprintf(buffer, sizeof buffer, "%s%llu ns", sign, static_cast<unsigned long long>(magnitude));
  else if (magnitude < 1000000) std::snprintf(buffer, sizeof buffer, "%s%.1f µs", sign, value / 1e3);
  else if (magnitude < 1000000000) std::snprintf(buffer, sizeof buffer, "%s%.3f ms", sign, value / 1e6);
  else std::snprintf(buffer, sizeof buffer, "%s%.3f s", sign, value / 1e9);
  return buffer;
}

}  // namespace shardscope
