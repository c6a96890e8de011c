// `shardscope-cli calibrate --backend cpu|cuda --out PROFILE.json [--quick] [--passes N]`: measures this machine through our
// executor's backend (calibration/calibration.h) and writes the device profile `simulate --device-profile` reads.
#pragma once
#include <iosfwd>
#include <string>

namespace shardscope::cli {

// Throws ScenarioError naming --backend (unknown) or --out (cannot be written: checked before measuring);
// exec::BackendUnavailableError when the backend cannot run here. Progress goes to `progress`. passes 0: the default
// (5, or 1 with quick).
void run_calibrate(const std::string& backend, const std::string& out, bool quick, int passes, std::ostream& progress);

}  // namespace shardscope::cli
