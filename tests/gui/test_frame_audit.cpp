// The frame audit (app/gui/audit/): the reader decodes what ImGui really drew (text placed on purpose: over other
// text, past a window's edge, inside a nested clip) and each check finds the problem it is for, in frames made to
// have it, and stays quiet on a frame without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gui/audit/frame_audit.h"
#include "gui/logic/palette.h"
#include "headless_imgui.h"

namespace shardscope::gui::audit {
namespace {

const DrawnText* find_text(const FrameContents& frame, const std::string& text) {
  for (const DrawnText& t : frame.texts)
    if (t.text == text) return &t;
  return nullptr;
}

std::size_t count_kind(const std::vector<Problem>& problems, const std::string& kind) {
  return static_cast<std::size_t>(std::count_if(problems.begin(), problems.end(), [&](const Problem& p) { return p.kind == kind; }));
}

// Draws into a fixed 400 x 200 window at the top left and returns what the reader makes of the frame.
template <class Draw>
FrameContents drawn(testing::HeadlessImGui& imgui, Draw&& draw) {
  imgui.frame([&] {
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(ImVec2(400, 200));
    ImGui::Begin("audited", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
    draw();
    ImGui::End();
  });
  return read_frame(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts->Fonts[0]);
}

TEST(FrameAudit, ReadsTextAsDrawnAndFindsOverlapsAndCuts) {
  testing::HeadlessImGui imgui;
  const FrameContents frame = drawn(imgui, [] {
    ImGui::SetCursorPos(ImVec2(10, 10));
    ImGui::TextUnformatted("after forward");
    ImGui::SetCursorPos(ImVec2(40, 10));  // drawn over the first, as two phase labels at nearby markers were
    ImGui::TextUnformatted("after backward");
    ImGui::SetCursorPos(ImVec2(330, 60));
    ImGui::TextUnformatted("communication buffers");  // runs past the window's right edge (400)
    ImGui::SetCursorPos(ImVec2(10, 100));
    ImGui::TextUnformatted("8,008,704 B fits");
    // A label cut at its own box on purpose (a timeline op): a nested clip, not the window's edge.
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->PushClipRect(ImVec2(10, 140), ImVec2(40, 170), true);
    draw->AddText(ImVec2(10, 145), IM_COL32(0, 0, 0, 255), "fc0 forward");
    draw->PopClipRect();
  });
  ASSERT_NE(find_text(frame, "8,008,704 B fits"), nullptr) << "the reader joins glyphs and spaces back into the text";
  const DrawnText* cut = nullptr;
  for (const DrawnText& t : frame.texts)
    if (t.text.rfind("commun", 0) == 0) cut = &t;
  ASSERT_NE(cut, nullptr);
  EXPECT_TRUE(cut->cut_by_window);
  const DrawnText* elided = nullptr;
  for (const DrawnText& t : frame.texts)
    if (t.text.rfind("fc0", 0) == 0) elided = &t;
  ASSERT_NE(elided, nullptr);
  EXPECT_TRUE(elided->elided);
  EXPECT_FALSE(elided->cut_by_window);

  const std::vector<Problem> problems = audit_frame(frame, {});
  EXPECT_EQ(count_kind(problems, "overlap"), 1u) << "exactly the two phase labels";
  EXPECT_EQ(count_kind(problems, "cut"), 1u) << "the label past the edge; the op label cut at its own box is allowed";
}

TEST(FrameAudit, FindsAnAnswerShownBeforeItIsRevealed) {
  testing::HeadlessImGui imgui;
  const FrameContents frame = drawn(imgui, [] { ImGui::TextUnformatted("allocated is now 8,008,704 B"); });
  AuditRules rules;
  rules.hidden = {"8,008,704 B", "8008704"};
  EXPECT_EQ(count_kind(audit_frame(frame, rules), "answer shown"), 1u);
  rules.hidden = {"4,004,352 B"};
  EXPECT_EQ(count_kind(audit_frame(frame, rules), "answer shown"), 0u);
}

// Fills are made by hand: a palette colour without its label on screen, the same with the label, and a faded one.
TEST(FrameAudit, EveryPaletteColourOnScreenNeedsItsLegendAndNoneMayBeFaded) {
  const std::uint32_t gradients = to_imgui_color(category_rgb(Category::Gradients));
  FrameContents frame;
  frame.fills.push_back({{0, 0, 20, 20}, gradients, "chart"});
  std::vector<Problem> problems = audit_frame(frame, {});
  EXPECT_EQ(count_kind(problems, "colour without legend"), 1u);

  DrawnText legend;
  legend.text = "gradients";
  frame.texts.push_back(legend);
  EXPECT_EQ(count_kind(audit_frame(frame, {}), "colour without legend"), 0u);

  frame.fills.push_back({{0, 30, 20, 50}, to_imgui_color(category_rgb(Category::Parameters), 70), "chart"});
  problems = audit_frame(frame, {});
  EXPECT_EQ(count_kind(problems, "faded colour"), 1u) << "a translucent palette colour reads as another shade";
  // Below the size a student reads (a legend's thin border, an anti-aliased edge), a fill is not counted.
  FrameContents tiny;
  tiny.fills.push_back({{0, 0, 3, 3}, gradients, "chart"});
  EXPECT_TRUE(audit_frame(tiny, {}).empty());
}

}  // namespace
}  // namespace shardscope::gui::audit
