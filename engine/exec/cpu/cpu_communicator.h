// Collectives between rank threads of one process over shared memory, with a real ring schedule: chunks pass
// rank to rank, n-1 steps for reduce-scatter, n-1 for all-gather, all-reduce = both; scatter and gather are rooted
// copies (the root copies straight between its buffer and each member's). fp32 only. One object is shared by all
// rank threads of a run. Knows nothing of plans, allocators or traces.
#pragma once
#include "exec/exec_layer.h"
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscope::exec::cpu {

enum class ReduceOp { Sum, Average };  // Average: the sum divided by the group size once, at the end (ncclAvg)

// What every waiter (and every later call) throws after abort(): the message says which rank failed and why.
class CollectiveAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Contract for every collective:
// - `group` lists global ranks in ring order; every member passes the same list, and the members of a group call
//   the same collectives in the same order (as with NCCL). Disjoint groups run concurrently; a rank may belong to
//   several groups and use them one after another.
// - `rank` is the calling thread's global rank; `data` is its buffer, with the same element count on every member.
// - Results are deterministic: each element is summed in the fixed ring order, so a re-run gives identical bits,
//   and all members of an all-reduce end with identical bits.
// - A call returns only when no other member will read the caller's buffer any more.
// - After abort(), every blocked call wakes and throws CollectiveAborted; so does every later call.
class CpuCommunicator {
 public:
  explicit CpuCommunicator(int world_size);
  ~CpuCommunicator();
  CpuCommunicator(const CpuCommunicator&) = delete;
  CpuCommunicator& operator=(const CpuCommunicator&) = delete;

  int world_size() const { return world_size_; }

  // In place: every member ends with the (averaged) sum of all members' data.
  void all_reduce(std::span<const int> group, int rank, std::span<float> data, ReduceOp op = ReduceOp::Sum);
  // In place: the chunk_range(data.size(), n, member index) part of data ends with the (averaged) sum, which is
  // returned; the rest of data is left holding partial sums. (NCCL's in-place reduce-scatter, uneven chunks.)
  std::span<float> reduce_scatter(std::span<const int> group, int rank, std::span<float> data,
                                   ReduceOp op = ReduceOp::Sum);
  // In place: on entry each member's own chunk (chunk_range(data.size(), n, member index)) holds its values; on
  // return every chunk holds its owner's values.
  void all_gather(std::span<const int> group, int rank, std::span<float> data);
  // root_rank's data is copied to every member (pipelined along the ring in n segments).
  void broadcast(std::span<const int> group, int rank, std::span<float> data, int root_rank);
  // root_rank ends with the (averaged) sum; other members' data is left holding partial sums.
  void reduce(std::span<const int> group, int rank, std::span<float> data, int root_rank,
              ReduceOp op = ReduceOp::Sum);

  // Returns once every member has called it; moves nothing.
  void barrier(std::span<const int> group, int rank);

  // Rooted copies with per-member sizes (torch.cuda.comm.scatter / gather with unequal chunks): every member
  // publishes its buffer, the root copies between it and its own, one member at a time in group order, then releases
  // them. Member k's part of the root's concatenated buffer starts after the parts of members 0..k-1.
  // scatter: `input` (root only; others pass {}) is the concatenation of every member's `output`; each member's
  // output size is its part's size (may be 0, and may differ between members). The root's output may alias its part
  // of the input (a view, as the root's chunk is in torch), which is then left as it is.
  void scatter(std::span<const int> group, int rank, std::span<const float> input, std::span<float> output,
               int root_rank);
  // gather: the root's `output` (others pass {}) receives every member's `input`, concatenated in group order.
  void gather(std::span<const int> group, int rank, std::span<const float> input, std::span<float> output,
              int root_rank);

  // Point to point, ordered per (sender, receiver) pair. send copies the data into the pair's queue and returns at
  // once (so a send never deadlocks against the peer's send); recv blocks until the next message from `peer`
  // arrives and requires its element count to match.
  void send(int rank, int peer, std::span<const float> data);
  void recv(int rank, int peer, std::span<float> data);

  // Ends the run's communication: wakes every waiter with CollectiveAborted("rank F failed: reason"). The first
  // call's message wins; failed_rank -1 means the run itself (not a rank) stopped it. Safe from any thread.
  void abort(int failed_rank, std::string_view reason);
  bool aborted() const { return aborted_.load(); }

  // Called by each member after each of its ring steps (reduce-scatter and all-gather, of all_reduce,
  // reduce_scatter and all_gather): its global rank, the step within the collective, the chunk it just wrote and its
  // whole buffer. From the member's own thread, while its neighbours may be in their own steps: thread-safe, quick.
  // Set before the ranks start. For teaching (the all-reduce lesson shows the ring chunk by chunk) and tests.
  using RingStepObserver = std::function<void(int rank, int step, int chunk, std::span<const float> data)>;
  void set_ring_step_observer(RingStepObserver observer) { ring_step_observer_ = std::move(observer); }

  struct GroupState;  // per process group: members' published buffers and progress (defined in the .cpp)

 private:
  GroupState& group_state(std::span<const int> group, int rank, const char* collective);
  // The protocol behind scatter and gather: publish, the root copies, every member returns (cpu_communicator.cpp).
  // `root_buffer` is the root's concatenation (scatter's input, gather's output), `member_buffer` the caller's part
  // (scatter's output, gather's input); the side that is only read is never written.
  void rooted_copy(std::span<const int> group, int rank, int root_rank, bool scatter, std::span<float> root_buffer,
                   std::span<float> member_buffer);
  [[noreturn]] void throw_aborted(std::string_view where) const;

  int world_size_;
  RingStepObserver ring_step_observer_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex registry_mutex_;  // guards groups_ and abort_message_
  std::string abort_message_;
  std::map<std::vector<int>, std::unique_ptr<GroupState>> groups_;

  std::mutex mailbox_mutex_;
  std::condition_variable mailbox_changed_;
  std::map<std::pair<int, int>, std::deque<std::vector<float>>> mailboxes_;  // (sender, receiver) -> messages

  friend class RingStepper;
};

}  // namespace shardscope::exec::cpu
