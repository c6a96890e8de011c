// A measured device profile: what kernels achieve on one machine, as curves over size per op kind, for the
// simulator to interpolate instead of the roofline constants (issue 40). Two makers write it: `shardscope-cli
// calibrate` (our executor's own kernels, source "shardscope") and python/shardscope/calibrate.py (PyTorch's,
// source "pytorch"); assets/devices/FORMAT.md documents the JSON. This file is the data and its JSON form only;
// the interpolation is sim/profile_costs.h.
// Usage:
//   DeviceProfile p = load_device_profile_file("assets/devices/h200-torch-2.11.json");  // throws DeviceProfileError
//   std::string text = device_profile_to_json(p);
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace shardscope {

inline constexpr const char* kDeviceProfileFormat = "shardscope-device-profile";
// Version 1: python/shardscope/calibrate.py's format. Version 2 adds "backend", overheads.executor_op_s and
// elementwise curves named after our kernels; every version-1 file is a valid version-2 file but for the number.
inline constexpr int kDeviceProfileVersion = 2;

// A problem with a profile file; the message names the file and the JSON path ("gemm.float32[3].seconds: ...").
class DeviceProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One timed GEMM, C[m×n] = A[m×k]·B[k×n] (`batch` of them for a batched product). Layout: the Linear pass it times
// ("forward" y = x·Wᵀ, "input_grad" dx = dy·W, "weight_grad" dW = dyᵀ·x) or "batched".
struct ProfileGemmPoint {
  std::string layout;
  double m = 0, n = 0, k = 0, batch = 1;
  double seconds = 0;
};

// One point of a curve over size: elementwise kernels (size = bytes moved, reads plus writes), optimizer steps
// (size = parameters), host copies (bytes).
struct ProfileSizePoint {
  double size = 0;
  double seconds = 0;
  double elements = 0;  // elementwise: the elements of the op's main tensor (0: not recorded)
  double tensors = 0;   // optimizer: how many parameter tensors the step updated (0: not recorded)
};

// One timed attention core (scaled_dot_product_attention, or the part of our GPT-2 block that is neither its
// GEMMs nor its elementwise kernels): forward and backward seconds. Kernel kAttentionRecomputeKernel: our selective
// recomputation of the core (up to its dropped probabilities), forward_s only.
inline constexpr const char* kAttentionRecomputeKernel = "shardscope-attention-recompute";
struct ProfileAttentionPoint {
  std::string kernel;
  double batch_heads = 0, seq = 0, head_dim = 0;
  double forward_s = 0, backward_s = 0;
};

// One timed collective between `ranks` ranks on a buffer of `bytes` (nccl-tests' size S: all-reduce / broadcast:
// the buffer; all-gather: the gathered output; reduce-scatter: the input).
struct ProfileCollectivePoint {
  double ranks = 0, bytes = 0, seconds = 0;
};

struct DeviceProfile {
  int version = kDeviceProfileVersion;
  std::string source;        // "pytorch" or "shardscope"
  std::string backend;       // "cpu" or "cuda" (version 1: machine.device)
  std::string machine_name;  // machine.name: "NVIDIA H200", a CPU's model name
  std::string machine_json;  // the whole "machine" object as JSON text (kept as written)
  std::string settings_json; // the whole "settings" object as JSON text
  std::string date;          // ISO 8601, UTC
  double seconds_taken = 0;  // how long the calibration ran
  std::string path;          // where it was read from (empty: made in memory)

  std::map<std::string, std::vector<ProfileGemmPoint>> gemm;  // by dtype name: "float32", "bfloat16", "float16"
  std::map<std::string, std::vector<ProfileAttentionPoint>> attention;  // by dtype name
  // by op name ("add", "relu", ... or one of our kernels: "mse_loss", "layer_norm_backward"), then dtype name
  std::map<std::string, std::map<std::string, std::vector<ProfileSizePoint>>> elementwise;
  std::map<std::string, std::vector<ProfileSizePoint>> optimizer;  // "adam", "adamw", "sgd", "momentum"
  std::map<std::string, std::vector<ProfileSizePoint>> copy;       // "host_to_device", "device_to_host"

  // Seconds. launch_s: the host's time per tiny kernel issued back to back; synchronize_s: an idle device
  // synchronisation; executor_op_s (ours only): the executor's own time per op outside its kernel (operand
  // lookup, trace events), 0 when not measured.
  double launch_s = 0, synchronize_s = 0, executor_op_s = 0;

  // Version 2, our CPU backend: how much slower each kernel runs while `threads` ranks compute at once on the
  // machine's cores (ranks are threads of one process there), by "gemm" and "elementwise": (threads, slowdown)
  // with slowdown = time per call with that many threads busy / time alone.
  struct ConcurrencyPoint {
    double threads = 1, slowdown = 1;
  };
  std::map<std::string, std::vector<ConcurrencyPoint>> concurrency;

  // by kind: "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"
  std::map<std::string, std::vector<ProfileCollectivePoint>> collectives;
  std::string collective_backend;  // "gloo", "nccl", "threads" (our CPU backend's rank threads), "local"
  std::string collective_note;
};

// The profile's key for a training dtype: fp32 "float32", bf16 "bfloat16", fp16 "float16".
std::string profile_dtype_name(Dtype dtype);

// Throws DeviceProfileError naming `source` for anything that is not a profile: another format, an unknown version,
// a point whose size or time is not a positive finite number, a curve that is not an array of objects.
DeviceProfile parse_device_profile(const std::string& text, const std::string& source);
DeviceProfile load_device_profile_file(const std::string& path);
// Version 2 JSON, every curve in the order held.
std::string device_profile_to_json(const DeviceProfile& profile);

// A profile named by the scenario's cluster.device_profile: a path, or the name of one shipped under
// assets/devices ("h200-torch-2.11" or "h200-torch-2.11.json"). Throws DeviceProfileError when neither exists.
std::string device_profile_path(const std::string& name_or_path);
// device_profile_path, then the file read once and shared while it is unchanged (its size and modification time):
// a scenario is resolved at every change in the window, and a profile takes milliseconds to parse. Thread-safe.
std::shared_ptr<const DeviceProfile> cached_device_profile(const std::string& name_or_path);
// The profiles shipped under assets/devices (names without ".json"), for --help and the window's choices.
std::vector<std::string> shipped_device_profiles();

}  // namespace shardscope
