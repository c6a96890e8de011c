// The pieces of nn.CrossEntropyLoss as an autograd graph runs them (PyTorch 2.x: log_softmax, nll_loss and their
// backward formulas in tools/autograd/derivatives.yaml), fp32, batch-first, int64 class targets as torch holds
// them. loss_kernels.h has the fused forms; these keep log_probs as a tensor of its own, as the plan does.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>

namespace shardscope::exec::cpu {

// log_probs[b] = logits[b] - logsumexp(logits[b]) over `classes`; log_probs may be logits itself.
void log_softmax_forward(int batch, int classes, std::span<const float> logits, std::span<float> log_probs);

// mean over the batch of -log_probs[b][targets[b]] (reduction='mean', no weights); targets in [0, classes).
float nll_loss_forward(int batch, int classes, std::span<const float> log_probs,
                       std::span<const std::int64_t> targets);

// grad_log_probs = -grad_loss/batch at each row's target, 0 elsewhere (nll_loss_backward, reduction='mean').
void nll_loss_backward(int batch, int classes, std::span<const std::int64_t> targets,
                       std::span<float> grad_log_probs, double grad_loss = 1.0);

// grad_logits = grad_log_probs - exp(log_probs) · Σ_row grad_log_probs (_log_softmax_backward_data).
void log_softmax_backward(int batch, int classes, std::span<const float> grad_log_probs,
                          std::span<const float> log_probs, std::span<float> grad_logits);

}  // namespace shardscope::exec::cpu
