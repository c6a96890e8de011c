// Which elements of the whole model's parameters a tensor-parallel rank holds, for executors: the base plan was
// lowered on one rank's shard (model/tensor_parallel_shard.h), so its ParameterInit ranges count elements of the
// shard's parameters; each rank k gets them as ranges of the whole parameters, the slice Megatron-LM's
// ColumnParallelLinear / RowParallelLinear give rank k (core/tensor_parallel/layers.py, _initialize_affine_weight_cpu:
// the master weight is initialised whole and rank k keeps its split along the partition dimension), so that the
// shards start as the slices of what `single` initialises.
#pragma once
#include "model/model.h"
#include "plan/plan.h"

namespace shardscope {

// The ranges of `shard_inits` (elements of the shard's parameters) as ranges of `whole`'s parameters on
// tensor-parallel rank k of tp, with the whole layer's fan-in. A column-parallel Linear's rows (weight and bias) are
// one contiguous run; a row-parallel weight's columns are one run per row (out runs of in/tp elements); replicated
// parameters (a row-parallel bias) keep their ranges. A GPT-2 model's the same way (its heads' Q, K and V columns
// of c_attn, its columns of c_fc, its rows of the c_proj weights, wte and lm_head). Parameters it cannot place
// (Llama's, a block held as one flat tensor, which the executors refuse under tp) are left as they are.
// `element_bytes`: the tensor's element size (ParameterInit offsets are bytes).
ParameterInits tensor_parallel_inits(const ParameterInits& shard_inits, Bytes element_bytes, const Model& whole, int tp,
                                     int k);

// Whether `whole` is a model whose tensor-parallel shards tensor_parallel_inits places (an MLP of Linear pairs, a
// GPT-2 model with its blocks' parameters apart).
bool tensor_parallel_inits_placed(const Model& whole);

}  // namespace shardscope
