// Checks a screenshot's pixels: each given colour must cover at least a given number of pixels. Exit 0 when all
// do, 1 otherwise (printing the counts), 2 on bad usage. The category colours come from UI.md, not from the GUI's
// code, so a chart drawn in the wrong colour (or not drawn: an empty shader gives a blank image) fails.
// Usage: check_screenshot OUT.png [--region X0,Y0,X1,Y1] 0072B2:2000 009E73:2000 ...
// --region counts only pixels inside that rectangle (pixels, top-left origin), e.g. the memory panel.
#include <stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s image.png RRGGBB:MIN_PIXELS...\n", argv[0]);
    return 2;
  }
  int width = 0, height = 0, channels = 0;
  unsigned char* pixels = stbi_load(argv[1], &width, &height, &channels, 3);
  if (!pixels) {
    std::fprintf(stderr, "%s: cannot read the PNG (%s)\n", argv[1], stbi_failure_reason());
    return 1;
  }
  int x0 = 0, y0 = 0, x1 = width, y1 = height;
  int first = 2;
  if (argc > 3 && std::string(argv[2]) == "--region") {
    if (std::sscanf(argv[3], "%d,%d,%d,%d", &x0, &y0, &x1, &y1) != 4 || x0 < 0 || y0 < 0 || x1 > width || y1 > height) {
      std::fprintf(stderr, "bad region '%s' for a %dx%d image\n", argv[3], width, height);
      return 2;
    }
    first = 4;
  }
  bool ok = true;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto colon = arg.find(':');
    if (colon != 6) {
      std::fprintf(stderr, "bad colour argument '%s'\n", argv[i]);
      return 2;
    }
    const unsigned long rgb = std::strtoul(arg.substr(0, 6).c_str(), nullptr, 16);
    const long wanted = std::strtol(arg.c_str() + 7, nullptr, 10);
    long count = 0;
    for (long p = 0; p < static_cast<long>(width) * height; ++p) {
      const long x = p % width, y = p / width;
      if (x < x0 || x >= x1 || y < y0 || y >= y1) continue;
      const unsigned char* px = pixels + p * 3;
      // One step of tolerance per channel: the GPU's blending may round.
      if (std::abs(px[0] - static_cast<int>((rgb >> 16) & 0xFF)) <= 1 && std::abs(px[1] - static_cast<int>((rgb >> 8) & 0xFF)) <= 1 &&
          std::abs(px[2] - static_cast<int>(rgb & 0xFF)) <= 1)
        ++count;
    }
    std::printf("#%06lX: %ld pixels (want at least %ld)\n", rgb, count, wanted);
    ok &= count >= wanted;
  }
  stbi_image_free(pixels);
  std::printf("%dx%d %s\n", width, height, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
