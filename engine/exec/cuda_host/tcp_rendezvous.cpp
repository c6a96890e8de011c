// RendezvousServer and fetch_from_master over POSIX sockets, every wait bounded by poll() and a deadline.
#include "exec/cuda_host/tcp_rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

namespace shardscope::exec {

namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[4] = {'S', 'S', 'R', 'V'};

std::string errno_text(int error) { return std::strerror(error); }

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1'000'000'000));
}

// Closes the descriptor when it goes out of scope.
struct Socket {
  int fd = -1;
  explicit Socket(int f = -1) : fd(f) {}
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
  Socket(Socket&& other) noexcept : fd(other.fd) { other.fd = -1; }
  Socket& operator=(Socket&&) = delete;
};

bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) throw RendezvousError("poll failed: " + errno_text(errno));
  }
}

void send_all(int fd, const void* data, std::size_t size, Clock::time_point deadline, const char* what) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    if (!wait_for(fd, POLLOUT, deadline)) throw RendezvousError(std::string("timed out sending ") + what);
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RendezvousError(std::string("sending ") + what + " failed: " + errno_text(errno));
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void recv_all(int fd, void* data, std::size_t size, Clock::time_point deadline, const char* what) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    if (!wait_for(fd, POLLIN, deadline)) throw RendezvousError(std::string("timed out waiting for ") + what);
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) throw RendezvousError(std::string("the connection closed while reading ") + what);
    if (n < 0) throw RendezvousError(std::string("reading ") + what + " failed: " + errno_text(errno));
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void send_u32(int fd, std::uint32_t value, Clock::time_point deadline, const char* what) {
  const std::uint32_t wire = htonl(value);
  send_all(fd, &wire, sizeof wire, deadline, what);
}

std::uint32_t recv_u32(int fd, Clock::time_point deadline, const char* what) {
  std::uint32_t wire = 0;
  recv_all(fd, &wire, sizeof wire, deadline, what);
  return ntohl(wire);
}

void send_reply(int fd, std::uint32_t status, const void* data, std::size_t size, Clock::time_point deadline) {
  send_u32(fd, status, deadline, "the reply");
  send_u32(fd, static_cast<std::uint32_t>(size), deadline, "the reply");
  if (size > 0) send_all(fd, data, size, deadline, "the reply");
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

// One non-blocking connect attempt bounded by the deadline; returns the connected socket or fd -1 and the error.
Socket try_connect(const addrinfo& address, Clock::time_point deadline, std::string& error) {
  Socket socket(::socket(address.ai_family, address.ai_socktype, address.ai_protocol));
  if (socket.fd < 0) {
    error = errno_text(errno);
    return Socket{};
  }
  set_nonblocking(socket.fd);
  if (::connect(socket.fd, address.ai_addr, address.ai_addrlen) == 0) return socket;
  if (errno != EINPROGRESS) {
    error = errno_text(errno);
    return Socket{};
  }
  if (!wait_for(socket.fd, POLLOUT, deadline)) {
    error = "no answer";
    return Socket{};
  }
  int so_error = 0;
  socklen_t length = sizeof so_error;
  ::getsockopt(socket.fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
  if (so_error != 0) {
    error = errno_text(so_error);
    return Socket{};
  }
  return socket;
}

std::string seconds_text(std::chrono::milliseconds timeout) {
  const double s = static_cast<double>(timeout.count()) / 1000.0;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g s", s);
  return buffer;
}

}  // namespace

Endpoint parse_endpoint(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("expected HOST:PORT, got '" + std::string(text) + "'");
  Endpoint endpoint{std::string(text.substr(0, colon)), 0};
  const std::string port(text.substr(colon + 1));
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) || port.size() > 5 ||
      (endpoint.port = std::stoi(port)) < 1 || endpoint.port > 65535)
    throw std::invalid_argument("the port in '" + std::string(text) + "' must be a number in 1..65535");
  return endpoint;
}

RendezvousServer::RendezvousServer(int port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listen_fd_ < 0) throw RendezvousError("cannot open a socket: " + errno_text(errno));
  const int on = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listen_fd_, 64) != 0) {
    const int error = errno;
    ::close(listen_fd_);
    throw RendezvousError("the master cannot listen on port " + std::to_string(port) + ": " + errno_text(error));
  }
  socklen_t length = sizeof address;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
}

