// Compares two screenshots pixel by pixel: prints how many pixels differ and where (bounding box), outside the
// rectangles given with --ignore. Exit 0 when none differ, 1 otherwise (or when the sizes differ), 2 on bad usage.
// The follow-live tests use it to show that a run followed to its end and the same run replayed draw the same frame.
// Usage: compare_screenshots A.png B.png [--ignore X0,Y0,X1,Y1]...   (pixels, top-left origin, X1/Y1 exclusive)
#include <stb_image.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {
struct Rect {
  int x0, y0, x1, y1;
  bool contains(int x, int y) const { return x >= x0 && x < x1 && y >= y0 && y < y1; }
};
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s A.png B.png [--ignore X0,Y0,X1,Y1]...\n", argv[0]);
    return 2;
  }
  std::vector<Rect> ignored;
  for (int i = 3; i < argc; ++i) {
    Rect r{};
    if (std::strcmp(argv[i], "--ignore") != 0 || i + 1 >= argc ||
        std::sscanf(argv[i + 1], "%d,%d,%d,%d", &r.x0, &r.y0, &r.x1, &r.y1) != 4) {
      std::fprintf(stderr, "bad argument '%s' (expected --ignore X0,Y0,X1,Y1)\n", argv[i]);
      return 2;
    }
    ignored.push_back(r);
    ++i;
  }
  int wa = 0, ha = 0, wb = 0, hb = 0, channels = 0;
  unsigned char* a = stbi_load(argv[1], &wa, &ha, &channels, 3);
  unsigned char* b = stbi_load(argv[2], &wb, &hb, &channels, 3);
  if (!a || !b) {
    std::fprintf(stderr, "cannot read %s\n", !a ? argv[1] : argv[2]);
    return 1;
  }
  if (wa != wb || ha != hb) {
    std::printf("sizes differ: %dx%d and %dx%d\n", wa, ha, wb, hb);
    return 1;
  }
  long differing = 0, ignored_differing = 0;
  int x0 = wa, y0 = ha, x1 = -1, y1 = -1;
  for (int y = 0; y < ha; ++y)
    for (int x = 0; x < wa; ++x) {
      const long at = (static_cast<long>(y) * wa + x) * 3;
      if (std::memcmp(a + at, b + at, 3) == 0) continue;
      if (std::any_of(ignored.begin(), ignored.end(), [&](const Rect& r) { return r.contains(x, y); })) {
        ++ignored_differing;
        continue;
      }
      ++differing;
      x0 = std::min(x0, x);
      y0 = std::min(y0, y);
      x1 = std::max(x1, x + 1);
      y1 = std::max(y1, y + 1);
    }
  stbi_image_free(a);
  stbi_image_free(b);
  std::printf("%ld pixels differ (%ld more in ignored rectangles)", differing, ignored_differing);
  if (differing > 0) std::printf(", within %d,%d,%d,%d", x0, y0, x1, y1);
  std::printf("\n");
  return differing == 0 ? 0 : 1;
}
