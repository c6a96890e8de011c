// The ring schedules of CpuCommunicator's collectives and the lock-step protocol that lets ranks read their left
// neighbour's buffer in place; the rooted copies of scatter and gather. Point to point lives in cpu_point_to_point.cpp.
#include "exec/cpu/cpu_communicator.h"

#include <algorithm>

#include "exec/shared_kernels/ring_chunks.h"

namespace shardscope::exec::cpu {

namespace {

enum class CollectiveKind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, Scatter, Gather, Barrier };

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::Scatter: return "scatter";
    case CollectiveKind::Gather: return "gather";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "?";
}

std::string group_text(const std::vector<int>& ranks) {
  std::string text = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  return text + "]";
}

int ring_mod(int value, int n) { return ((value % n) + n) % n; }

}  // namespace

// A member's published state. `ticks` counts progress through the group's collectives and only grows: entering a
// collective whose first tick is base+1 sets base+1; finishing its step t sets base+2+t. Every member starts each
// collective from the same base because members run the same collectives in the same order.
struct MemberSlot {
  float* data = nullptr;
  std::size_t count = 0;
  CollectiveKind kind = CollectiveKind::AllReduce;
  int root_index = -1;
  std::int64_t ticks = 0;
  bool reading_left = false;  // copying from the left neighbour's buffer right now (outside the lock)
  bool root_copying = false;  // scatter / gather root: copying to or from the members' buffers right now
};

struct CpuCommunicator::GroupState {
  std::vector<int> ranks;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<MemberSlot> slots;
};

// One member's walk through one collective. Before step t a member waits until both neighbours finished step t-1:
// the left one because step t reads what the left wrote in step t-1; the right one because the right reads this
// member's buffer and must be done with what step t overwrites. Neighbours thus stay within one step of each other.
class RingStepper {
 public:
  RingStepper(CpuCommunicator& comm, CpuCommunicator::GroupState& group, int member, CollectiveKind kind,
              std::span<float> data, int root_index)
      : comm_(comm), group_(group), member_(member), n_(static_cast<int>(group.ranks.size())),
        left_(ring_mod(member - 1, n_)), right_(ring_mod(member + 1, n_)), kind_(kind) {
    std::lock_guard lock(group_.mutex);
    MemberSlot& self = group_.slots[static_cast<std::size_t>(member_)];
    base_ = self.ticks;
    self.data = data.data();
    self.count = data.size();
    self.kind = kind;
    self.root_index = root_index;
    self.ticks = base_ + 1;
    group_.changed.notify_all();
  }

  // Waits for the neighbours, then returns the left neighbour's buffer for this step's reads.
  const float* begin_step(int step) {
    std::unique_lock lock(group_.mutex);
    const std::int64_t needed = base_ + 1 + step;
    wait_or_abort(lock, [&] { return tick(left_) >= needed && tick(right_) >= needed; });
    const MemberSlot& left = group_.slots[static_cast<std::size_t>(left_)];
    if (step == 0) check_left_matches(lock, left);
    group_.slots[static_cast<std::size_t>(member_)].reading_left = true;
    return left.data;
  }

  void end_step(int step) {
    {
      std::lock_guard lock(group_.mutex);
      MemberSlot& self = group_.slots[static_cast<std::size_t>(member_)];
      self.reading_left = false;
      self.ticks = base_ + 2 + step;
    }
    group_.changed.notify_all();
  }

  void observe(int step, int chunk, std::span<const float> data) const {
    if (comm_.ring_step_observer_) comm_.ring_step_observer_(group_.ranks[static_cast<std::size_t>(member_)], step, chunk, data);
  }

  // The right neighbour is the only reader of this member's buffer: once it is past the last step, return.
  void finish(int steps) {
    std::unique_lock lock(group_.mutex);
    wait_or_abort(lock, [&] { return tick(right_) >= base_ + 1 + steps; });
  }

 private:
  std::int64_t tick(int member) const { return group_.slots[static_cast<std::size_t>(member)].ticks; }

