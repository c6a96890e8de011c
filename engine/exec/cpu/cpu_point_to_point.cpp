// CpuCommunicator's send / recv: eager, ordered per (sender, receiver) pair through in-process mailboxes.
#include <algorithm>

#include "exec/cpu/cpu_communicator.h"

namespace shardscope::exec::cpu {
namespace {

void check_pair(int world_size, int rank, int peer, const char* what) {
  for (int r : {rank, peer}) {
    if (r < 0 || r >= world_size) {
      throw std::invalid_argument(std::string(what) + ": rank " + std::to_string(r) + " is outside the world of " +
                                  std::to_string(world_size));
    }
  }
  if (rank == peer) throw std::invalid_argument(std::string(what) + ": rank " + std::to_string(rank) + " to itself");
}

}  // namespace

void CpuCommunicator::send(int rank, int peer, std::span<const float> data) {
  check_pair(world_size_, rank, peer, "send");
  if (aborted_.load()) throw_aborted("send from rank " + std::to_string(rank) + " to rank " + std::to_string(peer));
  // Copying into the queue lets the sender go on (like an NCCL send queued on its stream), so two stages that
  // both send before they receive do not deadlock.
  std::vector<float> message(data.begin(), data.end());
  {
    std::lock_guard lock(mailbox_mutex_);
    mailboxes_[{rank, peer}].push_back(std::move(message));
  }
  mailbox_changed_.notify_all();
}

void CpuCommunicator::recv(int rank, int peer, std::span<float> data) {
  check_pair(world_size_, rank, peer, "recv");
  std::unique_lock lock(mailbox_mutex_);
  auto& queue = mailboxes_[{peer, rank}];
  mailbox_changed_.wait(lock, [&] { return aborted_.load() || !queue.empty(); });
  if (aborted_.load()) {
    lock.unlock();
    throw_aborted("recv on rank " + std::to_string(rank) + " from rank " + std::to_string(peer));
  }
  std::vector<float> message = std::move(queue.front());
  queue.pop_front();
  lock.unlock();
  if (message.size() != data.size()) {
    throw std::invalid_argument("recv on rank " + std::to_string(rank) + " from rank " + std::to_string(peer) +
                                ": the message has " + std::to_string(message.size()) + " elements, the buffer " +
                                std::to_string(data.size()));
  }
  std::copy(message.begin(), message.end(), data.begin());
}

}  // namespace shardscope::exec::cpu
