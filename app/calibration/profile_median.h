// The point-by-point median of several calibration passes (calibration.cpp measures every point once per pass, the
// passes one after another), so that each point's figure is drawn from moments spread over the whole calibration.
// Why: a shared or virtual machine's speed drifts over seconds (on the 2-vCPU CI machine the same GEMM ran at 13
// to 26 GFLOP/s in phases of 2 to 5 s, with no steal time counted); a point measured in one burst takes the speed
// of that moment, and neighbouring grid points then disagree by up to 2x, which no curve through them can follow.
#pragma once
#include <vector>

#include "cluster/device_profile.h"

namespace shardscope::calibration {

// Every pass must hold the same curves with the same points in the same order (the same grid measured again):
// throws std::logic_error naming the curve otherwise. Times (seconds, forward_s, backward_s, slowdown, the
// overheads) are the median over passes (the lower one for an even count); the descriptive fields are the first
// pass's, and seconds_taken is the sum.
DeviceProfile median_of_passes(const std::vector<DeviceProfile>& passes);

}  // namespace shardscope::calibration
