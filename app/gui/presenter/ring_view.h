// The all-reduce lesson's ring: each rank's buffer at one ring step of the demo, chunk by chunk, the chunk each
// rank just received marked, the finished sums marked.
#pragma once
#include "lessons/ring_demo.h"

namespace shardscope::gui {

// Draws into the current ImGui window, filling `height` pixels.
void draw_ring_demo(const lessons::RingDemo& demo, int step, float height);

}  // namespace shardscope::gui
