// draw_run_mode: three radio buttons; the GPU one disabled (with the reason as its tooltip) without a usable GPU.
#include "gui/widgets/run_mode_choice.h"

#include <imgui.h>

#include <string>

namespace shardscope::gui {

bool draw_run_mode(RunMode& mode, const exec::GpuInventory& gpus) {
  int choice = static_cast<int>(mode);
  bool changed = ImGui::RadioButton("Simulate", &choice, static_cast<int>(RunMode::Simulate));
  ImGui::SameLine();
  changed |= ImGui::RadioButton("Execute on CPU", &choice, static_cast<int>(RunMode::ExecuteCpu));
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Run the plan for real: each rank a thread, real math and collectives, measured memory");
  // At projector font scales the third choice goes to the next line rather than past the column's edge.
  const float gpu_width = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize("Execute on GPU").x;
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < gpu_width) ImGui::NewLine();
  ImGui::BeginDisabled(!gpus.usable());
  changed |= ImGui::RadioButton("Execute on GPU", &choice, static_cast<int>(RunMode::ExecuteGpu));
  ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    if (gpus.usable()) {
      ImGui::SetTooltip("Train on this machine's GPUs: cuBLAS, NCCL, the PyTorch 2.x caching allocator's blocks "
                        "measured beside the pytorch-2 prediction");
    } else {
      ImGui::SetTooltip("%s", gpus.reason.c_str());
    }
  }
  mode = static_cast<RunMode>(choice);
  if (mode == RunMode::ExecuteGpu) {
    for (const exec::GpuInfo& gpu : gpus.gpus)
      ImGui::TextDisabled("GPU %d: %s, %s", gpu.index, gpu.name.c_str(), format_bytes(gpu.total_bytes).c_str());
    ImGui::TextDisabled("More ranks than GPUs: ranks share GPUs, collectives through local device memory");
  }
  return changed;
}

}  // namespace shardscope::gui
