// The memory charts' y-axis: how far up it reaches and which lines above the run's own memory (the device's capacity,
// the device use cudaMemGetInfo reports) are on it or only named as lying above it. Pure logic, unit-tested
// (tests/gui/test_memory_scale.cpp); the memory panel draws what it decides.
#pragma once
#include <string>

#include "core/units.h"

namespace shardscope::gui {

struct MemoryScaleInput {
  Bytes allocated = 0;   // the highest allocated the run (and a compared run) reaches
  Bytes reserved = 0;    // the highest reserved, where the chart draws it (a recorded run); else 0
  Bytes device_use = 0;  // the highest device use (cudaMemGetInfo: the CUDA context, libraries, other processes)
  Bytes capacity = 0;    // the device's memory; 0 where unknown
  bool to_capacity = false;  // View menu: reach up to the capacity (and the device use) whatever the run uses
};

struct MemoryScale {
  Bytes top = 1;                     // the value at the chart's top edge
  bool capacity_on_chart = false;    // the capacity line is drawn
  bool device_use_on_chart = false;  // the device-use line is drawn whole
};

// The run's memory sets the scale: the higher of allocated and reserved, with 15 % above it. The capacity joins in
// once that memory passes half of it (then the top is 5 % above the higher of the two), so a run near its limit
// shows how near; a run far below it fills the chart rather than being a strip along its foot. Device use never
// sets the scale: it counts what is not the run's (a recorded CUDA run's 5 GiB of device use against 268 MiB
// allocated is the CUDA context and cuBLAS, not training memory); it is drawn where it falls inside.
MemoryScale memory_scale(const MemoryScaleInput& input);

// A run recorded from PyTorch (python -m shardscope.record: "pytorch 2.11.0+cu130 cuda") or imported from its
// files ("pytorch memory snapshot (...)", "pytorch profiler trace (...)"): its reserved bytes were measured, so its
// chart draws them and they count in its scale. A prediction's reserved (the caching allocator replayed) is in the
// tooltip and the device cards, not on the chart, and does not set the scale.
bool recorded_from_pytorch(const std::string& trace_source);

// What lies above the chart's top, for the chart's header: "capacity 139.80 GiB and device use 5.17 GiB above the
// scale (View › Memory scale up to the capacity)"; empty when nothing does, and for a prediction (no reserved or
// device use in the input), whose capacity the device card gives.
std::string above_scale_note(const MemoryScaleInput& input, const MemoryScale& scale);

}  // namespace shardscope::gui
