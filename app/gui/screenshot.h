// Saving what the window shows as a PNG (--screenshot, the screenshot key). Needs a current OpenGL context.
#pragma once
#include <string>

namespace shardscope::gui {

// Reads the back buffer (call after rendering, before swapping), flips it upright and writes a PNG.
// Throws std::runtime_error naming the path when the file cannot be written.
void save_back_buffer_png(const std::string& path, int width, int height);

}  // namespace shardscope::gui
