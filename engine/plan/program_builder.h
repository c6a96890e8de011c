// Builds one rank's Program while lowering: allocations with reference counts (a tensor is freed when its
// last holder lets go, as PyTorch's storage refcount does), compute, collectives and phase markers.
// Not thread-safe; one builder per rank.
#pragma once
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace shardscope {

class ProgramBuilder {
 public:
  // `compute`: the element type of parameters, gradients and activations (16-bit under mixed precision), which
  // alloc gives a tensor unless told otherwise. `kernel_operands` false: set_kernel keeps the kernel but drops its
  // operands, for programs that are only simulated or accounted (LoweringOptions).
  explicit ProgramBuilder(int rank, ElementType compute = ElementType::Fp32, bool kernel_operands = true);

  int rank() const { return program_.rank; }
  // Room for this many ops and tensors, so that pushing them never moves the ops already built. Lowerings pass the
  // previous rank's sizes: consecutive ranks (data-parallel replicas, a pipeline stage's replicas) have programs of
  // the same length, and regrowing vectors of ops was an eighth of a 1,024-rank lowering.
  void reserve(std::size_t ops, std::size_t tensors) {
    program_.ops.reserve(ops);
    program_.tensors.reserve(tensors);
    refcount_.reserve(tensors);
  }
  void set_step(int step) { step_ = step; }
  int step() const { return step_; }

  // Allocates a tensor held once. Zero-byte tensors still get an id but emit no op (CUDA allocates nothing).
  TensorId alloc(std::string name, Bytes bytes, Category category, bool persistent = false);
  // The same with the element type said: fp32 master weights, optimizer state and losses under mixed precision;
  // opaque ids, masks and workspaces.
  TensorId alloc(std::string name, Bytes bytes, Category category, bool persistent, ElementType element);
  ElementType compute_element() const { return compute_; }
  // What a tensor turned out to be once its fate is known (a gradient that AccumulateGrad makes .grad).
  void recategorize(TensorId tensor, Category category, bool persistent) {
    program_.tensors.at(tensor).category = category;
    program_.tensors.at(tensor).persistent = persistent;
  }
  void retain(TensorId tensor);   // one more holder (a view, a saved variable, a Python name)
  void release(TensorId tensor);  // one holder fewer; emits Free at zero
  int holders(TensorId tensor) const { return refcount_.at(tensor); }
  // When the tensor is freed, its block returns to the allocator's cache only later (TensorInfo::free_completes_late).
  void set_free_completes_late(TensorId tensor) { program_.tensors.at(tensor).free_completes_late = true; }
  const TensorInfo& tensor(TensorId tensor) const { return program_.tensors.at(tensor); }
  // The stream `tensor` is allocated on, as the caching allocator's pool key (TensorInfo::alloc_stream).
  void set_alloc_stream(TensorId tensor, std::uint8_t stream) { program_.tensors.at(tensor).alloc_stream = stream; }
  // What an executor writes into `tensor` when it is allocated (parameters; everything else starts at zero).
  void add_initial_values(TensorId tensor, ParameterInit init) { program_.tensors.at(tensor).initial_values.push_back(std::move(init)); }

  OpIndex compute(ComputeKind kind, std::string label, double flops, Bytes bytes_accessed, int layer = -1);
  // A copy kernel on the communication stream (e.g. FSDP's copy-out of an all-gather), after the stream's
  // previous op; the compute stream is not held up. Use wait() where compute needs its result.
  OpIndex communication_stream_copy(std::string label, Bytes bytes_accessed, std::vector<OpIndex> deps = {});
  // `tensor`'s allocation waits for `op` (issued after it), as a collective's output buffer appears when the collective
  // has its inputs: DataParallel's gathered output is made when the gather runs, not when device 0 finishes its own
  // forward. The host still allocates in program order (executors); only simulated time moves.
  void allocate_with(TensorId tensor, OpIndex op);
  // The next compute op waits for `op` (a blocking collective: work.wait() / a synchronous call makes the
  // compute stream wait for the NCCL stream). The allocations, frees and phase markers emitted before that compute op
  // come after `op` too: the script is past the wait (DDP's constructor returns after its broadcasts, so "wrapped"
  // and the Reducer's buckets come after them, not at the same instant as "model created").
  void wait(OpIndex op) {
    if (op >= 0) pending_waits_.push_back(op);
  }
  // A collective on `group` (index into Plan::groups); the builder numbers them per group in program order.
  // Like ProcessGroupNCCL, which makes the NCCL stream wait for the current stream before it launches
  // (syncStream in ProcessGroupNCCL.cpp), every collective, send and recv depends on the last compute op
  // issued before it.
  OpIndex collective(CollectiveKind kind, int group, Bytes payload, std::string label, int root = -1,
                     std::vector<OpIndex> deps = {});
  // A collective on the compute stream, for layer `layer`, on `args` (plan/kernel.h's operands): the caller's next
  // kernel waits for it, as Megatron-LM's tensor-parallel collectives are waited for (strategy/tensor_parallel.h).
  OpIndex compute_stream_collective(CollectiveKind kind, int group, Bytes payload, std::string label, int layer,
                                    std::vector<TensorSlice> args);
  // Point-to-point message to / from global rank `peer` on the communication stream; numbered per channel.
  OpIndex send(int peer, Bytes payload, std::string label, std::vector<OpIndex> deps = {});
  OpIndex recv(int peer, Bytes payload, std::string label, std::vector<OpIndex> deps = {});
  void phase(const std::string& name);
  // Ops emitted from now on carry this pipeline micro-batch (-1: none).
  void set_micro_batch(int micro_batch) { micro_batch_ = micro_batch; }
  void add_dep(OpIndex op, OpIndex dep) { program_.ops.at(op).deps.push_back(dep); }
  void set_group(OpIndex op, int group) { program_.ops.at(op).group = group; }
  void set_scale(OpIndex op, double scale) { program_.ops.at(op).scale = scale; }
  // Says what `op` computes, for executors (plan/kernel.h lists each kernel's operands).
  void set_kernel(OpIndex op, Kernel kernel, std::vector<TensorSlice> args) {
    Op& o = program_.ops.at(op);
    o.kernel = kernel;
    if (kernel_operands_) o.args = std::move(args);
  }
  // Says what kind of kernel `op` is, in which element type and shape, for the simulator (plan/compute_work.h).
  void set_work(OpIndex op, const ComputeWork& work) { program_.ops.at(op).work = WorkId(work); }
  OpIndex last_compute() const { return last_compute_; }

  Program finish();

 private:
  OpIndex push(Op op);

  Program program_;
  ElementType compute_;
  bool kernel_operands_;
  std::vector<int> refcount_;
  void depend_on_issued_compute(Op& op) const;
  OpIndex point_to_point(OpKind kind, int peer, Bytes payload, std::string label, std::vector<OpIndex> deps);

  std::map<int, std::int32_t> next_sequence_;
  std::map<std::pair<int, int>, std::int32_t> next_message_;  // (sender, receiver) -> next sequence
  int micro_batch_ = -1;
  std::vector<OpIndex> pending_waits_;
  int step_ = 0;
  OpIndex last_compute_ = -1;
};

}  // namespace shardscope
