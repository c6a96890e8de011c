// drawable_text(): printable() with the window's length limit (drawable_text.h).
#include "gui/logic/drawable_text.h"

#include "core/untrusted_text.h"

namespace shardscope::gui {

std::string drawable_text(std::string_view text) { return printable(text, kMaxDrawnTextBytes); }

}  // namespace shardscope::gui
