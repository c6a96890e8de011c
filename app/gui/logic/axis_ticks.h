// Y-axis ticks of the memory charts in binary units: a power-of-two step (KiB, MiB, GiB multiples), so the grid
// reads 128 MiB, 256 MiB, 384 MiB rather than decimal fractions of a GiB. Pure logic, unit-tested.
#pragma once
#include <string>
#include <vector>

#include "core/units.h"

namespace shardscope::gui {

// Multiples of the largest power of two bytes (at least 1 KiB) that fits three times into `scale`, from one step up
// to the last at or below `scale`. Empty for a scale under 1 KiB.
std::vector<Bytes> binary_ticks(Bytes scale);

// "512 MiB", "1.5 GiB", "2 KiB": short, for axis labels.
std::string tick_label(Bytes bytes);

}  // namespace shardscope::gui
