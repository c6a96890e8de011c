// printable() (core/untrusted_text.h): what an attacker's name can make a terminal or a JSON report do, it cannot.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/untrusted_text.h"

namespace shardscope {
namespace {

TEST(UntrustedText, EscapeSequencesAndControlsAreShownNotObeyed) {
  EXPECT_EQ(printable("fc0\x1b[31mred\x1b[0m"), "fc0\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\x0dd");
  EXPECT_EQ(printable("\xc2\x9b" "2J"), "\\u009b2J") << "C1's CSI is an escape too";
  EXPECT_EQ(printable("layer · Ψ ≤ 2"), "layer · Ψ ≤ 2") << "valid UTF-8 passes";
}

TEST(UntrustedText, BrokenUtf8BecomesHexAndTheResultIsValidJson) {
  const std::string cut = std::string("é") .substr(0, 1);  // half of a two-byte character
  const std::string text = printable("1 " + cut + " == 1");
  EXPECT_EQ(text, "1 \\xc3 == 1");
  EXPECT_NO_THROW(nlohmann::json(text).dump());
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate is not UTF-8";
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80") << "past U+10FFFF";
}

TEST(UntrustedText, LongTextIsCutAtACharacterWithTheRestCounted) {
  const std::string long_name(1'000'000, 'x');
  const std::string shown = printable(long_name, 16);
  EXPECT_EQ(shown, std::string(16, 'x') + "… (999984 more bytes)");
  // Never in the middle of a character: "Ψ" is two bytes.
  EXPECT_EQ(printable("abΨΨ", 3), "ab… (4 more bytes)");
}

}  // namespace
}  // namespace shardscope
