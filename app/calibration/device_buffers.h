// Buffers for calibration launches on one rank's backend: allocated through its tracking allocator, filled with
// small pseudo-random values (fixed seed) so kernels see ordinary numbers, freed together at the end.
#pragma once
#include <cstdint>
#include <vector>

#include "exec/backend.h"

namespace shardscope::calibration {

class DeviceBuffers {
 public:
  explicit DeviceBuffers(exec::RankBackend& rank) : rank_(rank) {}
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  ~DeviceBuffers();

  // `elements` of `element` type, values uniform in [-1, 1) (fp32 / 16-bit), zeros (opaque bytes).
  exec::DeviceBuffer values(std::int64_t elements, ElementType element = ElementType::Fp32);
  // int64 ids uniform in [0, bound).
  exec::DeviceBuffer ids(std::int64_t count, std::int64_t bound);
  // `bytes` of zeros, holding `element`.
  exec::DeviceBuffer zeros(Bytes bytes, ElementType element = ElementType::Fp32);

 private:
  exec::DeviceBuffer allocate(Bytes bytes, ElementType element);

  exec::RankBackend& rank_;
  std::vector<void*> live_;
  std::uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

}  // namespace shardscope::calibration
