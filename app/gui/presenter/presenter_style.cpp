// Text wrapped at spaces for the projector; a line (a word longer than the width) cut to what ImGui can draw.
#include "gui/presenter/presenter_style.h"
#include "gui/logic/drawable_text.h"

namespace shardscope::gui {

void text_wrapped_at_spaces(const std::string& text, float width) {
  std::string line;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    const std::string longer = line.empty() ? word : line + " " + word;
    if (!line.empty() && ImGui::CalcTextSize(longer.c_str()).x > width) {
      ImGui::TextUnformatted(drawable_text(line).c_str());
      line = word;
    } else {
      line = longer;
    }
    start = end + 1;
  }
  if (!line.empty()) ImGui::TextUnformatted(drawable_text(line).c_str());
}

}  // namespace shardscope::gui
