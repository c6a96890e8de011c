// Deterministic parameter values for executed runs: element i of parameter tensor `name` is a pure function of
// (seed, name, i), uniform in [-bound, bound) with torch nn.Linear's bound 1/sqrt(in_features) for weight and bias
// (kaiming_uniform_(a=√5) and the bias rule of reset_parameters both give it). Same values on every rank, so data
// parallel replicas start equal as DDP's broadcast makes them. Standard library only.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>
#include <string_view>

namespace shardscope::exec {

// values[i] = element first_element + i of the parameter, uniform in [-bound, bound). A shard or a flat buffer
// fills its pieces with the values the whole parameter would hold.
void init_parameter(std::uint64_t seed, std::string_view name, double bound, std::int64_t first_element,
                    std::span<float> values);
// nn.Linear's bound 1/sqrt(fan_in); fan_in <= 0 gives 1.
double fan_in_bound(std::int64_t fan_in);

}  // namespace shardscope::exec
