// Test inputs for the kernel tests: n values uniform in offset ± scale from a seeded generator (the same values on
// every machine: std::mt19937 is specified exactly, and the tests' tolerances cover the distribution's rounding).
#pragma once
#include <cstddef>
#include <random>
#include <vector>

namespace shardscope::exec::test {

inline std::vector<float> random_values(std::size_t n, unsigned seed, float scale = 1.0f, float offset = 0.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = offset + scale * dist(gen);
  return v;
}

}  // namespace shardscope::exec::test
