// Log-log interpolation over measured curves and grids (profile_interpolation.h).
#include "sim/profile_interpolation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace shardscope {

std::optional<double> curve_seconds(std::vector<CurvePoint> points, double size) {
  if (points.empty() || !(size > 0)) return std::nullopt;
  // Equal sizes averaged (in log, as the interpolation), so a repeated size does not make a zero-width segment.
  std::map<double, std::pair<double, int>> by_size;
  for (const CurvePoint& p : points) {
    auto& [log_sum, count] = by_size[p.size];
    log_sum += std::log(p.seconds);
    ++count;
  }
  std::vector<CurvePoint> curve;
  for (const auto& [s, sum] : by_size) curve.push_back({s, std::exp(sum.first / sum.second)});
  if (size <= curve.front().size) return curve.front().seconds;
  if (size >= curve.back().size) return curve.back().seconds * size / curve.back().size;
  const auto upper = std::upper_bound(curve.begin(), curve.end(), size,
                                      [](double s, const CurvePoint& p) { return s < p.size; });
  const CurvePoint& a = *(upper - 1);
  const CurvePoint& b = *upper;
  const double w = (std::log(size) - std::log(a.size)) / (std::log(b.size) - std::log(a.size));
  return std::exp(std::log(a.seconds) + w * (std::log(b.seconds) - std::log(a.seconds)));
}

namespace {

// The bracketing indices of `x` on a sorted axis and the weight of the upper one (0 outside: held at the edge).
struct Bracket {
  std::size_t lo = 0, hi = 0;
  double w = 0;
};

Bracket bracket(const std::vector<double>& axis, double x) {
  if (x <= axis.front()) return {0, 0, 0};
  if (x >= axis.back()) return {axis.size() - 1, axis.size() - 1, 0};
  const std::size_t hi = static_cast<std::size_t>(std::upper_bound(axis.begin(), axis.end(), x) - axis.begin());
  const std::size_t lo = hi - 1;
  return {lo, hi, (std::log(x) - std::log(axis[lo])) / (std::log(axis[hi]) - std::log(axis[lo]))};
}

double log_distance(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  double d = 0;
  for (int i = 0; i < 3; ++i) d += std::pow(std::log(a[static_cast<std::size_t>(i)]) - std::log(b[static_cast<std::size_t>(i)]), 2);
  return d;
}

}  // namespace

std::optional<double> grid_seconds(const std::vector<GridPoint>& points, std::array<double, 3> at, double work) {
  if (points.empty() || !(work > 0)) return std::nullopt;
  std::array<std::vector<double>, 3> axes;
  std::map<std::array<double, 3>, std::pair<double, int>> log_throughput;  // per coordinate, averaged in log
  double least_seconds = std::numeric_limits<double>::infinity();
  for (const GridPoint& p : points) {
    for (std::size_t d = 0; d < 3; ++d) axes[d].push_back(p.at[d]);
    auto& [sum, count] = log_throughput[p.at];
    sum += std::log(p.work / p.seconds);
    ++count;
    least_seconds = std::min(least_seconds, p.seconds);
  }
  for (auto& axis : axes) {
    std::sort(axis.begin(), axis.end());
    axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
  }
  // The log throughput at a grid corner: measured, else the best at coordinates no larger, else the nearest's.
  const auto corner_value = [&](const std::array<double, 3>& corner) {
    if (const auto it = log_throughput.find(corner); it != log_throughput.end()) return it->second.first / it->second.second;
    double best = -std::numeric_limits<double>::infinity();
    for (const auto& [coords, value] : log_throughput)
      if (coords[0] <= corner[0] && coords[1] <= corner[1] && coords[2] <= corner[2])
        best = std::max(best, value.first / value.second);
    if (std::isfinite(best)) return best;
    double nearest = std::numeric_limits<double>::infinity(), nearest_value = 0;
    for (const auto& [coords, value] : log_throughput) {
      const double d = log_distance(coords, corner);
      if (d < nearest) {
        nearest = d;
        nearest_value = value.first / value.second;
      }
    }
    return nearest_value;
  };
  std::array<Bracket, 3> b;
  for (std::size_t d = 0; d < 3; ++d) b[d] = bracket(axes[d], at[d]);
  double log_value = 0;
  for (int corner = 0; corner < 8; ++corner) {
    double weight = 1;
    std::array<double, 3> coords{};
    for (std::size_t d = 0; d < 3; ++d) {
      const bool upper = (corner >> d) & 1;
      weight *= upper ? b[d].w : 1 - b[d].w;
      coords[d] = axes[d][upper ? b[d].hi : b[d].lo];
    }
    if (weight == 0) continue;
    log_value += weight * corner_value(coords);
  }
  return std::max(work / std::exp(log_value), least_seconds);
}

}  // namespace shardscope
