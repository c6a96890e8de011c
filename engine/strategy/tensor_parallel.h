// Tensor parallelism around any strategy's plan: the strategy is lowered for world / tp ranks on one tensor-parallel
// rank's model (model/tensor_parallel_shard.h), then each of its programs becomes tp programs (ranks r·tp + k, tp
// fastest, as Megatron-LM orders them), its process groups one group per tensor-parallel index k, and Megatron's
// collectives on a new group per tensor-parallel set of ranks are put after the layers that need them:
//   - without sequence parallelism (megatron/core/tensor_parallel/mappings.py, f and g): an all-reduce of the output
//     after each row-parallel layer's forward (a block: attention output and fc2; the vocabulary-parallel
//     embedding), an all-reduce of the input gradient after each column-parallel layer's backward (a block: QKV
//     and fc1 inputs; the LM head), except the model's first layer, whose input needs no gradient;
//   - an MLP's Linear pairs with sequence parallelism: the batch rows split over the group outside the pairs, the
//     all-gathers and reduce-scatters put in by the pass itself with the buffers they fill, counted
//     (training/model_pass_sequence_parallel.cpp), and each rank's row share of the data (DataShard);
//   - a block with sequence parallelism: all-gather of the sequence shards before and reduce-scatter after each
//     tensor-parallel region in forward; in backward the reduce-scatter's all-gather, the all-gather of the saved
//     input shard again for the weight gradient (LinearWithGradAccumulationAndAsyncCommunication.backward), and the
//     reduce-scatter of the input gradient;
//   - vocabulary-parallel cross-entropy (_VocabParallelCrossEntropy.forward): three all-reduces of b·s fp32 values
//     (the logits' maximum, the target logit, the sum of exponentials) after the loss forward.
// A block is one op in our plans, so its collectives follow it, in the order Megatron-LM issues them. They run on
// the compute stream: Megatron waits for each before the next kernel, so they are on the critical path (no overlap
// is modelled). Under sp, the all-gathered [s, b, h] input of a block's regions and of the LM head is Megatron-LM's
// global memory buffer (core/utils.py GlobalMemoryBuffer, "mpu"): one b·s·h tensor of the activation dtype per rank,
// allocated before the first block's (or the head's) forward and kept to the end, counted as a communication
// buffer. Not modelled: the other transient outputs of a block's collectives (_gather_along_first_dim's torch.empty
// for the backward's all-gathered output gradient, the whole input gradient before its reduce-scatter), beyond what
// the block op's own tensors hold.
#pragma once
#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope {

// `base` was lowered for world / tp ranks on tensor_parallel_shard(model); `scenario` is the whole scenario (world
// = tp × base ranks). Returns the plan for every rank; `base` is consumed (its programs moved into the result).
Plan expand_tensor_parallel(Plan base, const ResolvedScenario& scenario, const Model& shard);

}  // namespace shardscope
