// The transport bar under the charts: to the start, previous phase, one op back, play / pause, one op on, next
// phase, to the end; how long the whole run takes to play; and a scrub bar over the run.
#include <imgui.h>

#include <memory>

#include "gui/panels/panel.h"
#include "gui/panels/window_facts.h"

namespace shardscope::gui {

namespace {

class TransportPanel final : public Panel {
 public:
  // A frame line and a fifth of another: the bar's buttons and the room the window keeps under them.
  ContentHeight content_height(const PanelFrame&, float) override { return {1.2f, 0}; }

  void draw(const PanelFrame& frame) override {
    Playback& playback = frame.playback;
    if (ImGui::Button("|<")) playback.seek(0);
    ImGui::SameLine();
    if (ImGui::Button("<<")) playback.previous_phase();
    ImGui::SameLine();
    if (ImGui::Button("<")) playback.step_back();
    ImGui::SameLine();
    if (ImGui::Button(playback.playing() ? "Pause" : "Play")) playback.toggle_play();
    ImGui::SameLine();
    if (ImGui::Button(">")) playback.step_forward();
    ImGui::SameLine();
    if (ImGui::Button(">>")) playback.next_phase();
    ImGui::SameLine();
    if (ImGui::Button(">|")) playback.seek(playback.end_ns());
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
    float seconds = static_cast<float>(playback.run_seconds());
    if (ImGui::SliderFloat("##speed", &seconds, 0.5f, 120.0f, "run in %.1f s", ImGuiSliderFlags_Logarithmic))
      playback.set_run_seconds(seconds);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    float fraction = playback.end_ns() > 0 ? static_cast<float>(static_cast<double>(playback.now_ns()) / static_cast<double>(playback.end_ns())) : 0;
    if (ImGui::SliderFloat("##scrub", &fraction, 0.0f, 1.0f, format_duration(playback.now_ns()).c_str())) {
      playback.pause();
      playback.seek(static_cast<TimeNs>(fraction * static_cast<double>(playback.end_ns())));
    }
  }
};

}  // namespace

std::unique_ptr<Panel> make_transport_panel(PanelContext&) { return std::make_unique<TransportPanel>(); }

}  // namespace shardscope::gui
