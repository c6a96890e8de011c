// Joins the processes of a multi-node run before NCCL starts: the master (node 0) hands every other node the
// bytes it needs (the NCCL unique ids of the run's communicators) over one TCP connection per node, and checks that
// every node came with the same number of GPUs. Only nodes that hold the job token (a secret every node is given,
// --token or SHARDSCOPE_TOKEN) take part; the token itself never crosses the network. Plain POSIX sockets, no
// CUDA: built and tested everywhere (on loopback). Sockets, tokens and HMAC come from engine/net/, shared with trace
// streaming.
//
// Wire format. Every message is a frame: u32 length (big-endian), then that many bytes of body; a body starts
// "SSRV", u8 version (2), u8 kind. Integers are u32 big-endian, nonces and MACs 32 bytes, MAC = HMAC-SHA256 keyed
// with the token:
//   master → node, on accept   CHALLENGE  nonce_m
//   node → master              JOIN       node_rank, gpus, nonce_n, MAC("shardscope-join" nonce_m nonce_n node_rank gpus)
//   master → node, when all    IDS        MAC("shardscope-ids" nonce_m nonce_n payload), payload
//     nodes have joined   or   REFUSED    reason (text)
// The master reads at most kMaxNodeFrame bytes of body from a node, a node at most kMaxMasterFrame from the master:
// a longer length (4 GB, say) drops the connection before anything is read. The master serves every connection at
// once (one poll() loop); a connection that has not sent a valid JOIN within the handshake timeout (5 s) is dropped,
// so a silent, slow or hostile client never holds up the real nodes. A JOIN without the token's MAC is refused
// ("wrong job token") and only that connection closed: the run goes on waiting for the real node. A node checks the
// MAC on the ids, so it never uses ids from anyone without the token either.
#pragma once
#include "exec/exec_layer.h"
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "net/endpoint.h"

namespace shardscope::exec {

// Anything that goes wrong joining: unreachable master, a timeout, a refusal, a malformed message.
class RendezvousError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::uint32_t kMaxNodeFrame = 256;             // JOIN is 78 bytes
inline constexpr std::uint32_t kMaxMasterFrame = 16u << 20;     // the ids: 128 B per communicator
using net::kMinTokenLength;
using net::kTokenEnvironmentVariable;

// What is wrong with a job token, or nothing: it must have at least kMinTokenLength characters (openssl rand -hex 16
// makes one).
std::optional<std::string> job_token_problem(std::string_view token);

// "HOST:PORT" (port 1..65535; an IPv6 host in brackets, "[::1]:29500"); std::invalid_argument otherwise.
using net::Endpoint;
using net::parse_endpoint;

// Where node 0 listens for `--master HOST:PORT`: that host's first address as resolved on node 0 that is not
// loopback, or loopback when there is a single node. RendezvousError when a name resolves to loopback only (a
// Debian /etc/hosts maps the machine's own name to 127.0.1.1): the other nodes could not reach it. A loopback
// address given as such (127.0.0.1, localhost) is taken as meant: several nodes on one machine.
Endpoint master_listen_endpoint(std::string_view master, int nnodes);

struct NodeHello {
  int node_rank = 0;
  int gpus = 0;
};

struct JoinSettings {
  std::string token;                                   // the job token; the same on every node
  std::chrono::milliseconds timeout{60'000};           // the whole join, on every side
  std::chrono::milliseconds handshake_timeout{5'000};  // master: accept → valid JOIN; node: connect → CHALLENGE
  std::size_t max_pending = 64;  // master: unauthenticated connections held at once; beyond, the oldest is dropped
};

// The master's side: listens on construction, serves on serve().
class RendezvousServer {
 public:
  // Binds listen.host as resolved (port 0 picks a free one, for tests); RendezvousError when it cannot.
  explicit RendezvousServer(const Endpoint& listen);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;
  int port() const { return port_; }
  Endpoint bound() const;  // the listening socket's address (getsockname)
  // Waits for nodes 1 .. nnodes-1 (each once, with the token), then sends each the payload. Refuses the run (every
  // joined node told why, then throws) when a node with the token has a node rank out of range or repeated, or a
  // GPU count other than master_gpus; throws on the timeout (naming the nodes missing and the connections refused).
  // Connections without the token are refused one by one and do not end the join. Returns the hellos by node
  // rank (the master's own first).
  std::vector<NodeHello> serve(int nnodes, int master_gpus, const std::vector<std::byte>& payload,
                               const JoinSettings& settings);
  // The connections the last serve() refused or dropped, one line each ("127.0.0.1:41236: wrong job token").
  const std::vector<std::string>& refused() const { return refused_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<std::string> refused_;
};

// A node's side: connects (retrying until the timeout while the master is not up yet or a connection breaks),
// proves it holds the token, and returns the payload. RendezvousError names the master and the reason ("cannot
// reach the master at 10.0.0.1:29500 within 30 s: Connection refused"; "the master at ... refused this node:
// wrong job token ...").
std::vector<std::byte> fetch_from_master(const Endpoint& master, NodeHello hello, const JoinSettings& settings);

}  // namespace shardscope::exec
