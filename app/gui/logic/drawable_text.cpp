// drawable_text(), drawable_label(): printable() with the window's length limits (drawable_text.h).
#include "gui/logic/drawable_text.h"

#include "core/untrusted_text.h"

namespace shardscope::gui {

std::string drawable_text(std::string_view text) { return printable(text, kMaxDrawnTextBytes); }

std::string drawable_label(std::string_view text) { return printable(text, kMaxLabelBytes); }

}  // namespace shardscope::gui