  template <typename Predicate>
  void wait_or_abort(std::unique_lock<std::mutex>& lock, Predicate ready) {
    group_.changed.wait(lock, [&] { return comm_.aborted_.load() || ready(); });
    if (!comm_.aborted_.load()) return;
    // Before the caller may free its buffer, the right neighbour must not be in the middle of copying from it; a
    // copy is finite and ends in end_step, which notifies.
    group_.changed.wait(lock, [&] { return !group_.slots[static_cast<std::size_t>(right_)].reading_left; });
    lock.unlock();
    comm_.throw_aborted(std::string(collective_name(kind_)) + " on group " + group_text(group_.ranks));
  }

  void check_left_matches(std::unique_lock<std::mutex>& lock, const MemberSlot& left) {
    const MemberSlot& self = group_.slots[static_cast<std::size_t>(member_)];
    if (left.kind == self.kind && left.count == self.count && left.root_index == self.root_index) return;
    const std::string message =
        "mismatched collectives on group " + group_text(group_.ranks) + ": rank " +
        std::to_string(group_.ranks[static_cast<std::size_t>(member_)]) + " called " + collective_name(self.kind) +
        " of " + std::to_string(self.count) + " elements, rank " +
        std::to_string(group_.ranks[static_cast<std::size_t>(left_)]) + " called " + collective_name(left.kind) +
        " of " + std::to_string(left.count);
    lock.unlock();
    comm_.abort(group_.ranks[static_cast<std::size_t>(member_)], message);
    lock.lock();
    wait_or_abort(lock, [] { return false; });
  }

  CpuCommunicator& comm_;
  CpuCommunicator::GroupState& group_;
  int member_, n_, left_, right_;
  CollectiveKind kind_;
  std::int64_t base_ = 0;
};

namespace {

void add_from(const float* left, std::span<float> data, ChunkRange chunk) {
  // left partial sum first, then this member's value: the order the ring fixes for every element.
  for (std::size_t i = chunk.begin; i < chunk.end(); ++i) data[i] = left[i] + data[i];
}

void copy_from(const float* left, std::span<float> data, ChunkRange chunk) {
  std::copy(left + chunk.begin, left + chunk.end(), data.begin() + static_cast<std::ptrdiff_t>(chunk.begin));
}

void divide(std::span<float> data, ChunkRange chunk, int n) {
  const float divisor = static_cast<float>(n);
  for (std::size_t i = chunk.begin; i < chunk.end(); ++i) data[i] /= divisor;
}

// Reduce-scatter steps 0..n-2 of member `me`: at step s it adds its own values into chunk me-s-2 as received from
// the left. Chunk c starts at member c+1 and gains one member per step, ending complete at member c after n-1 steps.
void ring_reduce_scatter_steps(RingStepper& stepper, int first_step, int me, int n, std::span<float> data, bool average) {
  for (int s = 0; s < n - 1; ++s) {
    const float* left = stepper.begin_step(first_step + s);
    const int chunk = ring_mod(me - s - 2, n);
    const ChunkRange range = chunk_range(data.size(), n, chunk);
    add_from(left, data, range);
    if (average && s == n - 2) divide(data, range, n);  // chunk == me: complete now, divided once by its owner
    stepper.observe(first_step + s, chunk, data);
    stepper.end_step(first_step + s);
  }
}

// All-gather steps: at step s member `me` copies chunk me-s-1 from the left, which owned or received it a step ago.
void ring_all_gather_steps(RingStepper& stepper, int first_step, int me, int n, std::span<float> data) {
  for (int s = 0; s < n - 1; ++s) {
    const float* left = stepper.begin_step(first_step + s);
    const int chunk = ring_mod(me - s - 1, n);
    copy_from(left, data, chunk_range(data.size(), n, chunk));
    stepper.observe(first_step + s, chunk, data);
    stepper.end_step(first_step + s);
  }
}

int member_index(const std::vector<int>& ranks, int rank, const char* what) {
  const auto it = std::find(ranks.begin(), ranks.end(), rank);
  if (it == ranks.end()) {
    throw std::invalid_argument(std::string(what) + " rank " + std::to_string(rank) + " is not in group " +
                                group_text(ranks));
  }
  return static_cast<int>(it - ranks.begin());
}

}  // namespace

