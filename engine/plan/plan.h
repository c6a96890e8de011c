// A Plan: one Program (ordered ops + the tensors they allocate) per rank, and the process groups of collectives.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "plan/element_type.h"
#include "plan/op.h"

namespace shardscope {

// Initial values an executor writes into a parameter tensor at allocation: elements [first_element,
// first_element + numel) of parameter `name` (the values a whole, unsharded parameter would have), starting at
// byte `offset` of the tensor. A flat buffer or a ZeRO shard lists one range per parameter piece it holds.
struct ParameterInit {
  std::string name;  // "fc3.weight"
  Bytes offset = 0;
  std::int64_t first_element = 0;
  std::int64_t numel = 0;
  std::int64_t fan_in = 0;  // nn.Linear's init bound 1/sqrt(fan_in), unless bound is set
  std::int64_t parameter_numel = 0;  // of the whole parameter
  double bound = 0;         // > 0: uniform in [-bound, bound)
  bool constant = false;    // every element is `value` (LayerNorm weights, GPT-2's biases)
  float value = 0;
  // Non-empty: this tensor holds a copy of that parameter, kept equal to it by the training (a pipeline's last-stage
  // copy of tied word embeddings, Megatron's word_embeddings_for_head). The joined model counts it as a replica of
  // that parameter, once, not as a parameter of its own; its initial values are still `name`'s.
  std::string copy_of = {};
};

// A tensor's ParameterInit ranges: most tensors have none (activations, gradients, buffers), so the list lives behind
// one pointer (8 B) rather than in a std::vector (24 B). Reads like a vector; copies copy the ranges.
class ParameterInits {
 public:
  ParameterInits() = default;
  ParameterInits(const ParameterInits& other)
      : ranges_(other.ranges_ ? std::make_unique<std::vector<ParameterInit>>(*other.ranges_) : nullptr) {}
  ParameterInits(ParameterInits&&) noexcept = default;
  ParameterInits& operator=(const ParameterInits& other) {
    if (this != &other) ranges_ = other.ranges_ ? std::make_unique<std::vector<ParameterInit>>(*other.ranges_) : nullptr;
    return *this;
  }
  ParameterInits& operator=(ParameterInits&&) noexcept = default;

  bool empty() const { return !ranges_ || ranges_->empty(); }
  std::size_t size() const { return ranges_ ? ranges_->size() : 0; }
  const ParameterInit* begin() const { return ranges_ ? ranges_->data() : nullptr; }
  const ParameterInit* end() const { return ranges_ ? ranges_->data() + ranges_->size() : nullptr; }
  const ParameterInit& operator[](std::size_t i) const { return (*ranges_)[i]; }
  void push_back(ParameterInit init) {
    if (!ranges_) ranges_ = std::make_unique<std::vector<ParameterInit>>();
    ranges_->push_back(std::move(init));
  }

 private:
  std::unique_ptr<std::vector<ParameterInit>> ranges_;
};

// An interned name (each data-parallel replica repeats its neighbour's names), the small fields together and the
// initial values behind a pointer: a tensor takes 32 bytes, where it took 80 and a heap block for its name. A 1,024-rank
// plan holds half a million.
struct TensorInfo {
  OpLabel name;       // "fc3.weight", "bucket 2", "adam exp_avg fc3.weight"
  Bytes bytes = 0;    // tensor bytes (numel × element size), before any allocator rounding
  Category category = Category::Temporaries;
  bool persistent = false;  // allowed to be live when the program ends (parameters, states, user-held tensors)
  ElementType element = ElementType::Fp32;  // what its bytes hold, for executors (plan/element_type.h)
  // The CUDA stream current when PyTorch allocates it: the caching allocator keeps a pool per stream and never
  // hands a block freed on one stream to another (memory/block_pool.h). 0 = the default stream; FSDP2 allocates
  // on three more (strategy/fsdp.h names them).
  std::uint8_t alloc_stream = 0;
  // Its Free only requests the free, as CUDACachingAllocator::free does for a block another stream used
  // (record_stream): memory_allocated drops there, but the block returns to the cache (reusable, mergeable) only
  // before the first allocation after the next phase marker (memory/late_frees.h). Caching-allocator
  // accountings and the CUDA executor honour it; exact bytes ignore it.
  bool free_completes_late = false;
  ParameterInits initial_values;  // empty: executors zero the tensor
};

// Which share of each step's samples a rank's program loads (its LoadBatch ops): the rank is replica `index` of
// `count` data-parallel replicas, so it loads samples [index · b, (index + 1) · b) of the global batch count · b.
// Lowering sets it, so that executors never ask which strategy made the plan. One loader for the whole batch (single,
// DataParallel's device 0, a pipeline without data parallelism) is index 0 of 1.
struct DataShard {
  int index = 0;
  int count = 1;
};

struct Program {
  int rank = 0;
  std::vector<Op> ops;
  std::vector<TensorInfo> tensors;  // indexed by TensorId
  DataShard data;
};

struct Plan {
  std::string strategy;       // "ddp"
  std::string behaviour;      // which framework behaviour the lowering follows: "PyTorch 2.x"
  std::vector<Program> programs;          // one per rank, programs[r].rank == r
  std::vector<std::vector<int>> groups;   // process groups: sorted global ranks
  std::vector<std::string> notes;         // things the user should know ("convolution workspaces not modelled")

  std::size_t op_count() const {
    std::size_t n = 0;
    for (const auto& p : programs) n += p.ops.size();
    return n;
  }
};

}  // namespace shardscope
