// Device presets: memory capacity (as nvidia-smi reports the total), architecture, and peak rates for the cost model;
// the GPUs, and "CPU" for runs of PyTorch on the host.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace shardscope {

struct DevicePreset {
  std::string name;         // "H100-80"
  std::string description;  // "NVIDIA H100 SXM 80 GB"
  Bytes capacity = 0;       // total device memory; the CUDA context is not subtracted
  std::string gpu_arch;     // "sm70", "sm80", "sm89", "sm90"
  double fp32_tflops = 0;   // dense, no tensor cores
  double bf16_tflops = 0;   // dense tensor-core peak (fp16 on V100)
  double hbm_gbps = 0;      // memory bandwidth, GB/s (decimal)
  // cudaDeviceProp multiProcessorCount and maxThreadsPerMultiProcessor: they size ATen's reductions (ReduceConfig),
  // whose scratch the caching allocator counts.
  int multiprocessors = 0;
  int max_threads_per_multiprocessor = 0;
  // False for "CPU": PyTorch on the host (the CPU allocator, no cuBLAS, no CUDA reduction kernels), what a recording
  // made on the CPU (python -m shardscope.record --device cpu) is compared with (training/framework_behaviour.h).
  bool cuda = true;
};

const std::vector<DevicePreset>& device_presets();
std::optional<DevicePreset> find_device_preset(const std::string& name);
// "V100-16, V100-32, A100-40, ..." for messages and --help.
std::string device_preset_names();

}  // namespace shardscope
