// The calibrate command: flags checked (and the output writable) before minutes of measuring, then the profile
// written through a temporary file, so an interrupted run leaves no half profile under the name.
#include "cli/calibrate_command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>

#include "calibration/calibration.h"
#include "scenario/scenario.h"

namespace shardscope::cli {

void run_calibrate(const std::string& backend, const std::string& out, bool quick, int passes, std::ostream& progress) {
  const std::optional<exec::BackendKind> kind = exec::backend_kind_from_name(backend);
  if (!kind) throw ScenarioError("--backend", "unknown backend '" + backend + "' (expected cpu or cuda)");
  const std::string temporary = out + ".tmp";
  {
    std::ofstream probe(temporary);
    // Before minutes of measuring: the file goes to `temporary` first, so that is what must be writable.
    if (!probe) throw ScenarioError("--out", "cannot write " + out + " (creating " + temporary + ": " + std::strerror(errno) + ")");
  }
  calibration::CalibrationOptions options;
  options.backend = *kind;
  options.quick = quick;
  options.passes = passes > 0 ? passes : quick ? 1 : 5;
  options.progress = &progress;
  DeviceProfile profile;
  try {
    profile = calibration::calibrate_device(options);
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  {
    std::ofstream file(temporary);
    file << device_profile_to_json(profile) << "\n";
    if (!file) throw ScenarioError("--out", "writing " + temporary + " failed");
  }
  if (std::rename(temporary.c_str(), out.c_str()) != 0) throw ScenarioError("--out", "cannot rename " + temporary + " to " + out);
  progress << "calibrate: wrote " << out << " (" << static_cast<int>(profile.seconds_taken) << " s)\n";
}

}  // namespace shardscope::cli
