// Presenter mode's own look: the title colour, and text wrapped only at spaces (so "9.28 GiB" stays whole).
#pragma once
#include <imgui.h>

#include <string>

namespace shardscope::gui {

inline const ImVec4 kTitleColour(0.0f, 0.30f, 0.55f, 1.0f);

// Wraps at spaces only: ImGui 1.86 also breaks after '.' and ',', which split "9.28 GiB" and "4,004,352 B" across
// lines on the projector.
void text_wrapped_at_spaces(const std::string& text, float width);

}  // namespace shardscope::gui
