// The line under the timeline that says in plain words what is happening at the playhead ("rank 1: all-reduce
// bucket 3 while computing fc7 backward"); past a rank's failed allocation, the out-of-memory report in red instead.
// Two lines are kept for it, so a long caption wraps instead of running off.
#include <imgui.h>

#include <memory>
#include <optional>
#include <string>

#include "gui/logic/caption.h"
#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

namespace {

class CaptionPanel final : public Panel {
 public:
  ContentHeight content_height(const PanelFrame&, float) override {
    return {0, ImGui::GetTextLineHeightWithSpacing() * 2 + ImGui::GetStyle().ItemSpacing.y * 2};
  }

  void draw(const PanelFrame& frame) override {
    const Playback& playback = frame.playback;
    std::string caption, out_of_memory;
    std::optional<std::string> rank_phase;  // the described rank's own phase (pipeline stages differ)
    frame.store.read([&](const TraceData& data) {
      if (data.ranks.empty()) return;
      const int described = most_telling_rank(data, playback.now_ns());
      caption = describe_rank_at(data, described, playback.now_ns());
      if (const RankTimeline* rank = data.rank(described)) rank_phase = phase_under_way_at(*rank, playback.now_ns());
      // Past a rank's failed allocation, that is the news: which rank, op, request and what was allocated.
      for (const auto& rank : data.ranks)
        if (const TraceRunError* oom = first_out_of_memory(data, rank.rank); oom && oom->t_ns <= playback.now_ns()) {
          out_of_memory = "rank " + std::to_string(rank.rank) + ": " + oom->message;
          break;
        }
    });
    if (!out_of_memory.empty()) caption = out_of_memory;
    caption = redact(frame.hidden, caption);
    const PhaseMark* reached = playback.current_phase();
    const bool on_marker = reached && reached->t_ns == playback.now_ns();
    const std::string phase = rank_phase ? *rank_phase : phase_under_way(on_marker ? nullptr : playback.upcoming_phase(), reached);
    const ImVec4 colour = out_of_memory.empty() ? ImGui::GetStyleColorVec4(ImGuiCol_Text) : ImVec4(0.8f, 0.0f, 0.0f, 1);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(colour, "%s  ·  %s%s", format_duration(playback.now_ns()).c_str(), phase.empty() ? "" : (phase + " · ").c_str(),
                       caption.c_str());
    ImGui::PopTextWrapPos();
  }
};

}  // namespace

std::unique_ptr<Panel> make_caption_panel(PanelContext&) { return std::make_unique<CaptionPanel>(); }

}  // namespace shardscope::gui
