// Interpolation of measured kernel times (cluster/device_profile.h), in log-log space as the issue asks: a curve
// over one size (elementwise bytes, optimizer parameters, collective bytes) and a grid over up to three sizes (a
// GEMM's m, n, k; an attention core's batch·heads and sequence). Pure functions of the points; no profile parsing.
// Rules at the edges, the same for every curve: below the smallest measured size the smallest size's time holds (a
// launch floor: a smaller kernel is not faster than the smallest one timed); above the largest, the largest's
// throughput holds (time grows with the work), as calibrate.py's comment on its GEMM cut-off says.
#pragma once
#include "sim/sim_layer.h"
#include <array>
#include <optional>
#include <vector>

namespace shardscope {

struct CurvePoint {
  double size = 0;
  double seconds = 0;
};

// Seconds at `size` on a curve (any order; points of equal size are averaged). nullopt for an empty curve or a
// size that is not positive.
std::optional<double> curve_seconds(std::vector<CurvePoint> points, double size);

// A measured point of a grid: coordinates (unused ones 1), the work it did (FLOPs, or any measure time grows with)
// and its time.
struct GridPoint {
  std::array<double, 3> at{1, 1, 1};
  double work = 0;
  double seconds = 0;
};

// Seconds for `work` at `at`: the throughput (work / seconds) interpolated multilinearly in log coordinates over
// the grid the points' distinct coordinates span, then work / throughput, at least the least time measured. A grid
// corner without a point (calibrate.py leaves out GEMMs above a FLOP cut-off) takes the best throughput measured at
// coordinates no larger than it (throughput is flat there), else the nearest point's. Outside the grid each
// coordinate is held at its edge. nullopt for no points or work that is not positive.
std::optional<double> grid_seconds(const std::vector<GridPoint>& points, std::array<double, 3> at, double work);

}  // namespace shardscope
