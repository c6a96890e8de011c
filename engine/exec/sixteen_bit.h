// bf16 and fp16 values to and from fp32, rounding to nearest even as PyTorch's casts do (c10/util/BFloat16.h
// round_to_nearest_even, c10/util/Half.h fp16_ieee_from_fp32_value): fp16 overflow becomes ±inf, its subnormals are
// kept, NaN stays NaN. Whole buffers convert with widen / narrow.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <cstdint>
#include <span>

#include "plan/element_type.h"

namespace shardscope::exec {

float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float value);
float fp16_to_float(std::uint16_t bits);
std::uint16_t float_to_fp16(float value);

// `to.size()` 16-bit elements of `element` (Bf16 or Fp16) from `from` into fp32, and back, rounding.
void widen(ElementType element, const std::byte* from, std::span<float> to);
void narrow(ElementType element, std::span<const float> from, std::byte* to);

}  // namespace shardscope::exec
