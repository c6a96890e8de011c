// bf16 / fp16 conversions against values worked out by hand from the formats (IEEE 754 binary16: 1 sign, 5
// exponent, 10 fraction bits; bfloat16: fp32's top 16 bits), and the round trip of every 16-bit pattern.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "exec/sixteen_bit.h"

namespace shardscope::exec {
namespace {

TEST(SixteenBit, Fp16ValuesByHand) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);                  // exponent 15, fraction 0
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);              // the largest finite fp16
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7bff);              // below the midpoint 65520: rounds down
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);              // the midpoint rounds to even: past the top, inf
  EXPECT_EQ(float_to_fp16(1e6f), 0x7c00);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -14)), 0x0400);  // the smallest normal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // half of it: a tie, to even (0)
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 subnormal steps: a tie, to even (2)
  EXPECT_EQ(float_to_fp16(1.0f / 3.0f), 0x3555);           // 0.333251953125, the nearest
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // halfway 1 and 1 + 2^-10: even (1)
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);      // halfway 1 + 2^-10 and 1 + 2^-9: even
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(std::nanf("")))));
  EXPECT_EQ(fp16_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(fp16_to_float(0x8000)));
}

TEST(SixteenBit, Bf16ValuesByHand) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f / 3.0f), 0x3eab);  // 0x3eaaaaab: the dropped half 0xaaab is above 0x8000, up
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // a tie with an even kept part: down
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // a tie with an odd kept part: up
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up past the largest: inf
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(0x3eab), std::bit_cast<float>(0x3eab0000u));
}

// Every finite 16-bit value is exact in fp32 and comes back to its own bits; NaNs stay NaN.
TEST(SixteenBit, EveryPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const float half = fp16_to_float(b), brain = bf16_to_float(b);
    if (std::isnan(half)) EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(half)))) << bits;
    else ASSERT_EQ(float_to_fp16(half), b) << bits;
    if (std::isnan(brain)) EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(brain)))) << bits;
    else ASSERT_EQ(float_to_bf16(brain), b) << bits;
  }
}

// Rounding picks the nearer neighbour: between consecutive fp16 values a and b, a float below the midpoint goes to
// a, above it to b (checked for every positive finite fp16 pair).
TEST(SixteenBit, Fp16RoundsToTheNearerNeighbour) {
  for (std::uint16_t bits = 0; bits < 0x7bff; ++bits) {
    const float a = fp16_to_float(bits), b = fp16_to_float(static_cast<std::uint16_t>(bits + 1));
    const float mid = a + (b - a) / 2;  // exact: a and b differ in their last fp16 bit, far inside fp32
    ASSERT_EQ(float_to_fp16(std::nextafter(mid, a)), bits) << bits;
    ASSERT_EQ(float_to_fp16(std::nextafter(mid, b)), bits + 1) << bits;
    ASSERT_EQ(float_to_fp16(mid), bits % 2 == 0 ? bits : bits + 1) << bits;
  }
}

TEST(SixteenBit, BuffersWidenAndNarrow) {
  const float values[] = {1.0f, -0.5f, 1.0f / 3.0f, 65504.0f};
  std::byte bits[8];
  narrow(ElementType::Fp16, values, bits);
  float back[4];
  widen(ElementType::Fp16, bits, back);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -0.5f);
  EXPECT_EQ(back[2], 0.333251953125f);
  EXPECT_EQ(back[3], 65504.0f);
  EXPECT_THROW(widen(ElementType::Fp32, bits, back), std::invalid_argument);
}

}  // namespace
}  // namespace shardscope::exec
