// One operation of a rank's program: compute, collective, allocation, free, or phase marker.
// Ops of a program run in order per stream; `deps` name further ops of the same program that must finish first.
// Collectives match across ranks by (group, sequence); a Send matches the Recv of its peer with the same
// sequence on that (sender, receiver) channel.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/category.h"
#include "core/units.h"
#include "plan/kernel.h"

namespace shardscope {

enum class OpKind { Compute, Collective, Send, Recv, Alloc, Free, Phase };
// Copy: host<->device and peer copies (DataParallel scatter/gather), when a lowering puts them on their own stream.
enum class Stream { Compute, Communication, Copy };
inline constexpr int kStreamCount = 3;
enum class ComputeKind { Forward, Backward, Loss, LossBackward, Optimizer, Copy };
// Barrier moves nothing: members wait until all have arrived. It stands for an order a framework imposes without
// communicating (DataParallel's worker devices get their work only when device 0's thread issues it).
enum class CollectiveKind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Scatter, Gather, Barrier };
inline constexpr int kCollectiveKindCount = 8;

std::string op_kind_name(OpKind kind);
std::string stream_name(Stream stream);
std::string compute_kind_name(ComputeKind kind);
std::string collective_kind_name(CollectiveKind kind);

using OpIndex = std::int32_t;

struct Op {
  OpKind kind = OpKind::Compute;
  Stream stream = Stream::Compute;
  std::string label;  // plain language: "fc3 backward", "all-reduce bucket 2"
  int step = 0;       // 0 = set-up (model creation, wrapping); training steps count from 1
  int layer = -1;     // model layer index, where the op belongs to one
  int micro_batch = -1;  // pipeline micro-batch (0-based), where the op belongs to one
  std::vector<OpIndex> deps;

  // Compute
  ComputeKind compute_kind = ComputeKind::Forward;
  double flops = 0;
  Bytes bytes_accessed = 0;  // memory traffic, for bandwidth-bound ops

  // Collective, Send, Recv
  CollectiveKind collective_kind = CollectiveKind::AllReduce;
  int group = -1;           // index into Plan::groups (collectives only)
  std::int64_t sequence = -1;  // n-th collective of this group; n-th message on this (sender, receiver) channel
  Bytes payload = 0;        // bytes each member contributes (the full buffer for all-reduce); message bytes
  int root = -1;            // global rank, for rooted collectives
  int peer = -1;            // Send: the receiver's global rank; Recv: the sender's

  // Alloc / Free
  TensorId tensor = -1;

  // For executors (plan/kernel.h): what the op computes and on which tensors; ignored by accounting and simulation.
  Kernel kernel = Kernel::None;
  std::vector<TensorSlice> args;
  double scale = 1;  // Kernel::Scale's and Copy's factor; the loss gradient of MseLossBackward / NllLossBackward

  // Phase
  std::string phase;  // "model_created", "wrapped", "forward", "before_step", "after_step"
};

}  // namespace shardscope