CpuCommunicator::CpuCommunicator(int world_size) : world_size_(world_size) {
  if (world_size < 1) throw std::invalid_argument("CpuCommunicator: world size must be at least 1");
}

CpuCommunicator::~CpuCommunicator() = default;

CpuCommunicator::GroupState& CpuCommunicator::group_state(std::span<const int> group, int rank,
                                                          const char* collective) {
  std::vector<int> ranks(group.begin(), group.end());
  if (aborted_.load()) throw_aborted(std::string(collective) + " on group " + group_text(ranks));
  std::lock_guard lock(registry_mutex_);
  auto it = groups_.find(ranks);
  if (it == groups_.end()) {
    if (ranks.empty()) throw std::invalid_argument("collective on an empty group");
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] < 0 || sorted[i] >= world_size_) {
        throw std::invalid_argument("group " + group_text(ranks) + ": rank " + std::to_string(sorted[i]) +
                                    " is outside the world of " + std::to_string(world_size_));
      }
      if (i > 0 && sorted[i] == sorted[i - 1]) {
        throw std::invalid_argument("group " + group_text(ranks) + " lists rank " + std::to_string(sorted[i]) +
                                    " twice");
      }
    }
    auto state = std::make_unique<GroupState>();
    state->ranks = ranks;
    state->slots.resize(ranks.size());
    it = groups_.emplace(std::move(ranks), std::move(state)).first;
  }
  member_index(it->second->ranks, rank, "calling");
  return *it->second;
}

void CpuCommunicator::all_reduce(std::span<const int> group, int rank, std::span<float> data, ReduceOp op) {
  GroupState& state = group_state(group, rank, "all_reduce");
  const int n = static_cast<int>(state.ranks.size());
  if (n == 1) return;
  const int me = member_index(state.ranks, rank, "calling");
  RingStepper stepper(*this, state, me, CollectiveKind::AllReduce, data, -1);
  ring_reduce_scatter_steps(stepper, 0, me, n, data, op == ReduceOp::Average);
  ring_all_gather_steps(stepper, n - 1, me, n, data);
  stepper.finish(2 * (n - 1));
}

std::span<float> CpuCommunicator::reduce_scatter(std::span<const int> group, int rank, std::span<float> data,
                                                 ReduceOp op) {
  GroupState& state = group_state(group, rank, "reduce_scatter");
  const int n = static_cast<int>(state.ranks.size());
  const int me = member_index(state.ranks, rank, "calling");
  if (n > 1) {
    RingStepper stepper(*this, state, me, CollectiveKind::ReduceScatter, data, -1);
    ring_reduce_scatter_steps(stepper, 0, me, n, data, op == ReduceOp::Average);
    stepper.finish(n - 1);
  }
  const ChunkRange own = chunk_range(data.size(), n, me);
  return data.subspan(own.begin, own.size);
}

void CpuCommunicator::all_gather(std::span<const int> group, int rank, std::span<float> data) {
  GroupState& state = group_state(group, rank, "all_gather");
  const int n = static_cast<int>(state.ranks.size());
  if (n == 1) return;
  const int me = member_index(state.ranks, rank, "calling");
  RingStepper stepper(*this, state, me, CollectiveKind::AllGather, data, -1);
  ring_all_gather_steps(stepper, 0, me, n, data);
  stepper.finish(n - 1);
}

// n - 1 empty ring steps: after step t a member knows that the members up to t + 1 places to its left have
// arrived, so after n - 1 steps all have.
void CpuCommunicator::barrier(std::span<const int> group, int rank) {
  GroupState& state = group_state(group, rank, "barrier");
  const int n = static_cast<int>(state.ranks.size());
  if (n == 1) return;
  const int me = member_index(state.ranks, rank, "calling");
  RingStepper stepper(*this, state, me, CollectiveKind::Barrier, {}, -1);
  for (int t = 0; t < n - 1; ++t) {
    stepper.begin_step(t);
    stepper.end_step(t);
  }
  stepper.finish(n - 1);
}

