// DeviceScratch and DeviceFp32Staging (see device_staging.h).
#include "exec/cuda/device_staging.h"

#include <stdexcept>
#include <string>

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

DeviceFp32Staging::DeviceFp32Staging(std::vector<DeviceBuffer>& operands, DeviceScratch& scratch, cudaStream_t stream,
                                     const KernelLaunch* launch, FloatPrefix float_prefix)
    : stream_(stream) {
  // Each staged operand's fp32 size in floats: its values widened, then its raw tail rounded up to whole floats.
  std::vector<Bytes> float_bytes(operands.size(), 0);
  std::size_t total = 0;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const DeviceBuffer& b = operands[k];
    if (!b.present() || !is_16_bit(b.element)) continue;
    float_bytes[k] = staged_value_bytes(float_prefix, launch, k, b);
    total += static_cast<std::size_t>(float_bytes[k] / 2) + static_cast<std::size_t>(b.bytes - float_bytes[k] + 3) / 4;
  }
  if (total == 0) return;
  float* next = scratch.reserve(total, stream);
  for (std::size_t k = 0; k < operands.size(); ++k) {
    DeviceBuffer& operand = operands[k];
    if (!operand.present() || !is_16_bit(operand.element)) continue;
    const Staged* same = nullptr;
    for (const Staged& s : staged_)
      if (s.original.data == operand.data && s.original.bytes == operand.bytes) same = &s;
    if (same == nullptr) {
      const Staged s{operand, float_bytes[k], next};
      const auto values = static_cast<std::size_t>(s.float_bytes / 2);
      const auto tail = static_cast<std::size_t>(operand.bytes - s.float_bytes);
      launch_widen(operand.data, s.copy, values, operand.element == ElementType::Bf16, stream);
      if (tail > 0)
        check_cuda(cudaMemcpyAsync(s.copy + values, operand.data + s.float_bytes, tail, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync (staged raw bytes)");
      next += values + (tail + 3) / 4;
      staged_.push_back(s);
      same = &staged_.back();
    }
    const auto values = static_cast<Bytes>(same->float_bytes / 2);
    operand = DeviceBuffer{reinterpret_cast<std::byte*>(same->copy), values * 4 + (same->original.bytes - same->float_bytes),
                           ElementType::Fp32};
  }
}

void DeviceFp32Staging::write_back() {
  for (const Staged& s : staged_) {
    const auto values = static_cast<std::size_t>(s.float_bytes / 2);
    launch_narrow(s.copy, s.original.data, values, s.original.element == ElementType::Bf16, stream_);
    const auto tail = static_cast<std::size_t>(s.original.bytes - s.float_bytes);
    if (tail > 0)
      check_cuda(cudaMemcpyAsync(s.original.data + s.float_bytes, s.copy + values, tail, cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync (staged raw bytes back)");
  }
}

}  // namespace shardscope::exec::cuda
