// DeviceBuffers: allocation through the rank's allocator, host-made values copied in.
#include "calibration/device_buffers.h"

#include <cstring>

#include "exec/sixteen_bit.h"

namespace shardscope::calibration {

DeviceBuffers::~DeviceBuffers() {
  for (void* data : live_) rank_.allocator().free(data);
}

exec::DeviceBuffer DeviceBuffers::allocate(Bytes bytes, ElementType element) {
  const exec::Allocation a = rank_.allocator().allocate(bytes, Category::Temporaries, "calibration");
  live_.push_back(a.data);
  const exec::DeviceBuffer buffer{static_cast<std::byte*>(a.data), bytes, element};
  rank_.fill_zero(buffer);
  return buffer;
}

exec::DeviceBuffer DeviceBuffers::zeros(Bytes bytes, ElementType element) { return allocate(bytes, element); }

exec::DeviceBuffer DeviceBuffers::values(std::int64_t elements, ElementType element) {
  const exec::DeviceBuffer buffer = allocate(elements * element_bytes(element), element);
  if (element == ElementType::Opaque) return buffer;
  std::vector<float> host(static_cast<std::size_t>(elements));
  for (float& v : host) {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;  // PCG's LCG step
    v = static_cast<float>(static_cast<double>(state_ >> 40) / static_cast<double>(1ull << 24)) * 2.0f - 1.0f;
  }
  std::vector<std::byte> bytes(static_cast<std::size_t>(buffer.bytes));
  if (is_16_bit(element)) exec::narrow(element, host, bytes.data());
  else std::memcpy(bytes.data(), host.data(), bytes.size());
  rank_.copy_from_host(buffer, bytes);
  return buffer;
}

exec::DeviceBuffer DeviceBuffers::ids(std::int64_t count, std::int64_t bound) {
  const exec::DeviceBuffer buffer = allocate(count * 8, ElementType::Opaque);
  std::vector<std::int64_t> host(static_cast<std::size_t>(count));
  for (auto& id : host) {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<std::int64_t>((state_ >> 33) % static_cast<std::uint64_t>(bound));
  }
  rank_.copy_from_host(buffer, std::as_bytes(std::span<const std::int64_t>(host)));
  return buffer;
}

}  // namespace shardscope::calibration
