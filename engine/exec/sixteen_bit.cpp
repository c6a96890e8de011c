// Conversions between fp32 and the 16-bit floating-point formats (see sixteen_bit.h), on bit patterns.
#include "exec/sixteen_bit.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace shardscope::exec {

float bf16_to_float(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t float_to_bf16(float value) {
  const auto u = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet, sign kept
  // Adding 0x7fff plus the lowest kept bit rounds half to even; a carry into the exponent rounds up to inf.
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float fp16_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa × 2^-24, exact in fp32
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

std::uint16_t float_to_fp16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  std::uint16_t bits = 0;
  if (u >= (127u + 16u) << 23) {  // |value| ≥ 2^16, inf or NaN
    bits = u > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (u < 113u << 23) {  // below 2^-14, fp16's smallest normal: a subnormal or zero
    // Adding 0.5 places the fp16 subnormal's bits at the bottom of the sum's mantissa, and the fp32 addition rounds
    // them to nearest even.
    const float sum = std::bit_cast<float>(u) + 0.5f;
    bits = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(sum) - std::bit_cast<std::uint32_t>(0.5f));
  } else {
    const std::uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + odd;  // rebias, round half to even
    bits = static_cast<std::uint16_t>(u >> 13);  // a carry past 30 exponents gives 0x7c00, inf
  }
  return static_cast<std::uint16_t>(bits | (sign >> 16));
}

void widen(ElementType element, const std::byte* from, std::span<float> to) {
  if (!is_16_bit(element)) throw std::invalid_argument("widen: " + element_type_name(element) + " is not a 16-bit type");
  for (std::size_t i = 0; i < to.size(); ++i) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, from + 2 * i, 2);
    to[i] = element == ElementType::Bf16 ? bf16_to_float(bits) : fp16_to_float(bits);
  }
}

void narrow(ElementType element, std::span<const float> from, std::byte* to) {
  if (!is_16_bit(element)) throw std::invalid_argument("narrow: " + element_type_name(element) + " is not a 16-bit type");
  for (std::size_t i = 0; i < from.size(); ++i) {
    const std::uint16_t bits = element == ElementType::Bf16 ? float_to_bf16(from[i]) : float_to_fp16(from[i]);
    std::memcpy(to + 2 * i, &bits, 2);
  }
}

}  // namespace shardscope::exec
