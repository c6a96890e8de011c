// RendezvousServer and fetch_from_master over POSIX sockets: the master in one poll() loop over every connection,
// the node with blocking-style reads bounded by poll() and deadlines; frames capped before anything is allocated.
#include "exec/cuda_host/tcp_rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <thread>

#include "net/hmac_sha256.h"
#include "net/socket_util.h"

namespace shardscope::exec {

namespace {

using net::address_text;
using net::AddressList;
using net::append;
using net::as_bytes;
using net::Bytes;
using net::Clock;
using net::Digest256;
using net::digests_equal;
using net::errno_text;
using net::FrameReader;
using net::get_u32;
using net::hmac_sha256;
using net::is_loopback;
using net::Nonce;
using net::numeric_host;
using net::put_u32;
using net::random_nonce;
using net::remaining_ms;
using net::resolve;
using net::seconds_text;
using net::set_nonblocking;
using net::Socket;
using net::try_connect;
using net::wait_for;

constexpr std::uint8_t kMagic[4] = {'S', 'S', 'R', 'V'};
constexpr std::uint8_t kVersion = 2;
enum Kind : std::uint8_t { kChallenge = 1, kJoin = 2, kIds = 3, kRefused = 4 };
constexpr std::size_t kHeaderSize = 6;  // magic, version, kind
constexpr std::size_t kChallengeSize = kHeaderSize + 32;
constexpr std::size_t kJoinSize = kHeaderSize + 4 + 4 + 32 + 32;
constexpr std::string_view kJoinLabel = "shardscope-join";
constexpr std::string_view kIdsLabel = "shardscope-ids";
constexpr const char* kTokenHint = "every node needs the same job token, --token or SHARDSCOPE_TOKEN";

// The frame's length prefix and body header; append the fields after it, then finish_frame().
Bytes start_frame(Kind kind) {
  Bytes frame = {0, 0, 0, 0};
  append(frame, kMagic);
  frame.push_back(kVersion);
  frame.push_back(kind);
  return frame;
}
void finish_frame(Bytes& frame) {
  const auto length = static_cast<std::uint32_t>(frame.size() - 4);
  for (int i = 0; i < 4; ++i) frame[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(length >> (24 - 8 * i));
}

Bytes refused_frame(std::string_view reason) {
  Bytes frame = start_frame(kRefused);
  append(frame, reason);
  finish_frame(frame);
  return frame;
}

Digest256 join_mac(std::string_view token, const Nonce& master, const Nonce& node, std::span<const std::uint8_t> ints) {
  Bytes message;
  append(message, kJoinLabel);
  append(message, master);
  append(message, node);
  append(message, ints);
  return hmac_sha256(as_bytes(token), message);
}

Digest256 ids_mac(std::string_view token, const Nonce& master, const Nonce& node, std::span<const std::uint8_t> payload) {
  Bytes message;
  append(message, kIdsLabel);
  append(message, master);
  append(message, node);
  append(message, payload);
  return hmac_sha256(as_bytes(token), message);
}

bool has_header(const Bytes& body, Kind kind) {
  return body.size() >= kHeaderSize && std::equal(kMagic, kMagic + 4, body.begin()) && body[4] == kVersion &&
         body[5] == kind;
}

// Thrown inside the node's join when the connection broke or stayed silent: it reconnects while time is left.
struct RetryJoin : RendezvousError {
  using RendezvousError::RendezvousError;
};

void send_all(int fd, std::span<const std::uint8_t> data, Clock::time_point deadline, const char* what) {
  std::string error;
  if (!net::send_all(fd, data, deadline, error)) throw RetryJoin(std::string("sending ") + what + ": " + error);
}

// The node's read of one frame from the master. Broken or silent connections are RetryJoin; a frame over the cap
// is a plain RendezvousError (not a ShardScope master).
Bytes read_frame(int fd, Clock::time_point deadline, const std::string& what) {
  FrameReader reader(kMaxMasterFrame);
  for (;;) {
    if (!wait_for(fd, POLLIN, deadline)) throw RetryJoin("no " + what + " in time");
    switch (reader.read_some(fd)) {
      case FrameReader::Status::More:
        break;
      case FrameReader::Status::Done:
        return std::move(reader.body);
      case FrameReader::Status::Closed:
        throw RetryJoin("reading " + what + ": " + reader.error);
      case FrameReader::Status::TooLong:
        throw RendezvousError("the master announced a " + std::to_string(reader.length) + "-byte message (at most " +
                              std::to_string(kMaxMasterFrame) + " accepted): not a ShardScope master?");
    }
  }
}

// The node's half of one connection: CHALLENGE in, JOIN out, IDS or REFUSED in.
std::vector<std::byte> join_over(int fd, NodeHello hello, const JoinSettings& settings, Clock::time_point deadline) {
  const Clock::time_point greeting_deadline = std::min(deadline, Clock::now() + settings.handshake_timeout);
  const Bytes challenge = read_frame(fd, greeting_deadline, "greeting from the master within " +
                                                                seconds_text(settings.handshake_timeout) +
                                                                " (does node 0 run this version of ShardScope?)");
  if (!has_header(challenge, kChallenge) || challenge.size() != kChallengeSize)
    throw RendezvousError("what listens there is not a ShardScope master of this version (rendezvous version " +
                          std::to_string(kVersion) + ")");
  Nonce master_nonce;
  std::copy(challenge.begin() + kHeaderSize, challenge.end(), master_nonce.begin());
  const Nonce node_nonce = random_nonce();
  Bytes ints;
  put_u32(ints, static_cast<std::uint32_t>(hello.node_rank));
  put_u32(ints, static_cast<std::uint32_t>(hello.gpus));
  Bytes join = start_frame(kJoin);
  append(join, ints);
  append(join, node_nonce);
  append(join, join_mac(settings.token, master_nonce, node_nonce, ints));
  finish_frame(join);
  send_all(fd, join, deadline, "the hello");

  const Bytes reply = read_frame(fd, deadline, "reply from the master");
  if (has_header(reply, kRefused))
    throw RendezvousError("the master refused this node: " +
                          std::string(reply.begin() + kHeaderSize, reply.end()));
  if (!has_header(reply, kIds) || reply.size() < kHeaderSize + 32)
    throw RendezvousError("the master's reply is not the ids (another version of ShardScope?)");
  Digest256 mac;
  std::copy_n(reply.begin() + kHeaderSize, mac.size(), mac.begin());
  const std::span<const std::uint8_t> payload(reply.data() + kHeaderSize + 32, reply.size() - kHeaderSize - 32);
  if (!digests_equal(mac, ids_mac(settings.token, master_nonce, node_nonce, payload)))
    throw RendezvousError("the ids are not signed with this node's job token: whoever answered is not the master of "
                          "this job (" + std::string(kTokenHint) + ")");
  std::vector<std::byte> bytes(payload.size());
  std::memcpy(bytes.data(), payload.data(), payload.size());
  return bytes;
}

// One connection on the master's side.
struct Connection {
  enum class State { Handshake, Joined, Closing, Closed };
  Socket socket;
  std::string peer;
  State state = State::Handshake;
  Clock::time_point deadline;  // Handshake: the valid JOIN's; Closing: the refusal's flush
  Bytes out;
  std::size_t sent = 0;
  FrameReader in{kMaxNodeFrame};
  Nonce master_nonce{};
  Nonce node_nonce{};
  NodeHello hello;
  bool pending_output() const { return sent < out.size(); }
};

// Sends what the socket takes now; false when the connection broke.
bool flush(Connection& c) {
  while (c.pending_output()) {
    const ssize_t n = ::send(c.socket.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;
    c.sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::string list_text(const std::vector<std::string>& items, std::size_t at_most) {
  std::string text;
  for (std::size_t i = 0; i < items.size() && i < at_most; ++i) text += (i ? "; " : "") + items[i];
  if (items.size() > at_most) text += "; and " + std::to_string(items.size() - at_most) + " more";
  return text;
}

}  // namespace

std::optional<std::string> job_token_problem(std::string_view token) {
  if (token.empty())
    return std::string("a run over several nodes needs a job token, the same secret on every node: --token or the "
                       "environment variable ") + kTokenEnvironmentVariable + " (e.g. `openssl rand -hex 16`)";
  return net::job_token_problem(token);
}

Endpoint master_listen_endpoint(std::string_view master, int nnodes) {
  Endpoint endpoint = parse_endpoint(master);
  if (nnodes <= 1) return {"127.0.0.1", endpoint.port};
  if (endpoint.host == "localhost") return endpoint;
  AddressList numeric;
  if (resolve(endpoint, AI_NUMERICHOST, numeric) == 0) return endpoint;  // an address, taken as given
  AddressList found;
  const int resolved = resolve(endpoint, 0, found);
  if (resolved != 0)
    throw RendezvousError("cannot resolve --master '" + endpoint.host + "' on node 0: " + gai_strerror(resolved));
  // The first address the others can reach; a loopback one only when there is nothing else.
  for (const addrinfo* a = found.first; a != nullptr; a = a->ai_next)
    if (!is_loopback(a->ai_addr)) return {numeric_host(a->ai_addr, a->ai_addrlen), endpoint.port};
  throw RendezvousError("--master '" + endpoint.host + "' resolves to " +
                        numeric_host(found.first->ai_addr, found.first->ai_addrlen) +
                        " on node 0, a loopback address the other nodes cannot reach (an /etc/hosts entry?): give "
                        "node 0's address as the other nodes see it");
}

RendezvousServer::RendezvousServer(const Endpoint& listen) {
  std::string error;
  net::Socket socket = net::listen_on(listen, error);
  if (socket.fd < 0)
    throw RendezvousError("the master cannot listen on " + listen.host + ":" + std::to_string(listen.port) + " (" +
                          error + "); --master must name node 0 by an address of its own");
  std::swap(listen_fd_, socket.fd);
  port_ = bound().port;
}

RendezvousServer::~RendezvousServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Endpoint RendezvousServer::bound() const {
  try {
    return net::bound_endpoint(listen_fd_);
  } catch (const net::NetError& e) {
    throw RendezvousError(e.what());
  }
}

std::vector<NodeHello> RendezvousServer::serve(int nnodes, int master_gpus, const std::vector<std::byte>& payload,
                                               const JoinSettings& settings) {
  if (payload.size() > kMaxMasterFrame - kHeaderSize - 32)
    throw RendezvousError("the payload (" + std::to_string(payload.size()) + " B) is over the rendezvous's limit");
  refused_.clear();
  const Clock::time_point deadline = Clock::now() + settings.timeout;
  std::vector<std::unique_ptr<Connection>> connections;
  std::map<int, Connection*> joined;
  std::string run_refusal;  // from a node with the token: ends the join for everyone

  auto close = [&](Connection& c, const std::string& why) {
    if (!why.empty()) refused_.push_back(c.peer + ": " + why);
    if (c.state == Connection::State::Joined) joined.erase(c.hello.node_rank);
    c.socket.close();
    c.state = Connection::State::Closed;
  };
  // Tells the client why, then closes once that is sent (or after a second).
  auto refuse = [&](Connection& c, const std::string& why) {
    refused_.push_back(c.peer + ": " + why);
    if (c.state == Connection::State::Joined) joined.erase(c.hello.node_rank);
    c.out = refused_frame(why);
    c.sent = 0;
    c.state = Connection::State::Closing;
    c.deadline = Clock::now() + std::min<std::chrono::milliseconds>(settings.handshake_timeout, std::chrono::seconds(1));
  };
  auto accept_all = [&] {
    for (int i = 0; i < 64; ++i) {
      sockaddr_storage address{};
      socklen_t length = sizeof address;
      Socket socket(::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (socket.fd < 0) {
        // Out of descriptors: the listening socket stays readable, so pause rather than spin.
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return;  // EAGAIN: none left (or the client gave up already)
      }
      auto c = std::make_unique<Connection>();
      c->socket.fd = socket.fd;
      socket.fd = -1;
      c->peer = address_text(address, length);
      c->deadline = Clock::now() + settings.handshake_timeout;
      c->master_nonce = random_nonce();
      c->out = start_frame(kChallenge);
      append(c->out, c->master_nonce);
      finish_frame(c->out);
      if (!flush(*c)) {
        close(*c, "hung up at once");
        continue;
      }
      const std::size_t pending = static_cast<std::size_t>(std::count_if(
          connections.begin(), connections.end(),
          [](const auto& other) { return other->state == Connection::State::Handshake; }));
      if (pending >= std::max<std::size_t>(settings.max_pending, 1)) {
        for (auto& other : connections)
          if (other->state == Connection::State::Handshake) {
            close(*other, "dropped: " + std::to_string(pending) + " connections without a hello at once");
            break;
          }
      }
      connections.push_back(std::move(c));
    }
  };
  auto take_join = [&](Connection& c) {
    const Bytes& body = c.in.body;
    if (body.size() < 4 || !std::equal(kMagic, kMagic + 4, body.begin())) {
      close(c, "not a ShardScope node (no SSRV hello)");
      return;
    }
    if (!has_header(body, kJoin) || body.size() != kJoinSize) {
      refuse(c, "malformed hello (this master speaks rendezvous version " + std::to_string(kVersion) + ")");
      return;
    }
    const std::uint8_t* p = body.data() + kHeaderSize;
    const std::span<const std::uint8_t> ints(p, 8);
    std::copy_n(p + 8, 32, c.node_nonce.begin());
    Digest256 mac;
    std::copy_n(p + 40, 32, mac.begin());
    if (!digests_equal(mac, join_mac(settings.token, c.master_nonce, c.node_nonce, ints))) {
      refuse(c, std::string("wrong job token (") + kTokenHint + ")");
      return;
    }
    c.hello = {static_cast<int>(get_u32(p)), static_cast<int>(get_u32(p + 4))};
    const std::string rank = std::to_string(c.hello.node_rank);
    if (c.hello.node_rank < 1 || c.hello.node_rank >= nnodes)
      run_refusal = "node rank " + rank + " is outside 1.." + std::to_string(nnodes - 1);
    else if (joined.count(c.hello.node_rank))
      run_refusal = "node rank " + rank + " joined twice (from " + joined[c.hello.node_rank]->peer + " and " +
                    c.peer + ")";
    else if (c.hello.gpus != master_gpus)
      run_refusal = "node " + rank + " has " + std::to_string(c.hello.gpus) + " GPUs, the master " +
                    std::to_string(master_gpus) + " (every node needs the same number)";
    if (!run_refusal.empty()) {
      c.out = refused_frame(run_refusal);  // told along with the joined nodes below
      c.sent = 0;
      c.state = Connection::State::Closing;
      c.deadline = Clock::time_point::max();
      return;
    }
    c.state = Connection::State::Joined;
    joined[c.hello.node_rank] = &c;
  };

  bool timed_out = false;
  std::vector<pollfd> polled;
  while (run_refusal.empty() && static_cast<int>(joined.size()) < nnodes - 1) {
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    for (auto& c : connections) {
      if (c->state == Connection::State::Handshake && now >= c->deadline)
        close(*c, "no valid hello within " + seconds_text(settings.handshake_timeout));
      else if (c->state == Connection::State::Closing && now >= c->deadline)
        close(*c, "");
    }
    std::erase_if(connections, [](const auto& c) { return c->state == Connection::State::Closed; });

    Clock::time_point wake = deadline;
    polled.assign(1, pollfd{listen_fd_, POLLIN, 0});
    for (const auto& c : connections) {
      short events = c->state == Connection::State::Closing ? 0 : POLLIN;
      if (c->pending_output()) events |= POLLOUT;
      polled.push_back(pollfd{c->socket.fd, events, 0});
      if (c->state != Connection::State::Joined) wake = std::min(wake, c->deadline);
    }
    const int ready = ::poll(polled.data(), polled.size(), remaining_ms(wake));
    if (ready < 0 && errno != EINTR) throw RendezvousError("poll failed: " + errno_text(errno));
    if (ready <= 0) continue;

    for (std::size_t i = 0; i < connections.size() && run_refusal.empty(); ++i) {
      Connection& c = *connections[i];
      const short revents = polled[i + 1].revents;
      if (revents == 0 || c.state == Connection::State::Closed) continue;
      if (c.pending_output() && !flush(c)) {
        close(c, c.state == Connection::State::Joined ? "node " + std::to_string(c.hello.node_rank) + " hung up" : "hung up");
        continue;
      }
      if (c.state == Connection::State::Closing) {
        if (!c.pending_output() || (revents & (POLLERR | POLLHUP))) close(c, "");
        continue;
      }
      if (!(revents & (POLLIN | POLLHUP | POLLERR))) continue;
      switch (c.in.read_some(c.socket.fd)) {
        case FrameReader::Status::More:
          break;
        case FrameReader::Status::Closed:
          close(c, c.state == Connection::State::Joined
                       ? "node " + std::to_string(c.hello.node_rank) + " hung up before the ids were sent"
                       : "hung up without a valid hello");
          break;
        case FrameReader::Status::TooLong:
          close(c, "announced a " + std::to_string(c.in.length) + "-byte message (at most " +
                       std::to_string(kMaxNodeFrame) + " accepted)");
          break;
        case FrameReader::Status::Done:
          if (c.state == Connection::State::Joined)
            close(c, "node " + std::to_string(c.hello.node_rank) + " sent more after its hello");
          else
            take_join(c);
          break;
      }
    }
    if ((polled[0].revents & POLLIN) && run_refusal.empty()) accept_all();
  }

  // The outcome, to every node that joined with the token (and to the one whose hello refused the run).
  const bool success = run_refusal.empty() && !timed_out;
  std::string missing;
  int missing_count = 0;
  for (int rank = 1; rank < nnodes; ++rank)
    if (!joined.count(rank)) missing += (missing_count++ ? ", " : "") + std::to_string(rank);
  const std::string timeout_text = "timed out after " + seconds_text(settings.timeout) + " waiting for nodes: " +
                                   std::to_string(joined.size()) + " of " + std::to_string(nnodes - 1) +
                                   " joined (missing node" + (missing_count > 1 ? "s " : " ") + missing + ")";
  const Clock::time_point flush_deadline = Clock::now() + settings.handshake_timeout;
  for (auto& c : connections) {
    if (c->state == Connection::State::Handshake) {
      close(*c, "");  // late: the join is over
    } else if (c->state == Connection::State::Joined) {
      if (success) {
        c->out = start_frame(kIds);
        const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size());
        append(c->out, ids_mac(settings.token, c->master_nonce, c->node_nonce, bytes));
        append(c->out, bytes);
        finish_frame(c->out);
      } else {
        c->out = refused_frame(timed_out ? "the master " + timeout_text : run_refusal);
      }
      c->sent = 0;
    }
  }
  std::erase_if(connections, [](const auto& c) { return c->state == Connection::State::Closed; });
  std::string undelivered;
  for (;;) {
    polled.clear();
    std::vector<Connection*> waiting;
    for (auto& c : connections) {
      if (!c->pending_output() || c->socket.fd < 0) continue;
      polled.push_back(pollfd{c->socket.fd, POLLOUT, 0});
      waiting.push_back(c.get());
    }
    if (waiting.empty()) break;
    if (Clock::now() >= flush_deadline) {
      for (Connection* c : waiting)
        if (c->state == Connection::State::Joined) undelivered += " node " + std::to_string(c->hello.node_rank) + " (too slow)";
      break;
    }
    const int ready = ::poll(polled.data(), polled.size(), remaining_ms(flush_deadline));
    if (ready < 0 && errno != EINTR) throw RendezvousError("poll failed: " + errno_text(errno));
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      if (polled[i].revents == 0) continue;
      if (!flush(*waiting[i])) {
        if (waiting[i]->state == Connection::State::Joined)
          undelivered += " node " + std::to_string(waiting[i]->hello.node_rank) + " (hung up)";
        waiting[i]->socket.close();
      }
    }
  }

  if (!run_refusal.empty()) throw RendezvousError("the master refused the run: " + run_refusal);
  if (timed_out)
    throw RendezvousError(timeout_text + (refused_.empty() ? "" : "; refused: " + list_text(refused_, 5)));
  if (!undelivered.empty())
    throw RendezvousError("the NCCL ids did not reach every node:" + undelivered);
  std::vector<NodeHello> hellos{{0, master_gpus}};
  for (const auto& [rank, c] : joined) hellos.push_back(c->hello);
  return hellos;
}

std::vector<std::byte> fetch_from_master(const Endpoint& master, NodeHello hello, const JoinSettings& settings) {
  const Clock::time_point deadline = Clock::now() + settings.timeout;
  const std::string where = master.host + ":" + std::to_string(master.port);
  AddressList found;
  const int resolved = resolve(master, 0, found);
  if (resolved != 0) throw RendezvousError("cannot resolve the master '" + master.host + "': " + gai_strerror(resolved));
  std::string error = "no address";
  bool reached = false;
  // The master may start later than this node, and a connection may break before the ids come: retry every 100 ms
  // until the deadline.
  for (;;) {
    Socket socket;
    for (const addrinfo* a = found.first; a != nullptr && socket.fd < 0; a = a->ai_next) {
      // An address that never answers (a black-holed route) holds one attempt no longer than a handshake.
      Socket attempt = try_connect(*a, std::min(deadline, Clock::now() + settings.handshake_timeout), error);
      std::swap(socket.fd, attempt.fd);
    }
    if (socket.fd >= 0) {
      reached = true;
      try {
        return join_over(socket.fd, hello, settings, deadline);
      } catch (const RetryJoin& e) {
        error = e.what();
      } catch (const RendezvousError& e) {
        throw RendezvousError("joining the master at " + where + ": " + e.what());
      }
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, remaining_ms(deadline))));
  }
  if (!reached)
    throw RendezvousError("cannot reach the master at " + where + " within " + seconds_text(settings.timeout) + ": " +
                          error);
  throw RendezvousError("joining the master at " + where + ": gave up after " + seconds_text(settings.timeout) + ": " +
                        error);
}

}  // namespace shardscope::exec
