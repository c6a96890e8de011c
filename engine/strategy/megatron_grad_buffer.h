// Where each parameter of a pipeline stage lives in Megatron-LM's contiguous gradient buffer, and which pieces of
// which parameters a data-parallel rank's shard of that buffer covers under the distributed optimizer. Pure
// arithmetic on parameter sizes: the lowering (pipeline_stage.cpp) turns it into operand slices.
#pragma once
#include <cstdint>
#include <vector>

#include "training/param_slot.h"

namespace shardscope {

// Element offset of each slot's gradient in the buffer, indexed like `slots`. Megatron-LM core 0.8
// (megatron/core/distributed/param_and_grad_buffer.py, ParamAndGradBuffer.__init__) walks `params[::-1]`, the
// parameters in reverse registration order ("roughly follow backprop order"), from element 0, one after the other;
// the buffer's end is padded (to a multiple of the data-parallel size here: the lowering's allocation).
std::vector<std::int64_t> megatron_grad_offsets(const std::vector<ParamSlot>& slots);

// Elements [first_element, first_element + numel) of slots[slot], at element `buffer_element` of the buffer.
struct BufferPiece {
  std::size_t slot = 0;
  std::int64_t first_element = 0;
  std::int64_t numel = 0;
  std::int64_t buffer_element = 0;
};

// The parameter pieces inside buffer elements [shard_begin, shard_begin + shard_numel), in buffer order (padding
// holds no parameter and yields no piece). Megatron-LM core's DistributedOptimizer cuts parameters at the shard
// boundaries the same way (_build_model_gbuf_param_range_map: the partition "does NOT respect parameter boundaries").
std::vector<BufferPiece> megatron_shard_pieces(const std::vector<ParamSlot>& slots, const std::vector<std::int64_t>& offsets,
                                               std::int64_t shard_begin, std::int64_t shard_numel);

}  // namespace shardscope
