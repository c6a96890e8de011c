// What an execution backend provides to the executor (exec/executor.h): device memory through a TrackingAllocator,
// kernels on operand buffers, collectives and messages between ranks, host transfers, stream synchronisation.
// Implemented by the CPU backend (exec/cpu/cpu_backend.h) and the CUDA backend (exec/cuda/cuda_backend.h, built
// where CUDA and NCCL are found); exec/backends/backend_factory.h picks one.
// Depends on plan/ (kernels, collective kinds), scenario/ (optimizer kinds) and the allocator only.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "exec/shared_kernels/dropout_mask.h"
#include "exec/tracking_allocator.h"
#include "plan/element_type.h"
#include "plan/op.h"
#include "scenario/scenario.h"

namespace shardscope::exec {

// A resolved operand: a byte range of device memory (a TensorSlice after the executor looked up its allocation).
// An absent optional operand has data == nullptr and bytes == 0.
struct DeviceBuffer {
  std::byte* data = nullptr;
  Bytes bytes = 0;
  ElementType element = ElementType::Fp32;  // what the bytes hold (the plan tensor's; plan/element_type.h)
  bool present() const { return data != nullptr || bytes > 0; }
  std::size_t float_count() const { return static_cast<std::size_t>(bytes) / sizeof(float); }
};

// Whether a kernel or collective has a bf16 / fp16 operand, which a backend stages through fp32.
inline bool has_16_bit_operand(const std::vector<DeviceBuffer>& operands) {
  for (const DeviceBuffer& b : operands)
    if (b.present() && is_16_bit(b.element)) return true;
  return false;
}

// One torch.optim update's settings (hyperparameters as torch holds them, doubles).
struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::Sgd;
  double lr = 0.01;
  double momentum = 0.9;  // OptimizerKind::Momentum only
  double weight_decay = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam / AdamW
};

// Everything a backend needs to run one compute op: the kernel, its operands in plan/kernel.h's order, and the
// shapes the executor derived from the scenario (the plan holds bytes, not shapes).
struct KernelLaunch {
  Kernel kernel = Kernel::None;
  std::vector<DeviceBuffer> operands;
  int rows = 0;          // samples of the batch (Linear, losses)
  int in_features = 0;   // Linear
  int out_features = 0;  // Linear
  int classes = 0;       // cross-entropy (the model's output_numel)
  double scale = 1;      // Op::scale: Scale and Copy factors, the loss gradient of MseLossBackward / NllLossBackward
  OptimizerSettings optimizer;               // Kernel::OptimizerStep
  std::vector<std::int64_t> optimizer_steps;  // per parameter of an OptimizerStep: its step count after this update
  // GPT-2 kernels: the model's config, tokens a sample, whether dropout is on (training, not --no-grad) and the
  // key of this layer pass's dropout masks (the same for a recomputation of the pass).
  const TransformerConfig* transformer = nullptr;
  int seq = 0;
  bool training = false;
  std::uint64_t dropout_key = 0;
  GlobalSamples samples = {};  // which samples of the step's global batch the pass holds (dropout masks)
  // Tensor parallelism (Megatron-LM's, tp fastest): the group's size and this rank's index in it. A GPT model's
  // kernels then run the rank's shard: its heads and MLP columns, its vocab/tp ids (ids tp_rank · vocab/tp on).
  int tp = 1;
  int tp_rank = 0;
  // With sequence parallelism (a GPT model's): the rank holds chunk tp_rank of the tokens outside the regions.
  bool sequence_parallel = false;
  // UnscaleGradients: set to true when a gradient is inf or NaN (left alone otherwise).
  bool* found_non_finite = nullptr;
};

// Mixed precision: how many leading bytes of a kernel's 16-bit operand hold 16-bit values, the rest raw bytes that
// staging copies as they are (a GPT block's saved buffers end with 1-byte dropout masks:
// exec/shared_kernels/gpt_block_staging.h gpt_block_value_bytes). Both backends' staging take such a function; null: the
// whole buffer is values.
using FloatPrefix = Bytes (*)(const KernelLaunch* launch, std::size_t operand, const DeviceBuffer& buffer);

// float_prefix's answer for operand `index` (the whole buffer without one), checked to be whole 16-bit values
// inside the buffer.
inline Bytes staged_value_bytes(FloatPrefix float_prefix, const KernelLaunch* launch, std::size_t index,
                                const DeviceBuffer& buffer) {
  const Bytes values = float_prefix != nullptr ? float_prefix(launch, index, buffer) : buffer.bytes;
  if (values % 2 != 0 || values > buffer.bytes)
    throw std::invalid_argument("a 16-bit operand of " + std::to_string(buffer.bytes) + " bytes has " +
                                std::to_string(values) + " bytes of 16-bit values");
  return values;
}

