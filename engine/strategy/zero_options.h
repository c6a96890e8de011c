// Bucket options shared by the ZeRO-2 and ZeRO-3 lowerings: MiB settings turned into element counts.
#pragma once
#include <cstdint>
#include <optional>

#include "core/units.h"

namespace shardscope {

// DeepSpeed's default reduce_bucket_size and allgather_bucket_size (deepspeed/runtime/zero/config.py): 5e8 elements.
inline constexpr std::int64_t kDeepSpeedBucketNumel = 500'000'000;

// `mib` MiB of `element_bytes`-sized elements (at least one), or `fallback` when unset.
inline std::int64_t mib_option_numel(const std::optional<double>& mib, Bytes element_bytes, std::int64_t fallback) {
  if (!mib) return fallback;
  const auto numel = static_cast<std::int64_t>(*mib * static_cast<double>(kMiB) / static_cast<double>(element_bytes));
  return numel < 1 ? 1 : numel;
}

}  // namespace shardscope
