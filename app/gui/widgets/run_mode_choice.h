// The row of run modes above the scenario form (a widget of the run source panel): Simulate, Execute on CPU, Execute on GPU. The GPU mode lists the
// detected GPUs when chosen, and is greyed out with the reason (not built with CUDA, no driver, no device) when
// there is none. ImGui only; the inventory comes from engine/run/gpu_inventory.h.
#pragma once
#include "gui/logic/run_mode.h"
#include "run/gpu_inventory.h"

namespace shardscope::gui {

// Draws the modes; returns true when the user picked another one (the caller re-runs).
bool draw_run_mode(RunMode& mode, const exec::GpuInventory& gpus);

}  // namespace shardscope::gui
