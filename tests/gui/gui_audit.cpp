// Audits every step of every lesson as presenter mode draws it (no display needed: ImGui's draw data is read back,
// app/gui/audit/): each step before and after its answer is revealed, at a projector's size and font scale. A problem
// is printed a line each (lesson, step, state, size: what and where); exit 1 when there is any, 0 when none, 2 on bad
// usage or a lesson directory that cannot be read.
// Usage: gui_audit [--lessons-dir DIR] [--lesson ID]... [--size WxH] [--font-scale X]
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "gui/audit/frame_audit.h"
#include "gui/fonts.h"
#include "gui/logic/highlight.h"
#include "gui/logic/palette.h"
#include "gui/logic/rank_group.h"
#include "gui/panels/memory_panel.h"
#include "gui/presenter/presenter_layout.h"
#include "gui/window/shardscope_ui.h"

namespace {

using namespace shardscope;
using namespace shardscope::gui;

constexpr int kPageDown = 267, kKeyP = 80;

struct Settings {
  std::string lessons_dir;
  std::vector<std::string> lessons;
  float width = 1920, height = 1080, font_scale = 2.0f;
};

class Headless {
 public:
  Headless(float width, float height) {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(width, height);
    io.DeltaTime = 1.0f / 60.0f;
    io.KeyMap[ImGuiKey_PageDown] = kPageDown;
    // As the OpenGL 3 backend says of itself: a draw list may pass 65,536 vertices (8 charts of a long run do).
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  }
  ~Headless() { ImGui::DestroyContext(); }

  // One frame of the window; the font follows the window's scale as main.cpp's loop does.
  void frame(ShardScopeUi& ui, int key = -1) {
    if (ui.font_scale() != scale_) {
      scale_ = ui.font_scale();
      load_ui_font(scale_);
      unsigned char* pixels = nullptr;
      int w = 0, h = 0;
      ImGui::GetIO().Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    }
    ImGuiIO& io = ImGui::GetIO();
    if (key >= 0) io.KeysDown[key] = true;
    ImGui::NewFrame();
    ui.frame();
    ImGui::Render();
    if (key >= 0) io.KeysDown[key] = false;
  }

  void settle(ShardScopeUi& ui) {
    for (int i = 0; i < 12000 && (!ui.idle() || ui.deck().evaluating()); ++i) {
      frame(ui);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int i = 0; i < 4; ++i) frame(ui);  // the run collected, the anchor placed, layouts sized from the last frame
  }

