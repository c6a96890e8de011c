// When the frees of tensors marked TensorInfo::free_completes_late complete, for every replay of a plan through
// the caching-allocator rules (memory/accounting.cpp, the CUDA executor's rank runner), so both agree.
//
// PyTorch 2.x (c10/cuda/CUDACachingAllocator.cpp): free() of a block used on another stream records an event there
// (insert_events) and returns the block to its pool only once process_events, run at the start of every malloc,
// finds the event complete. For the one case modelled (ProcessGroupGloo's broadcast_coalesced flat, whose copy back
// from pinned host memory still runs on gloo's stream when DistributedDataParallel's Reducer allocates its buckets),
// the free completes at the first allocation after the construction ends: the rule here is "before the first
// allocation after a phase marker that follows the request". Frees requested later than that marker but before the
// allocation complete with them.
#pragma once

namespace shardscope {

class LateFreeSchedule {
 public:
  void requested() {
    if (state_ == State::Idle) state_ = State::Requested;
  }
  void phase_marker() {
    if (state_ == State::Requested) state_ = State::PhasePassed;
  }
  // Called before each allocation: true when the requested frees complete now (then call
  // CachingBlockPool::complete_requested_frees before allocating).
  bool complete_before_allocation() {
    if (state_ != State::PhasePassed) return false;
    state_ = State::Idle;
    return true;
  }

 private:
  enum class State { Idle, Requested, PhasePassed };
  State state_ = State::Idle;
};

}  // namespace shardscope
