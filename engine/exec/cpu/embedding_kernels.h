// GPT-2's input embedding on the CPU, fp32: token (wte) plus learned position (wpe) embedding, then dropout
// (transformers' GPT2Model.forward: inputs_embeds + position_embeds, self.drop), and its backward
// (aten embedding_dense_backward: a dense gradient of the whole table, rows of unused ids zero). Positions are
// 0 … seq−1 in every sample. No dependency on plans or allocators.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>

#include "exec/shared_kernels/dropout_mask.h"

namespace shardscope::exec::cpu {

struct EmbeddingShape {
  int rows = 0;        // samples
  int seq = 0;         // tokens a sample
  int hidden = 0;
  std::int64_t vocab = 0;
  int positions = 0;   // rows of wpe (n_positions)
  double dropout = 0;  // embd_pdrop; 0 in eval
  std::uint64_t dropout_key = 0;
  GlobalSamples samples = {};  // which samples of the global batch the pass holds, for the mask
  // Vocabulary-parallel (Megatron-LM's VocabParallelEmbedding): wte holds `vocab` rows, ids first_id on, of a
  // vocabulary of whole_vocab; an id outside them looks up zeros (and gets no gradient), the plan's all-reduce adds
  // the ranks' lookups. Only the rank with adds_positions adds wpe (once in the sum; its gradient is every rank's).
  std::int64_t first_id = 0;
  std::int64_t whole_vocab = 0;  // 0: vocab
  bool adds_positions = true;
  // Sequence parallelism: the output (and grad_out) hold every token, the mask operand only part `index` of `count`
  // equal chunks of them (the reduce-scatter's share). The whole mask is drawn to apply; that chunk is stored.
  struct MaskPart {
    int index = 0;
    int count = 1;
  };
  MaskPart mask_part = {};
};

// output[tokens×hidden]; mask (tokens×hidden bytes) may be empty only when dropout is 0. Throws on an id outside
// the whole vocabulary, naming it.
void embedding_forward(const EmbeddingShape& shape, std::span<const std::int64_t> ids, std::span<const float> wte,
                       std::span<const float> wpe, std::span<std::uint8_t> mask, std::span<float> output);

// grad_wte (vocab×hidden) and grad_wpe (positions×hidden) written; grad_out is read only.
void embedding_backward(const EmbeddingShape& shape, std::span<const float> grad_out, std::span<const std::int64_t> ids,
                        std::span<const std::uint8_t> mask, std::span<float> grad_wte, std::span<float> grad_wpe);

}  // namespace shardscope::exec::cpu