 private:
  float scale_ = -1;
};

// Every group of ranks must have its chart and its timeline row on screen (labelled, whole): a projector cannot scroll.
std::vector<std::string> ranks_off_screen(const ShardScopeUi& ui, const audit::FrameContents& frame) {
  std::vector<std::string> missing;
  if (showing_ring_demo(ui.deck())) return missing;
  std::vector<RankGroup> groups;
  ui.session().store()->read([&](const TraceData& data) { groups = group_identical_ranks(data); });
  if (groups.size() > kMaxCharts) return missing;  // past that the memory panel draws one band for all ranks
  for (const char* panel : {"/charts", "/lanes"}) {
    for (const RankGroup& group : groups) {
      const bool shown = std::any_of(frame.texts.begin(), frame.texts.end(), [&](const audit::DrawnText& t) {
        return t.text == group.label && t.window.find(panel) != std::string::npos && !t.cut_by_window;
      });
      if (!shown) missing.push_back(std::string(panel[1] == 'c' ? "memory chart" : "timeline row") + " of " + group.label + " is not on screen");
    }
  }
  return missing;
}

// A step's focus must show (issue "Classroom II"): its category's band at least a quarter of its chart's height
// somewhere, its span at least a fifth of the chart's width. Read from the fills the memory charts drew: each chart's
// white background, the band's columns in the category's colour, the span's shade.
std::vector<std::string> focus_too_small(const lessons::LessonStep& step, const audit::FrameContents& frame) {
  std::vector<std::string> found;
  std::vector<audit::Box> charts;
  for (const audit::DrawnFill& f : frame.fills)
    if (f.window.find("/charts") != std::string::npos && (f.colour & 0xFFFFFFu) == 0xFFFFFFu && f.box.width() > 100 &&
        f.box.height() > 10)
      charts.push_back(f.box);
  if (charts.empty()) return found;
  auto inside = [](const audit::Box& b, const audit::Box& chart) {
    return b.x0 >= chart.x0 - 1 && b.x1 <= chart.x1 + 1 && b.y0 >= chart.y0 - 1 && b.y1 <= chart.y1 + 1;
  };
  // While comparing, the charts keep the scale both runs' totals need (the outline is the point then): the band shows
  // by its place (stacked first) and the hatching of the rest, not by its height.
  if (step.highlight.category && step.compare.empty()) {
    const std::uint32_t colour = to_imgui_color(category_rgb(*step.highlight.category));
    float best = 0;
    for (const audit::Box& chart : charts) {
      std::map<int, float> column;  // x → the band's height in that pixel column
      for (const audit::DrawnFill& f : frame.fills)
        if (f.colour == colour && f.window.find("/charts") != std::string::npos && inside(f.box, chart))
          column[static_cast<int>(f.box.x0)] += f.box.height();
      for (const auto& [x, height] : column) best = std::max(best, height / chart.height());
    }
    if (best < 0.25f)
      found.push_back("the focused band (" + std::string(category_label(*step.highlight.category)) + ") is at most " +
                      std::to_string(static_cast<int>(best * 100)) + " % of its chart's height (wants 25 %)");
  }
  if (!step.highlight.from.empty()) {
    const std::uint32_t shade = to_imgui_color(kHighlightSpanRgb);
    float best = 0;
    // The shade may be drawn a column at a time (above the stack, when a band is focused): its width is the union of
    // the shaded x ranges in the chart.
    for (const audit::Box& chart : charts) {
      std::vector<std::pair<float, float>> ranges;
      for (const audit::DrawnFill& f : frame.fills)
        if (f.colour == shade && inside(f.box, chart)) ranges.emplace_back(f.box.x0, f.box.x1);
      std::sort(ranges.begin(), ranges.end());
      float covered = 0, reach = -1e9f;
      for (const auto& [a, b] : ranges) {
        if (b <= reach) continue;
        covered += b - std::max(a, reach);
        reach = b;
      }
      best = std::max(best, covered / chart.width());
    }
    if (best < 0.2f)
      found.push_back("the focused span (" + step.highlight.from + " to " + step.highlight.to + ") is " +
                      std::to_string(static_cast<int>(best * 100)) + " % of the chart's width (wants 20 %)");
  }
  return found;
}

int audit_lesson(const Settings& settings, const std::string& id, int& problems) {
  Headless imgui(settings.width, settings.height);
  GuiOptions options;
  options.presenter = true;
  options.lesson = id;
  options.lessons_dir = settings.lessons_dir;
  options.font_scale = settings.font_scale;
  options.font_scale_set = true;
  ShardScopeUi ui(options);
  imgui.settle(ui);
  if (!ui.deck().lesson()) {
    std::cerr << "gui_audit: lesson '" << id << "' did not open" << (ui.deck().error().empty() ? "" : ": " + ui.deck().error()) << "\n";
    return 2;
  }
  char size[48];
  std::snprintf(size, sizeof size, "%.0fx%.0f@%.2g", settings.width, settings.height, settings.font_scale);
  const int steps = ui.deck().step_count();
  for (int s = 0; s < steps; ++s) {
    for (const bool revealed : {false, true}) {
      audit::AuditRules rules;
      const lessons::LessonStep& step = *ui.deck().step();
      if (!revealed && step.predict && ui.deck().evaluated()) {
        try {
          rules.hidden = ui.deck().evaluated()->answer_giveaways(*step.predict);
        } catch (const std::exception& e) {
          std::cout << id << " step " << s + 1 << ": the answer cannot be evaluated: " << e.what() << "\n";
          ++problems;
        }
      }
      const audit::FrameContents frame = audit::read_frame(*ImGui::GetDrawData(), *ImGui::GetIO().Fonts->Fonts[0]);
      std::vector<audit::Problem> found = audit::audit_frame(frame, rules);
      if (std::getenv("GUI_AUDIT_DUMP"))
        for (const auto& t : frame.texts)
          std::cout << "  text '" << t.text << "' " << t.box.x0 << "," << t.box.y0 << "-" << t.box.x1 << "," << t.box.y1
                    << (t.cut_by_window ? " cut" : "") << (t.elided ? " elided" : "") << " in " << t.window << "\n";
      for (std::string& missing : ranks_off_screen(ui, frame)) found.push_back({"off screen", std::move(missing)});
      if (!showing_ring_demo(ui.deck()))
        for (std::string& small : focus_too_small(step, frame)) found.push_back({"focus too small", std::move(small)});
      for (const audit::Problem& p : found) {
        std::cout << id << " step " << s + 1 << (revealed ? " revealed " : " hidden ") << size << ": " << p.kind << ": " << p.detail << "\n";
        ++problems;
      }
      if (!step.predict) break;  // nothing to reveal: the hidden state is the only one
      imgui.frame(ui, kKeyP);    // P reveals (and, on the second pass, hides again)
      imgui.settle(ui);
    }
    if (ui.deck().revealed) {
      imgui.frame(ui, kKeyP);
      imgui.settle(ui);
    }
    if (s + 1 < steps) {
      imgui.frame(ui, kPageDown);
      imgui.settle(ui);
    }
  }
  return 0;
}

bool parse(int argc, char** argv, Settings& settings) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--lessons-dir" && has_value) settings.lessons_dir = argv[++i];
    else if (arg == "--lesson" && has_value) settings.lessons.push_back(argv[++i]);
    else if (arg == "--size" && has_value && std::sscanf(argv[++i], "%fx%f", &settings.width, &settings.height) == 2) continue;
    else if (arg == "--font-scale" && has_value) settings.font_scale = std::strtof(argv[++i], nullptr);
    else return false;
  }
  return settings.width >= 320 && settings.height >= 240 && settings.font_scale > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  if (!parse(argc, argv, settings)) {
    std::cerr << "usage: gui_audit [--lessons-dir DIR] [--lesson ID]... [--size WxH] [--font-scale X]\n";
    return 2;
  }
  if (settings.lessons.empty()) {
    LessonDeck deck;
    deck.load(settings.lessons_dir.empty() ? lessons::default_lessons_dir() : settings.lessons_dir);
    if (!deck.error().empty()) {
      std::cerr << "gui_audit: " << deck.error() << "\n";
      return 2;
    }
    for (const auto& lesson : deck.lessons()) settings.lessons.push_back(lesson.id);
  }
  int problems = 0;
  for (const std::string& id : settings.lessons)
    if (const int code = audit_lesson(settings, id, problems); code != 0) return code;
  std::cout << "gui_audit: " << settings.lessons.size() << " lessons at " << settings.width << "x" << settings.height << " font scale "
            << settings.font_scale << ": " << problems << " problem" << (problems == 1 ? "" : "s") << "\n";
  return problems == 0 ? 0 : 1;
}
