// Losses on the CPU, fp32, batch-first: MSE with mean reduction (PyTorch 2.x nn.MSELoss, reduction='mean') and
// cross-entropy over integer class targets (nn.CrossEntropyLoss = log_softmax + nll_loss, reduction='mean', no
// weights, no label smoothing). No dependency on plans or allocators.
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>

namespace shardscope::exec::cpu {

// mean over all elements of (prediction - target)². Sums in double in index order (deterministic; may differ
// from torch's float reduction in the last bits).
float mse_loss_forward(std::span<const float> prediction, std::span<const float> target);

// grad_prediction = 2 · (prediction - target) · grad_loss / N (torch mse_loss_backward, mean: norm = 2/numel).
// grad_prediction may be the prediction buffer itself (in place), no partial overlap.
void mse_loss_backward(std::span<const float> prediction, std::span<const float> target, float grad_loss,
                       std::span<float> grad_prediction);

// mean over the batch of -log_softmax(logits[b])[target[b]], logits batch×classes, targets in [0, classes)
// (anything else, torch's ignore_index -100 included, is an error here).
float cross_entropy_forward(int batch, int classes, std::span<const float> logits,
                            std::span<const std::int32_t> targets);

// grad_logits = (softmax(logits) - onehot(target)) · grad_loss / batch. grad_logits may be the logits buffer
// itself (in place), no partial overlap.
void cross_entropy_backward(int batch, int classes, std::span<const float> logits,
                            std::span<const std::int32_t> targets, float grad_loss, std::span<float> grad_logits);

}  // namespace shardscope::exec::cpu
