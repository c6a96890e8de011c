// A Plan: one Program (ordered ops + the tensors they allocate) per rank, and the process groups of collectives.
#pragma once
#include <string>
#include <vector>

#include "plan/op.h"

namespace shardscope {

struct TensorInfo {
  std::string name;   // "fc3.weight", "bucket 2", "adam exp_avg fc3.weight"
  Bytes bytes = 0;    // tensor bytes (numel × element size), before any allocator rounding
  Category category = Category::Temporaries;
  bool persistent = false;  // allowed to be live when the program ends (parameters, states, user-held tensors)
};

struct Program {
  int rank = 0;
  std::vector<Op> ops;
  std::vector<TensorInfo> tensors;  // indexed by TensorId
};

struct Plan {
  std::string strategy;       // "ddp"
  std::string behaviour;      // which framework behaviour the lowering follows: "PyTorch 2.x"
  std::vector<Program> programs;          // one per rank, programs[r].rank == r
  std::vector<std::vector<int>> groups;   // process groups: sorted global ranks
  std::vector<std::string> notes;         // things the user should know ("convolution workspaces not modelled")

  std::size_t op_count() const {
    std::size_t n = 0;
    for (const auto& p : programs) n += p.ops.size();
    return n;
  }
};

}  // namespace shardscope
