// POSIX socket helpers shared by the multi-node rendezvous (exec/cuda_host/tcp_rendezvous.cpp) and trace streaming
// (trace/trace_stream_*.cpp): descriptors closed by scope, name resolution, non-blocking connects and reads bounded
// by deadlines, random nonces, big-endian integers, and length-prefixed frames read without reading past them.
// Standard library and POSIX only.
#pragma once
#include "net/net_layer.h"
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "net/endpoint.h"

struct addrinfo;

namespace shardscope::net {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;
using Nonce = std::array<std::uint8_t, 32>;

// A system call that should not fail did (poll, getrandom, getsockname).
class NetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string errno_text(int error);
int remaining_ms(Clock::time_point deadline);        // clamped to [0, 1e9]
std::string seconds_text(std::chrono::milliseconds timeout);  // "5 s", "0.3 s"

// Closes the descriptor when it goes out of scope.
struct Socket {
  int fd = -1;
  explicit Socket(int f = -1) : fd(f) {}
  ~Socket() { close(); }
  Socket(Socket&& other) noexcept : fd(other.fd) { other.fd = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  void close();
};

struct AddressList {
  addrinfo* first = nullptr;
  AddressList() = default;
  AddressList(const AddressList&) = delete;
  AddressList& operator=(const AddressList&) = delete;
  ~AddressList();
};

// getaddrinfo for a TCP endpoint; 0 or the gai error (gai_strerror names it).
int resolve(const Endpoint& endpoint, int flags, AddressList& out);
std::string numeric_host(const sockaddr* address, socklen_t length);
std::string address_text(const sockaddr_storage& address, socklen_t length);  // "127.0.0.1:41236", "[::1]:80"
bool is_loopback(const sockaddr* address);
Endpoint bound_endpoint(int fd);  // getsockname, numerically

// Binds and listens (non-blocking, close-on-exec, SO_REUSEADDR) on the endpoint's first address that works; port 0
// picks a free one. Returns fd -1 and `error` ("127.0.0.1: Address already in use") when none does.
Socket listen_on(const Endpoint& endpoint, std::string& error);

Nonce random_nonce();  // NetError when the OS has no randomness

void put_u32(Bytes& out, std::uint32_t value);
void put_u64(Bytes& out, std::uint64_t value);
std::uint32_t get_u32(const std::uint8_t* p);
std::uint64_t get_u64(const std::uint8_t* p);
void append(Bytes& out, std::span<const std::uint8_t> bytes);
void append(Bytes& out, std::string_view text);
std::span<const std::uint8_t> as_bytes(std::string_view text);

void set_nonblocking(int fd);
// Waits until fd is ready for `events` (POLLIN, POLLOUT); false at the deadline. NetError if poll fails.
bool wait_for(int fd, short events, Clock::time_point deadline);
// Asked every 100 ms while a connect waits: true gives up (a window closing while a server does not answer).
using Cancelled = bool (*)(const void* context);
// One non-blocking connect attempt bounded by the deadline; the connected socket, or fd -1 and the error.
Socket try_connect(const addrinfo& address, Clock::time_point deadline, std::string& error, Cancelled cancelled = nullptr,
                   const void* context = nullptr);
// Connects to the endpoint's first address that answers; fd -1 and the error when none does.
Socket connect_to(const Endpoint& endpoint, Clock::time_point deadline, std::string& error, Cancelled cancelled = nullptr,
                  const void* context = nullptr);
// Sends all of `data` before the deadline; false (and `error`) when the connection broke or the deadline passed.
bool send_all(int fd, std::span<const std::uint8_t> data, Clock::time_point deadline, std::string& error);

// One frame read incrementally: u32 big-endian length, then exactly that many bytes (never beyond, so what follows
// stays in the socket), refusing a length over the cap before allocating anything.
struct FrameReader {
  enum class Status { More, Done, Closed, TooLong };
  explicit FrameReader(std::uint32_t cap) : cap(cap) {}
  std::uint32_t cap;
  std::uint8_t prefix[4] = {};
  std::size_t prefix_read = 0;
  std::uint32_t length = 0;
  Bytes body;
  std::string error;  // why Closed

  Status read_some(int fd);  // one recv() on a non-blocking socket

 private:
  std::size_t read_of_body = 0;
};

}  // namespace shardscope::net
