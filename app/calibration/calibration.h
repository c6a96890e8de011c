// `shardscope-cli calibrate`: measures a device profile (cluster/device_profile.h, source "shardscope") by running
// our executor's own kernels through its backend on this machine — the GEMMs of nn.Linear's three passes over a
// grid of shapes, the elementwise and reduction kernels over sizes, the optimizer step, the collectives between
// rank threads (CPU) or the CUDA backend's ranks, GPT-2 blocks (whose attention core is what is left of the measured
// block after its GEMMs and elementwise kernels), the launch cost and the executor's own time per op. The simulator
// interpolates the result (sim/profile_costs.h) to predict our executor's step on this machine.
// Usage:
//   CalibrationOptions options;  options.backend = exec::BackendKind::Cpu;  options.progress = &std::cerr;
//   DeviceProfile profile = calibrate_device(options);   // throws exec::BackendUnavailableError
#pragma once
#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cluster/device_profile.h"
#include "exec/backend.h"
#include "exec/backend_choice.h"

namespace shardscope::calibration {

struct CalibrationOptions {
  exec::BackendKind backend = exec::BackendKind::Cpu;
  // Tiny grids and short timings: a check that every part runs (tests), not a profile to predict with.
  bool quick = false;
  // How many times every point is measured, spread over the calibration (each pass measures the whole grid once);
  // a point's figure is the median over the passes (profile_median.h).
  int passes = 5;
  std::ostream* progress = nullptr;  // one line a part ("calibrate: gemm float32: 41 shapes, 12.0 s")
};

DeviceProfile calibrate_device(const CalibrationOptions& options);

// calibrate_device one pass at a time, for a benchmark that runs its own jobs between the passes (bench_timeline:
// calibration and execution then sample the same moments of a machine whose speed drifts):
//   Calibrator c(options);  for k in 1..options.passes: passes.push_back(c.pass(k));  profile = c.merged(passes);
class Calibrator {
 public:
  explicit Calibrator(const CalibrationOptions& options);  // throws exec::BackendUnavailableError
  ~Calibrator();
  Calibrator(const Calibrator&) = delete;
  Calibrator& operator=(const Calibrator&) = delete;
  DeviceProfile pass(int index);  // 1-based: every part once
  // The passes' point-by-point median (profile_median.h), seconds_taken counted from construction.
  DeviceProfile merged(const std::vector<DeviceProfile>& passes) const;

 private:
  CalibrationOptions options_;
  std::unique_ptr<exec::Backend> backend_;
  DeviceProfile description_;  // the machine and settings every pass starts from
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shardscope::calibration
