// One rank's tensors while its program runs: which are live (and where), which were freed at which op, and the
// resolution of an op's operand slices to device buffers — refusing, as a lowering bug, an operand that is not
// allocated yet, already freed, or read out of its bounds. Used by the rank's host thread only.
#pragma once
#include "exec/exec_layer.h"
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "plan/plan.h"

namespace shardscope::exec {

// A plan that asks for something impossible at run time (the message starts with "lowering bug: ").
class LoweringBug : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class TensorTable {
 public:
  explicit TensorTable(const Program& program);

  void on_alloc(TensorId tensor, const Allocation& allocation, OpIndex op);
  // Marks the tensor freed at `op` and returns its allocation (for the allocator's free()).
  Allocation on_free(TensorId tensor, OpIndex op);
  bool live(TensorId tensor) const;
  const Allocation& allocation(TensorId tensor) const;
  DeviceBuffer buffer(TensorId tensor) const;  // the whole live tensor

  // The operands of op `index`, in its args order; an absent slice (tensor -1) gives an empty buffer. A tensor of
  // 0 bytes that was never allocated (the builder emits no op for it) gives an empty buffer too.
  std::vector<DeviceBuffer> resolve(OpIndex index) const;

 private:
  enum class State { NotAllocated, Live, Freed };
  struct Entry {
    State state = State::NotAllocated;
    Allocation allocation;
    OpIndex alloc_op = -1, free_op = -1;
  };
  DeviceBuffer resolve_slice(OpIndex index, const TensorSlice& slice) const;
  std::string where(OpIndex index) const;  // "rank 1 op 37 'fc3 backward'"

  const Program& program_;
  std::vector<Entry> entries_;
};

}  // namespace shardscope::exec
