// Back buffer → PNG with stb_image_write (compiled into Debian's libstb; STACK.md).
#include "gui/screenshot.h"

#include <GL/gl.h>
#include <stb_image_write.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace shardscope::gui {

void save_back_buffer_png(const std::string& path, int width, int height) {
  const std::size_t row = static_cast<std::size_t>(width) * 3;
  std::vector<unsigned char> pixels(row * static_cast<std::size_t>(height));
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  std::vector<unsigned char> upright(pixels.size());
  for (int y = 0; y < height; ++y)  // OpenGL's origin is bottom-left; PNG rows go top-down
    std::copy_n(pixels.data() + row * static_cast<std::size_t>(height - 1 - y), row, upright.data() + row * static_cast<std::size_t>(y));
  if (!stbi_write_png(path.c_str(), width, height, 3, upright.data(), static_cast<int>(row)))
    throw std::runtime_error(path + ": cannot write the PNG screenshot");
}

}  // namespace shardscope::gui
