// Socket helpers (see socket_util.h).
#include "net/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardscope::net {

std::string errno_text(int error) { return std::strerror(error); }

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1'000'000'000));
}

std::string seconds_text(std::chrono::milliseconds timeout) {
  const double s = static_cast<double>(timeout.count()) / 1000.0;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g s", s);
  return buffer;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd = other.fd;
    other.fd = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

AddressList::~AddressList() {
  if (first) ::freeaddrinfo(first);
}

int resolve(const Endpoint& endpoint, int flags, AddressList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  return ::getaddrinfo(endpoint.host.c_str(), std::to_string(endpoint.port).c_str(), &hints, &out.first);
}

std::string numeric_host(const sockaddr* address, socklen_t length) {
  char host[NI_MAXHOST] = "?";
  ::getnameinfo(address, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST);
  return host;
}

namespace {
int port_of(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port)
                                       : ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
}
}  // namespace

std::string address_text(const sockaddr_storage& address, socklen_t length) {
  const std::string host = numeric_host(reinterpret_cast<const sockaddr*>(&address), length);
  return (address.ss_family == AF_INET6 ? "[" + host + "]" : host) + ":" + std::to_string(port_of(address));
}

bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24) == 127;
  if (address->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return false;
}

Endpoint bound_endpoint(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    throw NetError("getsockname failed: " + errno_text(errno));
  return {numeric_host(reinterpret_cast<const sockaddr*>(&address), length), port_of(address)};
}

Socket listen_on(const Endpoint& endpoint, std::string& error) {
  AddressList found;
  const int resolved = resolve(endpoint, AI_PASSIVE, found);
  if (resolved != 0) {
    error = gai_strerror(resolved);
    return Socket{};
  }
  error = "no address";
  for (const addrinfo* a = found.first; a != nullptr; a = a->ai_next) {
    Socket socket(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (socket.fd < 0) {
      error = errno_text(errno);
      continue;
    }
    const int on = 1;
    ::setsockopt(socket.fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(socket.fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(socket.fd, 64) != 0) {
      const int failure = errno;
      error = numeric_host(a->ai_addr, a->ai_addrlen) + ": " + errno_text(failure);
      continue;
    }
    return socket;
  }
  return Socket{};
}

Nonce random_nonce() {
  Nonce nonce;
  std::size_t filled = 0;
  while (filled < nonce.size()) {
    const ssize_t n = ::getrandom(nonce.data() + filled, nonce.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw NetError("no random numbers for the handshake: " + errno_text(errno));
    filled += static_cast<std::size_t>(n);
  }
  return nonce;
}

void put_u32(Bytes& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}
void put_u64(Bytes& out, std::uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}
std::uint64_t get_u64(const std::uint8_t* p) { return (std::uint64_t{get_u32(p)} << 32) | get_u32(p + 4); }

void append(Bytes& out, std::span<const std::uint8_t> bytes) { out.insert(out.end(), bytes.begin(), bytes.end()); }
void append(Bytes& out, std::string_view text) { out.insert(out.end(), text.begin(), text.end()); }
std::span<const std::uint8_t> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) throw NetError("poll failed: " + errno_text(errno));
  }
}

Socket try_connect(const addrinfo& address, Clock::time_point deadline, std::string& error, Cancelled cancelled,
                   const void* context) {
  Socket socket(::socket(address.ai_family, address.ai_socktype | SOCK_CLOEXEC, address.ai_protocol));
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
  for (;;) {
    const Clock::time_point slice = cancelled ? std::min(deadline, Clock::now() + std::chrono::milliseconds(100)) : deadline;
    if (wait_for(socket.fd, POLLOUT, slice)) break;
    if (Clock::now() >= deadline || (cancelled && cancelled(context))) {
      error = "no answer";
      return Socket{};
    }
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

Socket connect_to(const Endpoint& endpoint, Clock::time_point deadline, std::string& error, Cancelled cancelled,
                  const void* context) {
  AddressList found;
  const int resolved = resolve(endpoint, 0, found);
  if (resolved != 0) {
    error = std::string("cannot resolve '") + endpoint.host + "': " + gai_strerror(resolved);
    return Socket{};
  }
  error = "no address";
  for (const addrinfo* a = found.first; a != nullptr; a = a->ai_next) {
    Socket socket = try_connect(*a, deadline, error, cancelled, context);
    if (socket.fd >= 0 || (cancelled && cancelled(context))) return socket;
  }
  return Socket{};
}

bool send_all(int fd, std::span<const std::uint8_t> data, Clock::time_point deadline, std::string& error) {
  while (!data.empty()) {
    if (!wait_for(fd, POLLOUT, deadline)) {
      error = "timed out sending";
      return false;
    }
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) {
      error = n == 0 ? "the connection closed" : errno_text(errno);
      return false;
    }
    data = data.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

FrameReader::Status FrameReader::read_some(int fd) {
  std::uint8_t* into = nullptr;
  std::size_t wanted = 0;
  if (prefix_read < 4) {
    into = prefix + prefix_read;
    wanted = 4 - prefix_read;
  } else {
    into = body.data() + read_of_body;
    wanted = length - read_of_body;
  }
  const ssize_t n = ::recv(fd, into, wanted, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Status::More;
  if (n <= 0) {
    error = n == 0 ? "the connection closed" : errno_text(errno);
    return Status::Closed;
  }
  if (prefix_read < 4) {
    prefix_read += static_cast<std::size_t>(n);
    if (prefix_read < 4) return Status::More;
    length = get_u32(prefix);
    if (length > cap) return Status::TooLong;
    body.assign(length, 0);
    read_of_body = 0;
    return length == 0 ? Status::Done : Status::More;
  }
  read_of_body += static_cast<std::size_t>(n);
  return read_of_body == length ? Status::Done : Status::More;
}

}  // namespace shardscope::net
