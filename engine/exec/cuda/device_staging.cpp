// DeviceScratch and DeviceFp32Staging (see device_staging.h).
#include "exec/cuda/device_staging.h"

#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_kernels.h"

namespace shardscope::exec::cuda {

DeviceScratch::~DeviceScratch() {
  if (data_ != nullptr) cudaFree(data_);
}

float* DeviceScratch::reserve(std::size_t floats, cudaStream_t stream) {
  if (floats <= capacity_) return data_;
  if (data_ != nullptr) {
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (staging scratch)");
    check_cuda(cudaFree(data_), "cudaFree (staging scratch)");
    data_ = nullptr;
    capacity_ = 0;
  }
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&data_), floats * sizeof(float)), "cudaMalloc (staging scratch)");
  capacity_ = floats;
  return data_;
}

DeviceFp32Staging::DeviceFp32Staging(std::vector<DeviceBuffer>& operands, DeviceScratch& scratch, cudaStream_t stream)
    : stream_(stream) {
  std::size_t total = 0;
  for (const DeviceBuffer& b : operands)
    if (b.present() && is_16_bit(b.element)) total += static_cast<std::size_t>(b.bytes / 2);
  if (total == 0) return;
  float* next = scratch.reserve(total, stream);
  for (DeviceBuffer& operand : operands) {
    if (!operand.present() || !is_16_bit(operand.element)) continue;
    const auto values = static_cast<std::size_t>(operand.bytes / 2);
    float* copy = nullptr;
    for (const Staged& s : staged_)
      if (s.original.data == operand.data && s.original.bytes == operand.bytes) copy = s.copy;
    if (copy == nullptr) {
      copy = next;
      next += values;
      launch_widen(operand.data, copy, values, operand.element == ElementType::Bf16, stream);
      staged_.push_back({operand, copy});
    }
    operand = DeviceBuffer{reinterpret_cast<std::byte*>(copy), static_cast<Bytes>(values * sizeof(float)), ElementType::Fp32};
  }
}

void DeviceFp32Staging::write_back() {
  for (const Staged& s : staged_)
    launch_narrow(s.copy, s.original.data, static_cast<std::size_t>(s.original.bytes / 2),
                  s.original.element == ElementType::Bf16, stream_);
}

}  // namespace shardscope::exec::cuda
