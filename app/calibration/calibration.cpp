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

Calibrator::Calibrator(const CalibrationOptions& options)
    : options_(options), start_(std::chrono::steady_clock::now()) {
  options_.passes = std::max(1, options.passes);
  Plan one;
  one.programs.emplace_back();
  exec::ExecutionOptions exec_options;
  exec_options.backend = options.backend;
  backend_ = exec::make_backend(one, exec_options);

  DeviceProfile& d = description_;
  d.source = "shardscope";
  d.backend = exec::backend_kind_name(options.backend);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  d.machine_name = options.backend == exec::BackendKind::Cpu ? cpu_model_name() : backend_->device_name(0);
  d.machine_json = nlohmann::json{{"host", host},
                                  {"name", d.machine_name},
                                  {"device", d.backend},
                                  {"executor", "ShardScope " + std::string(shardscope_version) + ", " + backend_->name() + " backend"},
                                  {"cpu_threads", std::thread::hardware_concurrency()}}
                       .dump();
  d.settings_json = nlohmann::json{{"quick", options.quick},
                                   {"blas_threads", 1},
                                   {"dtypes", options.backend == exec::BackendKind::Cpu ? "float32" : "float32, bfloat16, float16"},
                                   {"passes", options_.passes},
                                   {"timing", "each point timed once per pass (calls repeated for at least 20 ms, 5 ms quick, "
                                              "after a warm-up call); its figure is the median over the passes"}}
                        .dump();
  d.date = utc_now();
}

Calibrator::~Calibrator() = default;

DeviceProfile Calibrator::pass(int index) {
  DeviceProfile part = description_;
  Context c;
  c.kind = options_.backend;
  c.rank = &backend_->rank(0);
  c.timer = KernelTimer(options_.quick ? 0.005 : 0.02, 1);
  c.quick = options_.quick;
  c.progress = options_.progress;
  c.profile = &part;
  c.start = start_;
  c.pass = options_.passes > 1 ? "pass " + std::to_string(index) + " of " + std::to_string(options_.passes) + ": " : "";
  if (index == 1) c.say("machine: " + description_.machine_name + " (" + description_.backend + " backend)");
  calibrate_overheads(c);
  calibrate_gemms(c, ElementType::Fp32);
  calibrate_concurrency(c);
  if (options_.backend == exec::BackendKind::Cuda) {
    calibrate_gemms(c, ElementType::Bf16);
    calibrate_gemms(c, ElementType::Fp16);
  }
  calibrate_elementwise(c);
  calibrate_optimizers(c);
  calibrate_gpt2_blocks(c);
  calibrate_collectives(c);
  return part;
}

DeviceProfile Calibrator::merged(const std::vector<DeviceProfile>& passes) const {
  DeviceProfile profile = median_of_passes(passes);
  profile.seconds_taken = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (options_.progress)
    *options_.progress << "calibrate [" << static_cast<int>(profile.seconds_taken) << " s]: done" << std::endl;
  return profile;
}

DeviceProfile calibrate_device(const CalibrationOptions& options) {
  // Every part once per pass, and each point's median over the passes: samples of one point spread over the whole
  // calibration instead of one burst (profile_median.h says why).
  Calibrator calibrator(options);
  std::vector<DeviceProfile> passes;
  for (int pass = 1; pass <= std::max(1, options.passes); ++pass) passes.push_back(calibrator.pass(pass));
  return calibrator.merged(passes);
}

}  // namespace shardscope::calibration
