// drawable_text (gui/logic/drawable_text.h): what the window draws from files stays within one ImGui text item.
// The limit is ImGui 1.86's: 4 vertices reserved per byte of a wrapped item, at most 65,536 per draw command.
#include <gtest/gtest.h>

#include <string>

#include "gui/logic/caption.h"
#include "gui/logic/drawable_text.h"

namespace shardscope::gui {
namespace {

TEST(DrawableText, ShortTextIsKept) {
  EXPECT_EQ(drawable_text("Each rank holds 1/n of Adam's state · 2 × 4 = 8"), "Each rank holds 1/n of Adam's state · 2 × 4 = 8");
}

// A 17,000-byte word (68,000 vertices in ImGui, which asserted) is cut to 8,192 bytes and says how much was left out.
TEST(DrawableText, ALongWordIsCutBelowImGuisVertexLimit) {
  const std::string cut = drawable_text(std::string(17'000, 'x'));
  EXPECT_EQ(cut, std::string(8'192, 'x') + "… (8808 more bytes)");
  EXPECT_LT(cut.size() * 4, std::size_t{1} << 16);
}

// The cut falls before a character, never inside one: "é" (2 bytes) straddling byte 8,192 goes whole.
TEST(DrawableText, TheCutKeepsUtf8Whole) {
  const std::string text = std::string(8'191, 'a') + "\xC3\xA9" + std::string(10, 'b');
  EXPECT_EQ(drawable_text(text), std::string(8'191, 'a') + "… (12 more bytes)");
}

TEST(DrawableText, ControlCharactersAreShownEscaped) {
  EXPECT_EQ(drawable_text("fc1\x1b[31m forward"), "fc1\\x1b[31m forward");
}

// A phase's name is the trace's text: the memory chart draws it with AddText, which a 20,000-byte name overflowed;
// cut as a label (160 bytes), since it names a line on the chart.
TEST(DrawableText, PhaseNamesFromATraceAreCut) {
  EXPECT_EQ(phase_display_name(std::string(20'000, 'p')), std::string(160, 'p') + "… (19840 more bytes)");
  EXPECT_EQ(phase_short_name("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
  EXPECT_EQ(phase_display_name("before_step"), "after backward");
}

}  // namespace
}  // namespace shardscope::gui
