// CudaRankBackend and CudaBackend: streams, cuBLAS, host copies, memory info; placement and the communicator choice.
#include "exec/cuda/cuda_backend.h"

#include "exec/shared_kernels/gpt_block_staging.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_devices.h"
#include "exec/cuda/cuda_kernel_dispatch.h"
#include "exec/cuda/cuda_segment_source.h"
#include "exec/cuda/local_collectives.h"
#include "exec/cuda/nccl_communicator.h"
#include "exec/cuda_host/tcp_rendezvous.h"
#include "plan/cublas_workspace.h"

namespace shardscope::exec::cuda {

CudaRankBackend::CudaRankBackend(int rank, int device, CudaCommunicator& communicator)
    : rank_(rank), device_(device), communicator_(communicator) {
  use_device();
  // Non-blocking streams: no implicit synchronisation with the legacy default stream of other ranks on the GPU.
  check_cuda(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate (compute)");
  check_cuda(cudaStreamCreateWithFlags(&communication_, cudaStreamNonBlocking), "cudaStreamCreate (communication)");
  for (cublasHandle_t* handle : {&cublas_, &cublas_backward_}) {
    check_cublas(cublasCreate(handle), "cublasCreate");
    check_cublas(cublasSetStream(*handle, compute_), "cublasSetStream");
    // Plain fp32 GEMMs (no TF32), as torch.backends.cuda.matmul.allow_tf32 = False, the default since PyTorch 1.12.
    check_cublas(cublasSetMathMode(*handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  allocator_ = std::make_unique<DeviceCachingAllocator>(std::make_unique<CudaSegmentSource>(device_));
  kernel_timer_ = std::make_unique<EventTimer>();
}

CudaRankBackend::~CudaRankBackend() {
  cudaSetDevice(device_);
  allocator_.reset();  // segments back to the device before the streams go
  kernel_timer_.reset();
  communication_timers_.clear();
  if (cublas_) cublasDestroy(cublas_);
  if (cublas_backward_) cublasDestroy(cublas_backward_);
  if (compute_) cudaStreamDestroy(compute_);
  if (communication_) cudaStreamDestroy(communication_);
}

void CudaRankBackend::use_device() const { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }

std::optional<TimeNs> CudaRankBackend::run_kernel_timed(const KernelLaunch& launch) {
  std::lock_guard lock(kernel_mutex_);
  use_device();
  // Clear this thread's error variable first (CUDA programming guide, "Error checking"): the check below must see
  // only these launches. The communication thread also runs compute ops (ZeRO-3 copy-outs), and its NCCL waits
  // poll cudaStreamQuery, whose cudaErrorNotReady would otherwise be reported here as a failed launch.
  cudaGetLastError();
  kernel_timer_->start(compute_);
  // The backward GEMMs on the autograd thread's handle (its own workspace, as PyTorch's; plan/cublas_workspace.h).
  const bool backward = launch.kernel == Kernel::LinearBackward || launch.kernel == Kernel::GptBlockBackward;
  cublasHandle_t handle = backward ? cublas_backward_ : cublas_;
  if (has_16_bit_operand(launch.operands)) {  // device_staging.h: through fp32 and back
    KernelLaunch staged = launch;
    DeviceFp32Staging staging(staged.operands, kernel_scratch_, compute_, &launch, gpt_block_value_bytes);
    run_cuda_kernel(staged, handle, compute_);
    staging.write_back();
  } else {
    run_cuda_kernel(launch, handle, compute_);
  }
  kernel_timer_->stop(compute_);
  check_cuda(cudaGetLastError(), ("launching " + kernel_name(launch.kernel)).c_str());
  check_cuda(cudaStreamSynchronize(compute_), kernel_name(launch.kernel).c_str());
  return kernel_timer_->elapsed();
}

EventTimer& CudaRankBackend::communication_timer() {
  std::lock_guard lock(timers_mutex_);
  std::unique_ptr<EventTimer>& timer = communication_timers_[std::this_thread::get_id()];
  if (!timer) {
    use_device();
    timer = std::make_unique<EventTimer>();
  }
  return *timer;
}

DeviceScratch& CudaRankBackend::communication_scratch() {
  std::lock_guard lock(timers_mutex_);
  std::unique_ptr<DeviceScratch>& scratch = communication_scratch_[std::this_thread::get_id()];
  if (!scratch) scratch = std::make_unique<DeviceScratch>();
  return *scratch;
}

std::optional<TimeNs> CudaRankBackend::run_communication_timed(const CommunicationLaunch& launch) {
  EventTimer& timer = communication_timer();
  if (!has_16_bit_operand(launch.operands)) {
    if (!communicator_.run(launch, rank_, device_, communication_, &timer)) return std::nullopt;
    return timer.elapsed();
  }
  // 16-bit buffers travel and reduce as fp32 (device_staging.h), rounded once at the end, as on the CPU.
  use_device();
  CommunicationLaunch staged = launch;
  DeviceFp32Staging staging(staged.operands, communication_scratch(), communication_);
  const bool timed = communicator_.run(staged, rank_, device_, communication_, &timer);
  staging.write_back();
  check_cuda(cudaStreamSynchronize(communication_), "cudaStreamSynchronize (16-bit collective)");
  if (!timed) return std::nullopt;
  return timer.elapsed();
}

void CudaRankBackend::copy_from_host(const DeviceBuffer& dst, std::span<const std::byte> src) {
  if (static_cast<Bytes>(src.size()) > dst.bytes)
    throw std::invalid_argument("copy_from_host: " + std::to_string(src.size()) + " bytes into a buffer of " +
                                std::to_string(dst.bytes));
  use_device();
  // Not cudaMemcpy: from pageable memory it returns once the bytes are staged, before the DMA reaches the device,
  // and it is ordered only with the legacy default stream, which the rank's non-blocking streams do not wait for.
  // Queued on the compute stream and synchronised, the data is in place when this returns.
  check_cuda(cudaMemcpyAsync(dst.data, src.data(), src.size(), cudaMemcpyHostToDevice, compute_),
             "cudaMemcpyAsync (host to device)");
  check_cuda(cudaStreamSynchronize(compute_), "cudaMemcpyAsync (host to device)");
}

void CudaRankBackend::copy_to_host(std::span<std::byte> dst, const DeviceBuffer& src) {
  if (static_cast<Bytes>(dst.size()) > src.bytes)
    throw std::invalid_argument("copy_to_host: " + std::to_string(dst.size()) + " bytes from a buffer of " +
                                std::to_string(src.bytes));
  use_device();
  // On the compute stream as well (ordered after the rank's kernels, not the legacy default stream), synchronised.
  check_cuda(cudaMemcpyAsync(dst.data(), src.data, dst.size(), cudaMemcpyDeviceToHost, compute_),
             "cudaMemcpyAsync (device to host)");
  check_cuda(cudaStreamSynchronize(compute_), "cudaMemcpyAsync (device to host)");
}

void CudaRankBackend::use_gemm_workspace(const std::string& thread, const DeviceBuffer& workspace) {
  std::lock_guard lock(kernel_mutex_);
  use_device();
  cublasHandle_t handle = thread == kBackwardGemmThread ? cublas_backward_ : cublas_;
  // The caching allocator's blocks are 512-byte aligned, more than the 256 bytes cublasSetWorkspace asks for. An
  // absent buffer (the tensor is about to be freed) leaves cuBLAS with no workspace rather than a dangling one.
  check_cublas(cublasSetWorkspace(handle, workspace.data, static_cast<std::size_t>(workspace.bytes)), "cublasSetWorkspace");
}

void CudaRankBackend::fill_zero(const DeviceBuffer& dst) {
  if (dst.bytes <= 0) return;
  use_device();
  check_cuda(cudaMemsetAsync(dst.data, 0, static_cast<std::size_t>(dst.bytes), compute_), "cudaMemsetAsync");
  check_cuda(cudaStreamSynchronize(compute_), "cudaMemsetAsync");
}

void CudaRankBackend::synchronize(Stream stream) {
  use_device();
  check_cuda(cudaStreamSynchronize(stream == Stream::Compute ? compute_ : communication_), "cudaStreamSynchronize");
}

std::optional<RankBackend::DeviceMemoryUse> CudaRankBackend::device_memory() {
  use_device();
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
  return DeviceMemoryUse{static_cast<Bytes>(total - free), static_cast<Bytes>(total), allocator_->reserved_bytes()};
}

CudaBackend::CudaBackend(const Plan& plan, const ExecutionOptions& options, const GpuInventory& inventory)
    : inventory_(inventory), multinode_(options.multinode) {
  const int world = static_cast<int>(plan.programs.size());
  const int gpus = static_cast<int>(inventory.gpus.size());
  try {
    placement_ = place_ranks(world, multinode_.nnodes, gpus);
    if (multinode_.nnodes > 1 && (multinode_.node_rank < 0 || multinode_.node_rank >= multinode_.nnodes))
      throw std::invalid_argument("--node-rank must be in 0.." + std::to_string(multinode_.nnodes - 1));
    if (multinode_.nnodes > 1 && multinode_.master.empty())
      throw std::invalid_argument("--nnodes > 1 needs --master HOST:PORT");
    if (multinode_.nnodes > 1) {
      parse_endpoint(multinode_.master);  // std::invalid_argument naming the problem
      if (const auto problem = job_token_problem(multinode_.token)) throw std::invalid_argument(*problem);
    }
  } catch (const std::invalid_argument& e) {
    throw BackendUnavailableError(e.what());
  }
  if (placement_.shares_devices) {
    communicator_ = std::make_unique<LocalCollectives>();
  } else {
    try {
      communicator_ = std::make_unique<NcclCommunicator>(plan.groups, placement_, multinode_, gpus);
    } catch (const RendezvousError& e) {
      throw BackendUnavailableError(e.what());  // the nodes could not join: a set-up problem, not a failed run
    }
  }
  ranks_.resize(static_cast<std::size_t>(world));
  for (const RankSlot& slot : placement_.ranks)
    if (slot.node == multinode_.node_rank)
      ranks_[static_cast<std::size_t>(slot.rank)] = std::make_unique<CudaRankBackend>(slot.rank, slot.device, *communicator_);
}

CudaBackend::~CudaBackend() {
  ranks_.clear();
  communicator_.reset();
}

RankBackend& CudaBackend::rank(int rank) {
  auto& backend = ranks_.at(static_cast<std::size_t>(rank));
  if (!backend) throw std::invalid_argument("rank " + std::to_string(rank) + " runs on another node");
  return *backend;
}

void CudaBackend::abort(int, std::string_view) { communicator_->abort(); }

bool CudaBackend::runs_rank(int rank) const { return ranks_.at(static_cast<std::size_t>(rank)) != nullptr; }

std::string CudaBackend::device_name(int rank) const {
  const RankSlot& slot = placement_.ranks.at(static_cast<std::size_t>(rank));
  const bool local = slot.node == multinode_.node_rank;
  const std::string gpu = local ? inventory_.gpus.at(static_cast<std::size_t>(slot.device)).name : "remote GPU";
  return device_label(placement_, rank, gpu);
}

RuntimeVersions CudaBackend::runtime_versions() const { return query_runtime_versions(); }

int CudaBackend::physical_device(int rank) const { return placement_.ranks.at(static_cast<std::size_t>(rank)).device; }

Bytes CudaBackend::device_capacity(int rank) const {
  const RankSlot& slot = placement_.ranks.at(static_cast<std::size_t>(rank));
  return slot.node == multinode_.node_rank ? inventory_.gpus.at(static_cast<std::size_t>(slot.device)).total_bytes : 0;
}

std::unique_ptr<Backend> make_cuda_backend(const Plan& plan, const ExecutionOptions& options,
                                           const GpuInventory& inventory) {
  return std::make_unique<CudaBackend>(plan, options, inventory);
}

}  // namespace shardscope::exec::cuda
