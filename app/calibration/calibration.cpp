// calibrate_device: the machine's description, a one-rank backend for the kernels, then each part in turn.
#include "calibration/calibration.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "calibration/calibration_parts.h"
#include "calibration/profile_median.h"
#include "core/version.h"
#include "exec/backends/backend_factory.h"

namespace shardscope::calibration {

namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "CPU";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

DeviceProfile calibrate_device(const CalibrationOptions& options) {
  Plan one;
  one.programs.emplace_back();
  exec::ExecutionOptions exec_options;
  exec_options.backend = options.backend;
  const std::unique_ptr<exec::Backend> backend = exec::make_backend(one, exec_options);

  DeviceProfile profile;
  profile.source = "shardscope";
  profile.backend = exec::backend_kind_name(options.backend);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  profile.machine_name = options.backend == exec::BackendKind::Cpu ? cpu_model_name() : backend->device_name(0);
  profile.machine_json = nlohmann::json{{"host", host},
                                        {"name", profile.machine_name},
                                        {"device", profile.backend},
                                        {"executor", "ShardScope " + std::string(shardscope_version) + ", " + backend->name() + " backend"},
                                        {"cpu_threads", std::thread::hardware_concurrency()}}
                             .dump();
  profile.settings_json = nlohmann::json{{"quick", options.quick},
                                         {"blas_threads", 1},
                                         {"dtypes", options.backend == exec::BackendKind::Cpu ? "float32" : "float32, bfloat16, float16"},
                                         {"passes", std::max(1, options.passes)},
                                         {"timing", "each point timed once per pass (calls repeated for at least 20 ms, 5 ms quick, "
                                                    "after a warm-up call); its figure is the median over the passes"}}
                              .dump();
  profile.date = utc_now();

  // Every part once per pass, and each point's median over the passes: samples of one point spread over the whole
  // calibration instead of one burst (profile_median.h says why).
  const int passes = std::max(1, options.passes);
  const auto started = std::chrono::steady_clock::now();
  std::vector<DeviceProfile> measured;
  for (int pass = 1; pass <= passes; ++pass) {
    DeviceProfile part = profile;
    Context c;
    c.kind = options.backend;
    c.rank = &backend->rank(0);
    c.timer = KernelTimer(options.quick ? 0.005 : 0.02, 1);
    c.quick = options.quick;
    c.progress = options.progress;
    c.profile = &part;
    c.start = started;
    c.pass = passes > 1 ? "pass " + std::to_string(pass) + " of " + std::to_string(passes) + ": " : "";
    if (pass == 1) c.say("machine: " + profile.machine_name + " (" + profile.backend + " backend)");
    calibrate_overheads(c);
    calibrate_gemms(c, ElementType::Fp32);
    calibrate_concurrency(c);
    if (options.backend == exec::BackendKind::Cuda) {
      calibrate_gemms(c, ElementType::Bf16);
      calibrate_gemms(c, ElementType::Fp16);
    }
    calibrate_elementwise(c);
    calibrate_optimizers(c);
    calibrate_gpt2_blocks(c);
    calibrate_collectives(c);
    measured.push_back(std::move(part));
  }
  profile = median_of_passes(measured);
  profile.seconds_taken = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.progress) *options.progress << "calibrate [" << static_cast<int>(profile.seconds_taken) << " s]: done\n";
  return profile;
}

}  // namespace shardscope::calibration
