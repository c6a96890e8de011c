// The model's parameters put back together from what each rank of an executed run holds (whole replicas, ZeRO
// shards, pipeline stages): one checksum a user can compare across strategies, and whether replicas agree.
#pragma once
#include "exec/exec_layer.h"
#include <map>
#include <string>
#include <vector>

#include "exec/executor.h"

namespace shardscope::exec {

struct ModelParameters {
  double checksum = 0;        // Σ of every element of every parameter, each counted once
  double sum_of_squares = 0;
  std::int64_t elements = 0;
  // Replicas (the same range held by several ranks) must hold the same values: bit for bit when the pieces carry
  // values, else the same sums. The first disagreement and the first range no rank holds, empty when none.
  std::string disagreement;
  std::string gap;
  std::map<std::string, std::vector<float>> values;  // whole parameters, when the pieces carry values
};

ModelParameters assemble_model_parameters(const std::vector<RankExecution>& ranks);

// The parameters `rank` holds whole, by name, with their values (ExecutionOptions::keep_parameters).
std::map<std::string, std::vector<float>> whole_parameters(const RankExecution& rank);

}  // namespace shardscope::exec
