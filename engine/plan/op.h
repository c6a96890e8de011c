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
#include "plan/compute_work.h"
#include "plan/kernel.h"
#include "plan/op_args.h"
#include "plan/op_deps.h"
#include "plan/op_label.h"

namespace shardscope {

enum class OpKind : std::uint8_t { Compute, Collective, Send, Recv, Alloc, Free, Phase };
// Copy: host<->device and peer copies (DataParallel scatter/gather), when a lowering puts them on their own stream.
enum class Stream : std::uint8_t { Compute, Communication, Copy };
inline constexpr int kStreamCount = 3;
enum class ComputeKind : std::uint8_t { Forward, Backward, Loss, LossBackward, Optimizer, Copy };
// Barrier moves nothing: members wait until all have arrived. It stands for an order a framework imposes without
// communicating (DataParallel's worker devices get their work only when device 0's thread issues it).
enum class CollectiveKind : std::uint8_t { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Scatter, Gather, Barrier };
inline constexpr int kCollectiveKindCount = 8;

std::string op_kind_name(OpKind kind);
std::string stream_name(Stream stream);
std::string compute_kind_name(ComputeKind kind);
std::string collective_kind_name(CollectiveKind kind);

// Fields are grouped by size (1-byte kinds first, then 4- and 8-byte numbers) so that an op packs into 120 bytes:
// a 1,024-rank plan holds over a million of them.
struct Op {
  OpKind kind = OpKind::Compute;
  Stream stream = Stream::Compute;
  ComputeKind compute_kind = ComputeKind::Forward;        // Compute
  CollectiveKind collective_kind = CollectiveKind::AllReduce;  // Collective
  // For executors (plan/kernel.h): what the op computes and on which tensors (args, below); ignored by accounting
  // and simulation.
  Kernel kernel = Kernel::None;
  // For the simulator (plan/compute_work.h): the kernel's kind, element type and shape, where the lowering says it
  // op by op (the eager pass); 3 bytes, in what was padding.
  WorkId work;

  int step = 0;       // 0 = set-up (model creation, wrapping); training steps count from 1
  int layer = -1;     // model layer index, where the op belongs to one
  int micro_batch = -1;  // pipeline micro-batch (0-based), where the op belongs to one
  // Collective, Send, Recv
  int group = -1;           // index into Plan::groups (collectives only)
  int root = -1;            // global rank, for rooted collectives
  int peer = -1;            // Send: the receiver's global rank; Recv: the sender's
  // Alloc / Free
  TensorId tensor = -1;
  // Collective, Send, Recv: n-th collective of this group; n-th message on this (sender, receiver) channel. 32 bits,
  // beside the other ints, where 64 bits took 8 bytes more.
  std::int32_t sequence = -1;

  // Compute
  double flops = 0;
  Bytes bytes_accessed = 0;  // memory traffic, for bandwidth-bound ops
  // Collective, Send, Recv
  Bytes payload = 0;        // bytes each member contributes (the full buffer for all-reduce); message bytes
  double scale = 1;  // Kernel::Scale's and Copy's factor; the loss gradient of MseLossBackward / NllLossBackward

  OpLabel label;  // plain language: "fc3 backward", "all-reduce bucket 2"
  OpLabel phase;  // Phase: "model_created", "wrapped", "forward", "before_step", "after_step"
  OpDeps deps;
  OpArgs args;
};

}  // namespace shardscope
