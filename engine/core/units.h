// Units used across ShardScope: byte counts and durations, and their formatting. No dependencies beyond the standard library.
#pragma once
#include <cstdint>
#include <string>

namespace shardscope {

using Bytes = std::int64_t;   // a count of bytes; signed so that differences are safe
using TimeNs = std::int64_t;  // simulated or measured nanoseconds

constexpr Bytes kKiB = 1024;
constexpr Bytes kMiB = 1024 * kKiB;
constexpr Bytes kGiB = 1024 * kMiB;

// "320.16 MiB", "1.50 GiB", "4.00 KiB", "512 B": binary units, two decimals.
std::string format_bytes(Bytes bytes);

// The longest simulated time: durations and instants saturate here instead of overflowing (10^18 ns, about 31.7
// years; twice it still fits an int64, so adding two saturated times never overflows before it is clamped).
constexpr TimeNs kMaxTimeNs = 1'000'000'000'000'000'000;

// A duration computed in floating point (cost formulas) as whole ns: rounded to nearest, clamped to
// [0, kMaxTimeNs]; NaN and +inf give kMaxTimeNs (an unbounded cost), negative values and -inf give 0.
TimeNs saturating_duration_ns(double ns);
// a + b for times in [0, kMaxTimeNs], clamped to kMaxTimeNs (arguments outside that range are clamped first).
TimeNs saturating_add(TimeNs a, TimeNs b);

// "812 ns", "345.7 µs", "12.346 ms", "1.235 s": the unit chosen by size. Safe for every int64 (INT64_MIN included).
std::string format_duration(TimeNs ns);

// Integer ceil(a / b) for positive b.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::int64_t round_up(std::int64_t a, std::int64_t multiple) { return ceil_div(a, multiple) * multiple; }

}  // namespace shardscope
