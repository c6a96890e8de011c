// The UI font: DejaVu Sans rasterised at the chosen scale (crisp on projectors), the built-in font as fallback.
#pragma once
#include <string>

namespace shardscope::gui {

// Rebuilds ImGui's font atlas at `scale` (1.0 = 15 px). Returns the font file used, or "" for the built-in
// bitmap font when no TrueType font was found. Call before the backend creates its font texture, or call
// ImGui_ImplOpenGL3_DestroyFontsTexture() first.
std::string load_ui_font(float scale);

}  // namespace shardscope::gui
