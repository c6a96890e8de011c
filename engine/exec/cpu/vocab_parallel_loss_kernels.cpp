// Vocabulary-parallel cross-entropy's parts; sums in double, in index order, as log_softmax_kernels.cpp.
#include "exec/cpu/vocab_parallel_loss_kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {

namespace {

std::size_t cells(const VocabShard& s) {
  return static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.classes);
}

void check_shard(const VocabShard& s, std::span<const float> logits, const char* kernel) {
  require_positive(s.rows, kernel, "rows");
  require_positive(s.classes, kernel, "classes");
  require_positive(s.tp, kernel, "tp");
  if (s.tp_rank < 0 || s.tp_rank >= s.tp)
    throw std::invalid_argument(std::string(kernel) + ": tensor-parallel rank " + std::to_string(s.tp_rank) + " of " +
                                std::to_string(s.tp));
  require_size(logits, cells(s), kernel, "logits");
}

void check_stats(const VocabShard& s, std::span<const float> stats, const char* kernel) {
  require_size(stats, static_cast<std::size_t>(s.rows) * 3, kernel, "stats");
}

// The column of `target` in this rank's logits, or −1 where another rank holds it. Throws outside the vocabulary.
std::int64_t local_column(const VocabShard& s, std::int64_t target, const char* kernel) {
  const std::int64_t whole = static_cast<std::int64_t>(s.classes) * s.tp;
  if (target < 0 || target >= whole)
    throw std::invalid_argument(std::string(kernel) + ": target " + std::to_string(target) + " outside [0, " +
                                std::to_string(whole) + ")");
  const std::int64_t column = target - static_cast<std::int64_t>(s.classes) * s.tp_rank;
  return column >= 0 && column < s.classes ? column : -1;
}

const float* row_of(const VocabShard& s, std::span<const float> values, std::size_t r) {
  return values.data() + r * static_cast<std::size_t>(s.classes);
}

float row_max(const VocabShard& s, std::span<const float> logits, std::size_t r) {
  const float* row = row_of(s, logits, r);
  return *std::max_element(row, row + s.classes);
}

}  // namespace

void vocab_parallel_loss_max(const VocabShard& s, std::span<const float> logits, std::span<float> stats) {
  check_shard(s, logits, "vocab_parallel_loss_max");
  check_stats(s, stats, "vocab_parallel_loss_max");
  for (std::size_t r = 0; r < static_cast<std::size_t>(s.rows); ++r) stats[r] = row_max(s, logits, r) / static_cast<float>(s.tp);
}

void vocab_parallel_loss_sums(const VocabShard& s, std::span<const float> logits, std::span<const std::int64_t> targets,
                              std::span<float> stats) {
  const char* kernel = "vocab_parallel_loss_sums";
  check_shard(s, logits, kernel);
  check_stats(s, stats, kernel);
  require_size(targets, static_cast<std::size_t>(s.rows), kernel, "targets");
  const auto rows = static_cast<std::size_t>(s.rows);
  const float* shift = stats.data();
  float* target_logit = stats.data() + rows;
  float* sum_exp = target_logit + rows;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = row_of(s, logits, r);
    if (const double above = static_cast<double>(row_max(s, logits, r)) - shift[r]; above > kVocabParallelShiftLimit)
      throw std::domain_error(std::string(kernel) + ": row " + std::to_string(r) + "'s largest logit on tensor-parallel rank " +
                              std::to_string(s.tp_rank) + " lies " + std::to_string(above) + " above the ranks' mean "
                              "maximum (more than " + std::to_string(static_cast<int>(kVocabParallelShiftLimit)) +
                              "): the logits diverged too far for fp32's Σ exp");
    const std::int64_t column = local_column(s, targets[r], kernel);
    target_logit[r] = column < 0 ? 0.0f : static_cast<float>(static_cast<double>(row[column]) - shift[r]);
    double sum = 0;
    for (int k = 0; k < s.classes; ++k) sum += std::exp(static_cast<double>(row[k]) - shift[r]);
    sum_exp[r] = static_cast<float>(sum);
  }
}

float vocab_parallel_loss_finish(const VocabShard& s, std::span<const float> logits, std::span<const float> stats,
                                 std::span<float> log_probs) {
  const char* kernel = "vocab_parallel_loss_finish";
  check_shard(s, logits, kernel);
  check_stats(s, stats, kernel);
  require_size(log_probs, cells(s), kernel, "log_probs");
  const auto rows = static_cast<std::size_t>(s.rows);
  const float* target_logit = stats.data() + rows;
  const float* sum_exp = target_logit + rows;
  double total = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const double log_sum = std::log(static_cast<double>(sum_exp[r]));
    const double shift = stats[r] + log_sum;
    const float* row = row_of(s, logits, r);
    float* out = log_probs.data() + r * static_cast<std::size_t>(s.classes);
    for (int k = 0; k < s.classes; ++k) out[k] = static_cast<float>(static_cast<double>(row[k]) - shift);
    total += log_sum - target_logit[r];  // −log_softmax at the target: log Σ exp(x − shift) − (x_target − shift)
  }
  return static_cast<float>(total / static_cast<double>(rows));
}

void vocab_parallel_nll_loss_backward(const VocabShard& s, std::span<const std::int64_t> targets,
                                      std::span<float> grad_log_probs, double grad_loss) {
  const char* kernel = "vocab_parallel_nll_loss_backward";
  require_positive(s.rows, kernel, "rows");
  require_size(targets, static_cast<std::size_t>(s.rows), kernel, "targets");
  require_size(grad_log_probs, cells(s), kernel, "grad_log_probs");
  std::fill(grad_log_probs.begin(), grad_log_probs.end(), 0.0f);
  const auto weight = static_cast<float>(-grad_loss / s.rows);  // nll_loss_backward's, to the bit
  for (std::size_t r = 0; r < static_cast<std::size_t>(s.rows); ++r)
    if (const std::int64_t column = local_column(s, targets[r], kernel); column >= 0)
      grad_log_probs[r * static_cast<std::size_t>(s.classes) + static_cast<std::size_t>(column)] = weight;
}

void vocab_parallel_log_softmax_backward(const VocabShard& s, std::span<const float> grad_log_probs,
                                         std::span<const float> log_probs, std::span<float> grad_logits,
                                         double grad_loss) {
  const char* kernel = "vocab_parallel_log_softmax_backward";
  check_shard(s, log_probs, kernel);
  require_size(grad_log_probs, cells(s), kernel, "grad_log_probs");
  require_size(grad_logits, cells(s), kernel, "grad_logits");
  // The row's whole gradient: the one target's weight, as nll_loss_backward wrote it on the rank holding it.
  const double row_sum = static_cast<float>(-grad_loss / s.rows);
  for (std::size_t i = 0; i < cells(s); ++i)
    grad_logits[i] = static_cast<float>(grad_log_probs[i] - std::exp(static_cast<double>(log_probs[i])) * row_sum);
}

}  // namespace shardscope::exec::cpu
