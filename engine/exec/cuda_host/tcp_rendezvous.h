// Joins the processes of a multi-node run before NCCL starts: the master (node 0) hands every other node the
// bytes it needs (the NCCL unique ids of the run's communicators) over one plain TCP connection per node, and
// checks that every node came with the same number of GPUs. Plain POSIX sockets, no CUDA: built and tested
// everywhere (on loopback). Depends on the standard library only.
//
// Wire format (all integers u32 big-endian): client → master: "SSRV", node_rank, gpus;
// master → client: status (0 ok, 1 refused), length, bytes (the payload, or the reason when refused).
#pragma once
#include "exec/exec_layer.h"
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::exec {

// Anything that goes wrong joining: unreachable master, a timeout, a refusal, a malformed message.
class RendezvousError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Endpoint {
  std::string host;
  int port = 0;
};
// "HOST:PORT" (port 1..65535); std::invalid_argument otherwise.
Endpoint parse_endpoint(std::string_view text);

struct NodeHello {
  int node_rank = 0;
  int gpus = 0;
};

// The master's side: listens on construction (port 0 picks a free one, for tests), serves on serve().
class RendezvousServer {
 public:
  explicit RendezvousServer(int port);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;
  int port() const { return port_; }
  // Waits for nodes 1 .. nnodes-1 (each once), then sends each the payload, or refuses them all (and throws)
  // when a node rank is out of range or repeated, or their GPU count differs from master_gpus. Returns the
  // hellos by node rank (the master's own first).
  std::vector<NodeHello> serve(int nnodes, int master_gpus, const std::vector<std::byte>& payload,
                               std::chrono::milliseconds timeout);

 private:
  int listen_fd_ = -1;
  int port_ = 0;
};

// A node's side: connects (retrying until the timeout while the master is not up yet), says hello, and returns
// the payload. RendezvousError names the master and the reason ("cannot reach the master at 10.0.0.1:29500
// within 30 s: Connection refused").
std::vector<std::byte> fetch_from_master(const Endpoint& master, NodeHello hello, std::chrono::milliseconds timeout);

}  // namespace shardscope::exec
