// The frame checks. Thresholds are in pixels and deliberately small: two texts whose glyphs share more than a few
// pixels are unreadable where they meet; a fill of a palette colour bigger than a few pixels is something a student
// is meant to read.
#include "gui/audit/frame_audit.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "gui/logic/palette.h"

namespace shardscope::gui::audit {

namespace {

constexpr float kOverlapPixels = 4.0f;   // glyphs of two texts sharing more than this many square pixels overprint
constexpr float kFillPixels = 24.0f;     // a palette-coloured fill at least this big must be in a legend
constexpr unsigned kOpaque = 250;        // alpha at or above which a fill shows its colour as the legend does

std::string where(const DrawnText& t) {
  char text[96];
  std::snprintf(text, sizeof text, " at (%.0f, %.0f)-(%.0f, %.0f) in '%s'", t.box.x0, t.box.y0, t.box.x1, t.box.y1, t.window.c_str());
  return text;
}

std::string quoted(const std::string& s) { return "'" + (s.size() > 60 ? s.substr(0, 57) + "..." : s) + "'"; }

bool glyphs_overlap(const DrawnText& a, const DrawnText& b) {
  if (intersection(a.box, b.box).empty()) return false;
  for (const Box& ga : a.glyphs)
    for (const Box& gb : b.glyphs) {
      const Box i = intersection(ga, gb);
      if (!i.empty() && i.width() * i.height() > kOverlapPixels && i.width() > 1.5f && i.height() > 1.5f) return true;
    }
  return false;
}

struct PaletteEntry {
  std::uint32_t rgb;
  std::string label;
};

std::vector<PaletteEntry> palette() {
  std::vector<PaletteEntry> entries;
  for (Category c : kStackingOrder) entries.push_back({category_rgb(c), std::string(category_label(c))});
  for (TimelineKind k : kAllTimelineKinds)
    if (k != TimelineKind::Other) entries.push_back({timeline_rgb(k), timeline_label(k)});
  return entries;
}

std::uint32_t rgb_of(std::uint32_t abgr) { return ((abgr & 0xFF) << 16) | (abgr & 0xFF00) | ((abgr >> 16) & 0xFF); }
unsigned alpha_of(std::uint32_t abgr) { return abgr >> 24; }

bool named_on_screen(const FrameContents& frame, const std::string& label) {
  return std::any_of(frame.texts.begin(), frame.texts.end(), [&](const DrawnText& t) { return t.text.find(label) != std::string::npos; });
}

}  // namespace

std::vector<Problem> audit_frame(const FrameContents& frame, const AuditRules& rules) {
  std::vector<Problem> problems;
  for (const DrawnText& t : frame.texts)
    if (t.cut_by_window) problems.push_back({"cut", quoted(t.text) + " runs past the edge of its panel" + where(t)});
  for (std::size_t i = 0; i < frame.texts.size(); ++i)
    for (std::size_t j = i + 1; j < frame.texts.size(); ++j)
      if (glyphs_overlap(frame.texts[i], frame.texts[j]))
        problems.push_back({"overlap", quoted(frame.texts[i].text) + where(frame.texts[i]) + " and " + quoted(frame.texts[j].text) +
                                           where(frame.texts[j]) + " are drawn over each other"});
  for (const std::string& hidden : rules.hidden) {
    if (hidden.empty()) continue;
    for (const DrawnText& t : frame.texts)
      if (t.text.find(hidden) != std::string::npos)
        problems.push_back({"answer shown", quoted(t.text) + where(t) + " shows " + quoted(hidden) + " before the answer is revealed"});
  }
  if (rules.legend) {
    std::map<std::string, float> shown, faded;  // label → the largest fill of that colour
    for (const DrawnFill& f : frame.fills) {
      const float area = f.box.empty() ? 0 : f.box.width() * f.box.height();
      if (area < kFillPixels) continue;
      for (const PaletteEntry& e : palette()) {
        if (rgb_of(f.colour) != e.rgb) continue;
        auto& largest = alpha_of(f.colour) >= kOpaque ? shown[e.label] : faded[e.label];
        largest = std::max(largest, area);
      }
    }
    for (const auto& [label, area] : shown)
      if (!named_on_screen(frame, label))
        problems.push_back({"colour without legend", "the colour of '" + label + "' is on screen (" + std::to_string(static_cast<int>(area)) +
                                                         " px) but no legend on screen names it"});
    for (const auto& [label, area] : faded)
      problems.push_back({"faded colour", "'" + label + "' is drawn faded (" + std::to_string(static_cast<int>(area)) +
                                              " px): a shade no legend shows, read as another category"});
  }
  return problems;
}

}  // namespace shardscope::gui::audit