// Broadcast and reduce pipeline n segments along the ring: a member at distance d from where the data starts
// handles segment k at step k + d - 1, one step after its left neighbour; 2n - 2 steps in all.
void CpuCommunicator::broadcast(std::span<const int> group, int rank, std::span<float> data, int root_rank) {
  GroupState& state = group_state(group, rank, "broadcast");
  const int n = static_cast<int>(state.ranks.size());
  const int root = member_index(state.ranks, root_rank, "broadcast root");
  if (n == 1) return;
  const int me = member_index(state.ranks, rank, "calling");
  const int distance = ring_mod(me - root, n);  // 0 = root, which only supplies data
  RingStepper stepper(*this, state, me, CollectiveKind::Broadcast, data, root);
  const int steps = 2 * n - 2;
  for (int t = 0; t < steps; ++t) {
    const float* left = stepper.begin_step(t);
    const int segment = t - (distance - 1);
    if (distance > 0 && segment >= 0 && segment < n) copy_from(left, data, chunk_range(data.size(), n, segment));
    stepper.end_step(t);
  }
  stepper.finish(steps);
}

void CpuCommunicator::reduce(std::span<const int> group, int rank, std::span<float> data, int root_rank,
                             ReduceOp op) {
  GroupState& state = group_state(group, rank, "reduce");
  const int n = static_cast<int>(state.ranks.size());
  const int root = member_index(state.ranks, root_rank, "reduce root");
  if (n == 1) return;
  const int me = member_index(state.ranks, rank, "calling");
  // The chain starts at the member after the root (position 0) and ends at the root (position n - 1).
  const int position = ring_mod(me - root - 1, n);
  RingStepper stepper(*this, state, me, CollectiveKind::Reduce, data, root);
  const int steps = 2 * n - 2;
  for (int t = 0; t < steps; ++t) {
    const float* left = stepper.begin_step(t);
    const int segment = t - (position - 1);
    if (position > 0 && segment >= 0 && segment < n) {
      const ChunkRange range = chunk_range(data.size(), n, segment);
      add_from(left, data, range);
      if (op == ReduceOp::Average && me == root) divide(data, range, n);
    }
    stepper.end_step(t);
  }
  stepper.finish(steps);
}

void CpuCommunicator::scatter(std::span<const int> group, int rank, std::span<const float> input,
                              std::span<float> output, int root_rank) {
  rooted_copy(group, rank, root_rank, true, {const_cast<float*>(input.data()), input.size()}, output);
}

void CpuCommunicator::gather(std::span<const int> group, int rank, std::span<const float> input,
                             std::span<float> output, int root_rank) {
  rooted_copy(group, rank, root_rank, false, output, {const_cast<float*>(input.data()), input.size()});
}

