// SplitMix64's output function (Steele, Lea, Flood 2014): the bijective 64-bit mix behind every counter-based
// generator of the executors (training data, parameter initialisation, dropout masks), so each value is a pure
// function of its key and index, identical on every machine. Standard library only.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>

namespace shardscope::exec {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace shardscope::exec
