// Dear ImGui without a window, for tests and benchmarks: a context with a display size and a built font atlas,
// so panels can be drawn frame after frame (NewFrame … Render) with no GPU (STACK.md: 1.86 has no null backend).
#pragma once
#include <imgui.h>

#include "gui/fonts.h"

namespace shardscope::gui::testing {

class HeadlessImGui {
 public:
  explicit HeadlessImGui(float width = 1600, float height = 900) {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(width, height);
    io.DeltaTime = 1.0f / 60.0f;
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // as the OpenGL 3 backend: big draw lists are fine
    // The GLFW backend's key codes, so tests can press keys as the window would see them.
    io.KeyMap[ImGuiKey_Space] = 32;
    io.KeyMap[ImGuiKey_RightArrow] = 262;
    io.KeyMap[ImGuiKey_LeftArrow] = 263;
    io.KeyMap[ImGuiKey_PageUp] = 266;
    io.KeyMap[ImGuiKey_PageDown] = 267;
    io.KeyMap[ImGuiKey_Home] = 268;
    io.KeyMap[ImGuiKey_End] = 269;
    io.KeyMap[ImGuiKey_Escape] = 256;
    io.KeyMap[ImGuiKey_Enter] = 257;
    io.KeyMap[ImGuiKey_DownArrow] = 264;
    io.KeyMap[ImGuiKey_UpArrow] = 265;
    io.KeyMap[ImGuiKey_KeyPadEnter] = 335;
    load_ui_font(1.0f);
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  }
  ~HeadlessImGui() { ImGui::DestroyContext(); }
  HeadlessImGui(const HeadlessImGui&) = delete;
  HeadlessImGui& operator=(const HeadlessImGui&) = delete;

  // One frame around `draw`; returns the number of vertices ImGui produced.
  template <class Draw>
  int frame(Draw&& draw, int pressed_key = -1) {
    ImGuiIO& io = ImGui::GetIO();
    if (pressed_key >= 0) io.KeysDown[pressed_key] = true;
    ImGui::NewFrame();
    draw();
    ImGui::Render();
    if (pressed_key >= 0) io.KeysDown[pressed_key] = false;
    return ImGui::GetDrawData()->TotalVtxCount;
  }
};

}  // namespace shardscope::gui::testing