// Scatter and gather move each member's part once, between the root's buffer and the member's, so a ring would only
// add hops: every member publishes its buffer (tick base+1) and waits; the root waits for all, checks that they
// called the same collective with the same root and that the parts add up to its buffer, copies part by part in
// group order and publishes base+2. Every member returns at base+2, so the next collective starts from one base.
void CpuCommunicator::rooted_copy(std::span<const int> group, int rank, int root_rank, bool scatter,
                                  std::span<float> root_buffer, std::span<float> member_buffer) {
  const CollectiveKind kind = scatter ? CollectiveKind::Scatter : CollectiveKind::Gather;
  const std::string where = std::string(collective_name(kind)) + " on group " + group_text({group.begin(), group.end()});
  GroupState& state = group_state(group, rank, collective_name(kind));
  const int n = static_cast<int>(state.ranks.size());
  const int root = member_index(state.ranks, root_rank, scatter ? "scatter root" : "gather root");
  const int me = member_index(state.ranks, rank, "calling");
  auto copy_part = [&](float* part, std::size_t count, std::size_t offset) {
    float* in_root = root_buffer.data() + offset;
    if (in_root == part || count == 0) return;  // the root's own part, a view of its buffer
    if (scatter) {
      std::copy(in_root, in_root + count, part);
    } else {
      std::copy(part, part + count, in_root);
    }
  };
  auto parts_mismatch = [&](std::size_t total) {
    return "the members' parts hold " + std::to_string(total) + " elements, the root's buffer " +
           std::to_string(root_buffer.size());
  };
  if (n == 1) {
    if (member_buffer.size() != root_buffer.size()) throw std::invalid_argument(where + ": " + parts_mismatch(member_buffer.size()));
    return copy_part(member_buffer.data(), member_buffer.size(), 0);
  }

  std::unique_lock lock(state.mutex);
  MemberSlot& self = state.slots[static_cast<std::size_t>(me)];
  const std::int64_t base = self.ticks;
  self.data = member_buffer.data();
  self.count = member_buffer.size();
  self.kind = kind;
  self.root_index = root;
  self.ticks = base + 1;
  state.changed.notify_all();
  MemberSlot& root_slot = state.slots[static_cast<std::size_t>(root)];
  if (me != root) {
    state.changed.wait(lock, [&] { return aborted_.load() || root_slot.ticks >= base + 2; });
    if (aborted_.load()) {
      // The root may be copying to or from this buffer; the caller must not free it before that copy ends.
      state.changed.wait(lock, [&] { return !root_slot.root_copying; });
      lock.unlock();
      throw_aborted(where);
    }
    self.ticks = base + 2;
    state.changed.notify_all();
    return;
  }

  state.changed.wait(lock, [&] {
    if (aborted_.load()) return true;
    for (const MemberSlot& slot : state.slots)
      if (slot.ticks < base + 1) return false;
    return true;
  });
  if (aborted_.load()) {
    lock.unlock();
    throw_aborted(where);
  }
  std::string mismatch;
  std::vector<std::pair<float*, std::size_t>> parts;
  std::size_t total = 0;
  for (int k = 0; k < n; ++k) {
    const MemberSlot& slot = state.slots[static_cast<std::size_t>(k)];
    if (mismatch.empty() && (slot.kind != kind || slot.root_index != root))
      mismatch = "mismatched collectives on group " + group_text(state.ranks) + ": rank " + std::to_string(rank) +
                 " called " + collective_name(kind) + " rooted at rank " + std::to_string(root_rank) + ", rank " +
                 std::to_string(state.ranks[static_cast<std::size_t>(k)]) + " called " + collective_name(slot.kind);
    parts.emplace_back(slot.data, slot.count);
    total += slot.count;
  }
  if (mismatch.empty() && total != root_buffer.size()) mismatch = where + ": " + parts_mismatch(total);
  if (!mismatch.empty()) {
    lock.unlock();
    abort(rank, mismatch);
    throw_aborted(where);
  }
  self.root_copying = true;
  lock.unlock();
  std::size_t offset = 0;
  for (const auto& [data, count] : parts) {
    copy_part(data, count, offset);
    offset += count;
  }
  lock.lock();
  self.root_copying = false;
  self.ticks = base + 2;
  state.changed.notify_all();
}

void CpuCommunicator::abort(int failed_rank, std::string_view reason) {
  std::vector<GroupState*> groups;
  {
    std::lock_guard lock(registry_mutex_);
    if (!aborted_.load()) {
      abort_message_ = (failed_rank >= 0 ? "rank " + std::to_string(failed_rank) + " failed: " : "run aborted: ") +
                       std::string(reason);
      aborted_.store(true);
    }
    for (auto& [ranks, state] : groups_) groups.push_back(state.get());
  }
  // Taking each waiter's mutex before notifying closes the gap between its check of the flag and its wait.
  for (GroupState* group : groups) {
    { std::lock_guard lock(group->mutex); }
    group->changed.notify_all();
  }
  { std::lock_guard lock(mailbox_mutex_); }
  mailbox_changed_.notify_all();
}

void CpuCommunicator::throw_aborted(std::string_view where) const {
  std::string message;
  {
    std::lock_guard lock(registry_mutex_);
    message = abort_message_;
  }
  throw CollectiveAborted(message + " (" + std::string(where) + ")");
}

}  // namespace shardscope::exec::cpu
