// Deterministic training data for executed runs: sample k of a virtual dataset is a pure function of (seed, k),
// and each step's global batch is split over data-parallel ranks as torch DistributedSampler + DataLoader split
// it. Standard library only; knows nothing of plans or allocators (it fills the caller's buffers).
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <span>
#include <vector>

namespace shardscope::exec {

// Which part of which step's batch a rank loads. global_batch must be a multiple of world.
struct BatchSlice {
  std::int64_t step = 0;  // 0-based training step
  int global_batch = 1;   // samples per step over all data-parallel ranks
  int world = 1;          // data-parallel ranks sharing the batch
  int rank = 0;           // index among them, 0 <= rank < world
};

// Dataset indices of a rank's samples, in the order its DataLoader yields them.
// Follows PyTorch 2.x torch/utils/data/distributed.py, DistributedSampler with shuffle=False: each rank takes the
// strided slice indices[rank : total_size : num_replicas] of the epoch's indices, and DataLoader(batch_size =
// global_batch / world) takes consecutive runs of that slice. Over a dataset longer than the run (no epoch wrap,
// no padding) that gives, for step s and j in [0, B): s·G + rank + world·j, with G = global_batch, B = G / world.
// So the ranks of a step together hold exactly samples [s·G, (s+1)·G): world 2 × batch 8 and world 1 × batch 16
// see the same 16 samples (interleaved, not contiguous, across ranks: the sampler strides).
std::vector<std::int64_t> rank_sample_indices(const BatchSlice& slice);

class BatchSource {
 public:
  // input_features: values per sample; inputs and regression targets are uniform in [-1, 1) on a 2^-24 grid.
  BatchSource(std::uint64_t seed, int input_features);

  int input_features() const { return input_features_; }

  // inputs: samples.size() × input_features, row-major, one row per sample in the given order.
  void fill_inputs(std::span<const std::int64_t> samples, std::span<float> inputs) const;
  // MSE targets: samples.size() × target_features.
  void fill_regression_targets(std::span<const std::int64_t> samples, int target_features,
                               std::span<float> targets) const;
  // Cross-entropy targets: one class id in [0, classes) per sample.
  void fill_class_targets(std::span<const std::int64_t> samples, int classes, std::span<std::int32_t> targets) const;

  // Language-model samples: seq token ids and their next tokens, each sample an arithmetic progression modulo the
  // vocabulary (token j = (start + j·stride) mod vocab, start in [0, vocab), stride in [1, 8], both drawn per
  // sample), which a small model learns to continue. ids and targets: samples.size() × seq, targets = ids shifted
  // by one (the token after the last id included), as GPT2LMHeadModel's labels are after its internal shift.
  void fill_token_sequences(std::span<const std::int64_t> samples, int seq, std::int64_t vocab,
                            std::span<std::int64_t> ids, std::span<std::int64_t> targets) const;

 private:
  std::uint64_t seed_;
  int input_features_;
};

}  // namespace shardscope::exec