RendezvousServer::~RendezvousServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::vector<NodeHello> RendezvousServer::serve(int nnodes, int master_gpus, const std::vector<std::byte>& payload,
                                               std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::map<int, std::pair<Socket, NodeHello>> nodes;
  std::string refusal;
  while (static_cast<int>(nodes.size()) < nnodes - 1) {
    if (!wait_for(listen_fd_, POLLIN, deadline))
      throw RendezvousError("timed out after " + seconds_text(timeout) + " waiting for nodes: " +
                            std::to_string(nodes.size()) + " of " + std::to_string(nnodes - 1) + " joined");
    Socket client(::accept(listen_fd_, nullptr, nullptr));
    if (client.fd < 0) continue;
    set_nonblocking(client.fd);
    char magic[4];
    NodeHello hello;
    try {
      recv_all(client.fd, magic, sizeof magic, deadline, "a node's hello");
      if (std::memcmp(magic, kMagic, sizeof magic) != 0) continue;  // not one of ours: ignore it
      hello.node_rank = static_cast<int>(recv_u32(client.fd, deadline, "a node's hello"));
      hello.gpus = static_cast<int>(recv_u32(client.fd, deadline, "a node's hello"));
    } catch (const RendezvousError&) {
      continue;  // a client that hung up half-way
    }
    if (refusal.empty()) {
      if (hello.node_rank < 1 || hello.node_rank >= nnodes)
        refusal = "node rank " + std::to_string(hello.node_rank) + " is outside 1.." + std::to_string(nnodes - 1);
      else if (nodes.count(hello.node_rank))
        refusal = "node rank " + std::to_string(hello.node_rank) + " joined twice";
      else if (hello.gpus != master_gpus)
        refusal = "node " + std::to_string(hello.node_rank) + " has " + std::to_string(hello.gpus) +
                  " GPUs, the master " + std::to_string(master_gpus) + " (every node needs the same number)";
    }
    if (!refusal.empty()) {
      send_reply(client.fd, 1, refusal.data(), refusal.size(), deadline);
      break;
    }
    nodes.emplace(hello.node_rank, std::make_pair(std::move(client), hello));
  }
  std::vector<NodeHello> hellos{{0, master_gpus}};
  for (auto& [rank, node] : nodes) {
    if (refusal.empty()) {
      send_reply(node.first.fd, 0, payload.data(), payload.size(), deadline);
    } else {
      send_reply(node.first.fd, 1, refusal.data(), refusal.size(), deadline);
    }
    hellos.push_back(node.second);
  }
  if (!refusal.empty()) throw RendezvousError("the master refused the run: " + refusal);
  return hellos;
}

std::vector<std::byte> fetch_from_master(const Endpoint& master, NodeHello hello, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  const std::string where = master.host + ":" + std::to_string(master.port);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(master.host.c_str(), std::to_string(master.port).c_str(), &hints, &found);
  if (resolved != 0) throw RendezvousError("cannot resolve the master '" + master.host + "': " + gai_strerror(resolved));
  std::string error = "no address";
  Socket socket;
  // The master may start later than this node: retry every 100 ms until the deadline.
  while (socket.fd < 0) {
    for (addrinfo* a = found; a != nullptr && socket.fd < 0; a = a->ai_next) {
      Socket attempt = try_connect(*a, deadline, error);
      if (attempt.fd >= 0) std::swap(socket.fd, attempt.fd);
    }
    if (socket.fd >= 0 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, remaining_ms(deadline))));
  }
  ::freeaddrinfo(found);
  if (socket.fd < 0)
    throw RendezvousError("cannot reach the master at " + where + " within " + seconds_text(timeout) + ": " + error);
  try {
    send_all(socket.fd, kMagic, sizeof kMagic, deadline, "the hello");
    send_u32(socket.fd, static_cast<std::uint32_t>(hello.node_rank), deadline, "the hello");
    send_u32(socket.fd, static_cast<std::uint32_t>(hello.gpus), deadline, "the hello");
    const std::uint32_t status = recv_u32(socket.fd, deadline, "the master's reply");
    const std::uint32_t length = recv_u32(socket.fd, deadline, "the master's reply");
    if (length > (64u << 20)) throw RendezvousError("the master's reply is too long (" + std::to_string(length) + " B)");
    std::vector<std::byte> bytes(length);
    if (length > 0) recv_all(socket.fd, bytes.data(), length, deadline, "the master's reply");
    if (status != 0)
      throw RendezvousError("the master refused the run: " +
                            std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    return bytes;
  } catch (const RendezvousError& e) {
    throw RendezvousError("joining the master at " + where + ": " + e.what());
  }
}

}  // namespace shardscope::exec
