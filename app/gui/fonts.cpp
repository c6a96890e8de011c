// Finds DejaVu Sans (Debian's fonts-dejavu-core) and loads it into ImGui's atlas at the requested size.
#include "gui/fonts.h"

#include <imgui.h>

#include <cstdlib>
#include <filesystem>

namespace shardscope::gui {

namespace {
constexpr float kBasePixels = 15.0f;

std::string find_font() {
  if (const char* env = std::getenv("SHARDSCOPE_FONT"); env && std::filesystem::exists(env)) return env;
  for (const char* path : {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf"})
    if (std::filesystem::exists(path)) return path;
  return "";
}
}  // namespace

std::string load_ui_font(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const std::string path = find_font();
  ImFont* font = nullptr;
  if (!path.empty()) {
    // Latin-1, Greek (Ψ in the ZeRO notes), general punctuation (– — … ‰), arrows, math (− ≈ ≤ ≥), transport
    // symbols and squares: every character the window prints, so none shows as "?".
    static const ImWchar ranges[] = {0x0020, 0x00FF, 0x0370, 0x03FF, 0x2010, 0x2044, 0x2190, 0x21FF, 0x2200, 0x2265,
                                     0x23EE, 0x23F8, 0x25A0, 0x25FF, 0x2713, 0x2717, 0};
    font = io.Fonts->AddFontFromFileTTF(path.c_str(), kBasePixels * scale, nullptr, ranges);
  }
  if (!font) {
    ImFontConfig config;
    config.SizePixels = 13.0f * scale;
    io.Fonts->AddFontDefault(&config);
    return "";
  }
  return path;
}

}  // namespace shardscope::gui