// A collective, send or recv of one rank, on operand buffers (plan/kernel.h: all-reduce / broadcast / reduce:
// [buffer]; reduce-scatter: [input, output]; all-gather: [input, output] or [input, output per member]; send / recv:
// [buffer]).
struct CommunicationLaunch {
  OpKind kind = OpKind::Collective;
  CollectiveKind collective = CollectiveKind::AllReduce;
  std::vector<int> group;  // global ranks in ring order (Plan::groups); empty for send / recv
  int root = -1;           // global rank, rooted collectives
  int peer = -1;           // send: receiver; recv: sender
  std::vector<DeviceBuffer> operands;
};

// One rank's view of a backend. Thread contract: run_kernel and run_communication are called from the thread of
// the op's stream (the rank's host thread runs the compute stream), the host transfers from the host thread; calls
// for different streams may run at once. The allocator may be used from any thread. Every call throws (std::exception) on failure; the executor reports it.
class RankBackend {
 public:
  virtual ~RankBackend() = default;
  virtual int rank() const = 0;
  virtual TrackingAllocator& allocator() = 0;
  // Runs one compute op's kernel. Kernel::None does nothing (the op only takes its time).
  virtual void run_kernel(const KernelLaunch& launch) = 0;
  // Runs a collective / send / recv; returns when this rank's part is done. Throws after the run was aborted.
  virtual void run_communication(const CommunicationLaunch& launch) = 0;
  // The same, returning the device's own time for the op's work where the backend has a device clock (CUDA events
  // recorded around the work on its stream), else nothing: the host's time around the call is then the op's time
  // (the CPU, where the call is the work). The executor calls these, so the trace shows what the device spent.
  virtual std::optional<TimeNs> run_kernel_timed(const KernelLaunch& launch) {
    run_kernel(launch);
    return std::nullopt;
  }
  virtual std::optional<TimeNs> run_communication_timed(const CommunicationLaunch& launch) {
    run_communication(launch);
    return std::nullopt;
  }
  // Host <-> device copies (the batch the executor generates, parameter initialisation, loss and checksums).
  virtual void copy_from_host(const DeviceBuffer& dst, std::span<const std::byte> src) = 0;
  virtual void copy_to_host(std::span<std::byte> dst, const DeviceBuffer& src) = 0;
  // Sets every byte to 0 (fresh tensors start zeroed, so optimizer state and accumulators need no init op).
  virtual void fill_zero(const DeviceBuffer& dst) = 0;
  // The plan's tensor standing for a framework thread's cuBLAS workspace (plan/cublas_workspace.h: "main" for
  // forward GEMMs, "autograd" for backward) was allocated, or is about to be freed (an absent buffer). The CUDA
  // backend has cuBLAS work in it (cublasSetWorkspace); elsewhere there is nothing to do.
  virtual void use_gemm_workspace(const std::string& /*thread*/, const DeviceBuffer& /*workspace*/) {}
  // Waits until the work issued on `stream` is done (the CPU runs synchronously: a no-op there).
  virtual void synchronize(Stream stream) = 0;
  // What the whole device holds (cudaMemGetInfo) beside the allocator; none where that is not measured (CPU).
  struct DeviceMemoryUse {
    Bytes used = 0, total = 0, allocator_reserved = 0;
  };
  virtual std::optional<DeviceMemoryUse> device_memory() { return std::nullopt; }
};

// The software a backend ran on, for the trace header (TraceHeader::driver_version ...): "13.0", "2.28.9"; absent
// where it does not apply (the cpu backend).
struct RuntimeVersions {
  std::optional<std::string> driver, cuda_runtime, nccl;
};

// A backend for one run: one RankBackend per rank, and a way to stop every rank's communication at once.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu" (the trace header says "executor cpu")
  virtual RankBackend& rank(int rank) = 0;
  // After a rank failed: every blocked or later communication call throws, naming failed_rank and the reason.
  virtual void abort(int failed_rank, std::string_view reason) = 0;
  // For the trace header: the device a rank runs on ("GPU 0 (NVIDIA H100, shared by ranks 0,1: local
  // collectives)"), its index (-1: host memory) and capacity (0: not known).
  virtual std::string device_name(int) const { return "CPU (host memory)"; }
  virtual int physical_device(int) const { return -1; }
  virtual Bytes device_capacity(int) const { return 0; }
  virtual RuntimeVersions runtime_versions() const { return {}; }
  // Whether this process runs the rank (a multi-node run: only its node's ranks).
  virtual bool runs_rank(int) const { return true; }
};

}  // namespace shardscope::exec
