// Cross-entropy over vocabulary-parallel logits on the CPU, fp32 (Megatron-LM's _VocabParallelCrossEntropy,
// core/tensor_parallel/cross_entropy.py): each tensor-parallel rank holds the logits of its vocab/tp ids, and the
// plan's three all-reduces of one fp32 a row join the statistics between the forward's parts, as Megatron's do.
// Megatron's first all-reduce takes the MAX of the row maxima; our collectives sum, so the shared shift is the
// mean of the ranks' maxima instead (softmax is the same for any shift shared by a row). It keeps exp finite while
// no rank's maximum exceeds that mean by more than kVocabParallelShiftLimit, far beyond the spread of real logits;
// beyond it the kernel says so rather than overflow. The backward is nll_loss_backward and log_softmax_backward on
// the rank's ids, each row's gradient sum over the whole vocabulary known from the loss (one target a row). No
// dependency on plans.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>

namespace shardscope::exec::cpu {

// Who holds which logits: `rows` rows of `classes` logits here, ids tp_rank · classes on, of tp ranks.
struct VocabShard {
  int rows = 0;
  int classes = 0;
  int tp = 1;
  int tp_rank = 0;
};

// How far (in logits) a rank's row maximum may lie above the shared shift: exp(60) · vocabulary stays inside fp32.
inline constexpr double kVocabParallelShiftLimit = 60;

// stats (fp32, rows × 3; a chunk is rows elements): chunk 0 the shift (this rank's row maxima / tp, then their sum
// over the ranks), chunk 1 the target logit less the shift (0 on ranks that do not hold the target), chunk 2 the
// rank's Σ exp(logit − shift). Writes chunk 0.
void vocab_parallel_loss_max(const VocabShard& shard, std::span<const float> logits, std::span<float> stats);
// After chunk 0 is all-reduced: writes chunks 1 and 2 (this rank's share of each sum). Throws std::domain_error
// where a row's maximum here lies more than kVocabParallelShiftLimit above the shift.
void vocab_parallel_loss_sums(const VocabShard& shard, std::span<const float> logits,
                              std::span<const std::int64_t> targets, std::span<float> stats);
// After chunks 1 and 2 are all-reduced: log_probs of this rank's logits, and the mean loss over the rows.
float vocab_parallel_loss_finish(const VocabShard& shard, std::span<const float> logits, std::span<const float> stats,
                                 std::span<float> log_probs);

// grad_log_probs = −grad_loss / rows at each row's target where this rank holds it, 0 elsewhere.
void vocab_parallel_nll_loss_backward(const VocabShard& shard, std::span<const std::int64_t> targets,
                                      std::span<float> grad_log_probs, double grad_loss);
// grad_logits = grad_log_probs − exp(log_probs) · (−grad_loss / rows): a row's gradient sums to that over the
// whole vocabulary, wherever its target lies.
void vocab_parallel_log_softmax_backward(const VocabShard& shard, std::span<const float> grad_log_probs,
                                         std::span<const float> log_probs, std::span<float> grad_logits,
                                         double grad_loss);

}  // namespace shardscope::exec::cpu
