// One tensor-parallel rank's share of a model, as Megatron-LM splits it (core/tensor_parallel/layers.py): an MLP's
// Linear layers in pairs, the first column-parallel (its outputs 1/t) and the second row-parallel (its inputs 1/t,
// its bias whole); a transformer block's QKV and fc1 column-parallel, its attention output and fc2 row-parallel,
// LayerNorms and the row-parallel biases whole on every rank; the token embedding and the LM head split by
// vocabulary (VocabParallelEmbedding, a column-parallel head, vocab-parallel cross-entropy); with sequence
// parallelism the tensors between the tensor-parallel regions split along the sequence (an MLP's along its batch
// rows: its shard is then lowered on b/t samples, Model::sequence_parallel_ranks). Sizes, saved bytes and FLOPs are
// the rank's; the collectives that join the shards are strategy/tensor_parallel.h's.
#pragma once
#include "model/model.h"

namespace shardscope {

// Where a layer of the shard sits in Megatron's split (which collectives follow its forward and backward).
enum class TensorParallelRole { Replicated, ColumnParallel, RowParallel, Block, VocabEmbedding, VocabHead };

// The split the scenario checks allow (scenario/tensor_parallel.h: tp divides what it splits). tp == 1: unchanged.
Model tensor_parallel_shard(const Model& model, int tp, bool sequence_parallel);
// The role of each layer of `model` (whole or shard: the same), in layer order.
std::vector<TensorParallelRole> tensor_parallel_roles(const Model& model);

}  // namespace shardscope
