// Parameter initialisation: splitmix64 over (seed, FNV-1a of the name, element index), 24-bit uniform grid.
#include "exec/data/parameter_init.h"
#include "exec/data/splitmix64.h"

#include <cmath>

namespace shardscope::exec {

namespace {

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}


}  // namespace

double fan_in_bound(std::int64_t fan_in) { return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 1.0; }

void init_parameter(std::uint64_t seed, std::string_view name, double bound, std::int64_t first_element,
                    std::span<float> values) {
  const std::uint64_t key = splitmix64(seed ^ fnv1a(name));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double unit = static_cast<double>(splitmix64(key + static_cast<std::uint64_t>(first_element) + i) >> 40) * 0x1.0p-24;  // [0, 1) on a 2^-24 grid
    values[i] = static_cast<float>((2.0 * unit - 1.0) * bound);
  }
}

}  // namespace shardscope::exec
