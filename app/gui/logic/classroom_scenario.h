// The scenario the window opens on: the built-in DDP scenario (2 × H100, 20 × Linear(2000, 2000), Adam) with a
// batch and step count chosen so the story shows — activations rise through forward and fall through backward
// (2,048 samples × 2,000 × 4 B = 15.6 MiB per layer, about the size of the parameters in all), and the second step
// shows DDP's rebuilt 25 MiB buckets all-reducing while backward goes on (the first step has one bucket).
#pragma once
#include "scenario/scenario.h"

namespace shardscope::gui {

inline Scenario classroom_scenario() {
  Scenario scenario = builtin_default_scenario();
  scenario.name = "DDP · 2 × H100 · 20 × Linear(2000) · Adam · batch 2048 · 2 steps";
  scenario.training.batch = 2048;
  scenario.training.steps = 2;
  scenario.description =
      "Two GPUs each hold the whole model (blue) and their own activations (yellow), which rise through forward and "
      "fall through backward. DDP adds a bucket copy of the gradients (vermillion); Adam's state (green) appears at "
      "the first step. In step 2, buckets are all-reduced while backward is still running.";
  return scenario;
}

}  // namespace shardscope::gui
