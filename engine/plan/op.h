// One operation of a rank's program: compute, collective, allocation, free, or phase marker.
// Ops of a program run in order per stream; `deps` name further ops of the same program that must finish first.
// Collectives match across ranks by (group, sequence).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/category.h"
#include "core/units.h"

namespace shardscope {

enum class OpKind { Compute, Collective, Alloc, Free, Phase };
enum class Stream { Compute, Communication };
enum class ComputeKind { Forward, Backward, Loss, LossBackward, Optimizer, Copy };
enum class CollectiveKind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Scatter, Gather };

std::string op_kind_name(OpKind kind);
std::string stream_name(Stream stream);
std::string compute_kind_name(ComputeKind kind);
std::string collective_kind_name(CollectiveKind kind);

using OpIndex = std::int32_t;
using TensorId = std::int32_t;

struct Op {
  OpKind kind = OpKind::Compute;
  Stream stream = Stream::Compute;
  std::string label;  // plain language: "fc3 backward", "all-reduce bucket 2"
  int step = 0;       // 0 = set-up (model creation, wrapping); training steps count from 1
  int layer = -1;     // model layer index, where the op belongs to one
  std::vector<OpIndex> deps;

  // Compute
  ComputeKind compute_kind = ComputeKind::Forward;
  double flops = 0;
  Bytes bytes_accessed = 0;  // memory traffic, for bandwidth-bound ops

  // Collective
  CollectiveKind collective_kind = CollectiveKind::AllReduce;
  int group = -1;           // index into Plan::groups
  std::int64_t sequence = -1;  // n-th collective of this group
  Bytes payload = 0;        // bytes each member contributes (the full buffer for all-reduce)
  int root = -1;            // global rank, for rooted collectives

  // Alloc / Free
  TensorId tensor = -1;

  // Phase
  std::string phase;  // "model_created", "wrapped", "forward", "before_step", "after_step"
};

}  // namespace shardscope
