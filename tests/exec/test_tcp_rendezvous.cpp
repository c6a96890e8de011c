// The multi-node join (NCCL unique ids from node 0) over TCP on loopback: a master and nodes in threads, refusals,
// a clear error when the master cannot be reached; the job token, per-connection handshake timeouts, capped
// messages and the listening address, with raw sockets playing the silent, hostile or impostor peer.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>

#include "net/hmac_sha256.h"
#include "exec/cuda_host/tcp_rendezvous.h"

namespace shardscope::exec {
namespace {

using net::Digest256;
using net::digests_equal;
using net::hmac_sha256;
using net::sha256;

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Raw = std::vector<std::uint8_t>;

constexpr const char* kToken = "test-token-0123456789abcdef";

std::vector<std::byte> bytes(std::string_view text) {
  std::vector<std::byte> out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) out[i] = static_cast<std::byte>(text[i]);
  return out;
}

JoinSettings settings(std::chrono::milliseconds timeout = 10s, std::chrono::milliseconds handshake = 5s,
                      std::string token = kToken) {
  JoinSettings s;
  s.token = std::move(token);
  s.timeout = timeout;
  s.handshake_timeout = handshake;
  return s;
}

// A plain blocking TCP client (or a listening socket, for a fake master), closed on destruction.
struct RawSocket {
  int fd = -1;
  explicit RawSocket(int f) : fd(f) {}
  ~RawSocket() {
    if (fd >= 0) ::close(fd);
  }
  RawSocket(RawSocket&& other) noexcept : fd(other.fd) { other.fd = -1; }
};

sockaddr_in ipv4(const char* host, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, host, &address.sin_addr);
  return address;
}

// -1 and errno when the connection is refused.
int connect_to(const char* host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in address = ipv4(host, port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

RawSocket raw_connect(int port) {
  const int fd = connect_to("127.0.0.1", port);
  EXPECT_GE(fd, 0) << std::strerror(errno);
  return RawSocket(fd);
}

void send_raw(int fd, const Raw& data) {
  ASSERT_EQ(::send(fd, data.data(), data.size(), MSG_NOSIGNAL), static_cast<ssize_t>(data.size()));
}

// Everything the peer sends until it closes the connection or `wait` passes; `closed` says which.
Raw read_until_closed(int fd, std::chrono::milliseconds wait, bool* closed = nullptr) {
  Raw received;
  const auto deadline = Clock::now() + wait;
  if (closed) *closed = false;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 1))) <= 0) continue;
    std::uint8_t buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    received.insert(received.end(), buffer, buffer + n);
  }
  return received;
}

// Reads exactly `size` bytes (blocking, with a 5 s guard).
Raw read_exactly(int fd, std::size_t size) {
  Raw out;
  const auto deadline = Clock::now() + 5s;
  while (out.size() < size && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    std::uint8_t buffer[256];
    const ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, size - out.size()), 0);
    if (n <= 0) break;
    out.insert(out.end(), buffer, buffer + n);
  }
  return out;
}

std::uint32_t u32_at(const Raw& data, std::size_t offset) {
  return (std::uint32_t{data[offset]} << 24) | (std::uint32_t{data[offset + 1]} << 16) |
         (std::uint32_t{data[offset + 2]} << 8) | std::uint32_t{data[offset + 3]};
}
void put_u32(Raw& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}
Raw header(std::uint8_t kind) { return {'S', 'S', 'R', 'V', 2, kind}; }
Raw framed(const Raw& body) {
  Raw out;
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}
bool contains(const Raw& haystack, std::string_view needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

// The master's greeting as the README documents it: length 38, "SSRV", version 2, kind 1, a 32-byte nonce.
Raw read_challenge(int fd) {
  const Raw challenge = read_exactly(fd, 4 + 38);
  EXPECT_EQ(challenge.size(), 42u);
  if (challenge.size() != 42u) return {};
  EXPECT_EQ(u32_at(challenge, 0), 38u);
  EXPECT_EQ(Raw(challenge.begin() + 4, challenge.begin() + 10), header(1));
  return Raw(challenge.begin() + 10, challenge.end());
}

// A JOIN frame; with `token` its MAC is the real one (HMAC-SHA256 of "shardscope-join" nonce_m nonce_n rank gpus).
Raw join_frame(const Raw& master_nonce, int node_rank, int gpus, const char* token) {
  Raw ints;
  put_u32(ints, static_cast<std::uint32_t>(node_rank));
  put_u32(ints, static_cast<std::uint32_t>(gpus));
  const Raw node_nonce(32, 0x42);
  Raw message = {'s', 'h', 'a', 'r', 'd', 's', 'c', 'o', 'p', 'e', '-', 'j', 'o', 'i', 'n'};
  message.insert(message.end(), master_nonce.begin(), master_nonce.end());
  message.insert(message.end(), node_nonce.begin(), node_nonce.end());
  message.insert(message.end(), ints.begin(), ints.end());
  Digest256 mac{};
  if (token) mac = hmac_sha256({reinterpret_cast<const std::uint8_t*>(token), std::strlen(token)}, message);
  Raw body = header(2);
  body.insert(body.end(), ints.begin(), ints.end());
  body.insert(body.end(), node_nonce.begin(), node_nonce.end());
  body.insert(body.end(), mac.begin(), mac.end());
  return framed(body);
}

std::string hex(const Digest256& digest) {
  std::string out;
  char buffer[3];
  for (std::uint8_t b : digest) {
    std::snprintf(buffer, sizeof buffer, "%02x", b);
    out += buffer;
  }
  return out;
}
std::span<const std::uint8_t> text_bytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

TEST(TcpRendezvous, Sha256AndHmacMatchTheStandardsVectors) {
  EXPECT_EQ(hex(sha256(text_bytes(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256(text_bytes("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256(text_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),  // 56 B: 2 pad blocks
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
  const Raw key1(20, 0x0b);
  EXPECT_EQ(hex(hmac_sha256(key1, text_bytes("Hi There"))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(hmac_sha256(text_bytes("Jefe"), text_bytes("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const Raw key6(131, 0xaa);
  EXPECT_EQ(hex(hmac_sha256(key6, text_bytes("Test Using Larger Than Block-Size Key - Hash Key First"))),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_TRUE(digests_equal(sha256(text_bytes("x")), sha256(text_bytes("x"))));
  EXPECT_FALSE(digests_equal(sha256(text_bytes("x")), sha256(text_bytes("y"))));
}

TEST(TcpRendezvous, TokenMustBeGivenAndLongEnough) {
  ASSERT_TRUE(job_token_problem("").has_value());
  EXPECT_NE(job_token_problem("")->find("SHARDSCOPE_TOKEN"), std::string::npos);
  ASSERT_TRUE(job_token_problem("abc").has_value());
  EXPECT_NE(job_token_problem("abc")->find("at least 16 characters, not 3"), std::string::npos);
  EXPECT_FALSE(job_token_problem("0123456789abcdef").has_value());
}

TEST(TcpRendezvous, ParsesHostAndPort) {
  const Endpoint e = parse_endpoint("node0.cluster:29500");
  EXPECT_EQ(e.host, "node0.cluster");
  EXPECT_EQ(e.port, 29500);
  EXPECT_EQ(parse_endpoint("[::1]:29500").host, "::1");
  EXPECT_THROW(parse_endpoint("node0"), std::invalid_argument);
  EXPECT_THROW(parse_endpoint("node0:"), std::invalid_argument);
  EXPECT_THROW(parse_endpoint("node0:70000"), std::invalid_argument);
  EXPECT_THROW(parse_endpoint("node0:29x"), std::invalid_argument);
}

TEST(TcpRendezvous, ListensOnTheGivenAddressOnly) {
  // 127.0.0.2 is loopback too (127/8) but not 127.0.0.1: bound there, nothing answers on 127.0.0.1.
  RendezvousServer server({"127.0.0.2", 0});
  const Endpoint bound = server.bound();  // getsockname on the listening socket
  EXPECT_EQ(bound.host, "127.0.0.2");
  EXPECT_EQ(bound.port, server.port());
  const int elsewhere = connect_to("127.0.0.1", server.port());
  const int error = errno;
  EXPECT_EQ(elsewhere, -1);
  EXPECT_EQ(error, ECONNREFUSED) << std::strerror(error);
  // And it serves there.
  auto served = std::async(std::launch::async, [&] { return server.serve(2, 1, bytes("ids"), settings()); });
  EXPECT_EQ(fetch_from_master({"127.0.0.2", server.port()}, {1, 1}, settings()), bytes("ids"));
  EXPECT_EQ(served.get().size(), 2u);
}

TEST(TcpRendezvous, MasterListensOnTheMasterAddressOrLoopbackAlone) {
  const Endpoint alone = master_listen_endpoint("node0.cluster:29500", 1);
  EXPECT_EQ(alone.host, "127.0.0.1");
  EXPECT_EQ(alone.port, 29500);
  EXPECT_EQ(master_listen_endpoint("10.1.2.3:29500", 2).host, "10.1.2.3");
  EXPECT_EQ(master_listen_endpoint("127.0.0.1:29500", 2).host, "127.0.0.1");  // several nodes on one machine
  EXPECT_EQ(master_listen_endpoint("localhost:29500", 2).host, "localhost");
  RendezvousServer server({alone.host, 0});
  EXPECT_EQ(server.bound().host, "127.0.0.1");
}

TEST(TcpRendezvous, MasterCannotListenOnAnotherMachinesAddress) {
  try {
    RendezvousServer server({"192.0.2.1", 0});  // TEST-NET-1, not this machine's
    FAIL() << "expected an error";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("the master cannot listen on 192.0.2.1:0"), std::string::npos) << e.what();
  }
}

TEST(TcpRendezvous, EveryNodeReceivesTheMastersPayload) {
  RendezvousServer server({"127.0.0.1", 0});
  const Endpoint master{"127.0.0.1", server.port()};
  const std::vector<std::byte> payload = bytes("ids of 3 communicators");
  auto served = std::async(std::launch::async, [&] { return server.serve(3, 4, payload, settings()); });
  auto node1 = std::async(std::launch::async, [&] { return fetch_from_master(master, {1, 4}, settings()); });
  auto node2 = std::async(std::launch::async, [&] { return fetch_from_master(master, {2, 4}, settings()); });
  EXPECT_EQ(node1.get(), payload);
  EXPECT_EQ(node2.get(), payload);
  const std::vector<NodeHello> hellos = served.get();
  ASSERT_EQ(hellos.size(), 3u);
  EXPECT_EQ(hellos[2].node_rank, 2);
  EXPECT_TRUE(server.refused().empty());
}

TEST(TcpRendezvous, NodesMayStartBeforeTheMaster) {
  int port = 0;
  { port = RendezvousServer({"127.0.0.1", 0}).port(); }  // a free port, closed again
  auto node1 = std::async(std::launch::async,
                          [&] { return fetch_from_master({"127.0.0.1", port}, {1, 2}, settings()); });
  std::this_thread::sleep_for(300ms);  // the node retries meanwhile
  RendezvousServer server({"127.0.0.1", port});
  server.serve(2, 2, bytes("x"), settings());
  EXPECT_EQ(node1.get(), bytes("x"));
}

TEST(TcpRendezvous, DifferentGpuCountsAreRefusedOnBothSides) {
  RendezvousServer server({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] { return server.serve(2, 4, bytes("ids"), settings()); });
  try {
    fetch_from_master({"127.0.0.1", server.port()}, {1, 2}, settings());
    FAIL() << "expected a refusal";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 has 2 GPUs, the master 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(served.get(), RendezvousError);
}

TEST(TcpRendezvous, UnreachableMasterFailsAfterTheTimeoutNamingIt) {
  int port = 0;
  { port = RendezvousServer({"127.0.0.1", 0}).port(); }  // nothing listens there now
  const auto start = Clock::now();
  try {
    fetch_from_master({"127.0.0.1", port}, {1, 1}, settings(400ms));
    FAIL() << "expected an error";
  } catch (const RendezvousError& e) {
    const std::string expected = "cannot reach the master at 127.0.0.1:" + std::to_string(port) + " within 0.4 s";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, 350ms);
  EXPECT_LT(waited, 3s);
}

TEST(TcpRendezvous, MasterTimesOutWhenNodesDoNotCome) {
  RendezvousServer server({"127.0.0.1", 0});
  try {
    server.serve(3, 1, bytes("ids"), settings(200ms));
    FAIL() << "expected a timeout";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("0 of 2 joined (missing nodes 1, 2)"), std::string::npos) << e.what();
  }
}

TEST(TcpRendezvous, SilentClientsDoNotHoldUpAGoodNode) {
  RendezvousServer server({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] { return server.serve(2, 1, bytes("ids"), settings(10s, 3s)); });
  std::vector<RawSocket> silent;
  for (int i = 0; i < 10; ++i) silent.push_back(raw_connect(server.port()));  // connect, then say nothing
  std::this_thread::sleep_for(100ms);
  const auto start = Clock::now();
  EXPECT_EQ(fetch_from_master({"127.0.0.1", server.port()}, {1, 1}, settings(10s, 3s)), bytes("ids"));
  EXPECT_LT(Clock::now() - start, 1500ms);  // well below the 3 s handshake timeout: nobody waited for them
  EXPECT_EQ(served.get().size(), 2u);
}

TEST(TcpRendezvous, SilentOrSlowClientIsDroppedAfterTheHandshakeTimeout) {
  RendezvousServer server({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] { return server.serve(2, 1, bytes("ids"), settings(20s, 500ms)); });
  RawSocket silent = raw_connect(server.port());
  RawSocket slow = raw_connect(server.port());
  const auto start = Clock::now();
  read_challenge(silent.fd);
  read_challenge(slow.fd);
  // The slow one trickles a valid-looking length prefix, one byte every 100 ms: activity does not extend its time.
  auto trickle = std::async(std::launch::async, [&] {
    const std::uint8_t prefix[4] = {0, 0, 0, 78};
    for (std::uint8_t b : prefix) {
      ::send(slow.fd, &b, 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(100ms);
    }
  });
  bool silent_closed = false;
  read_until_closed(silent.fd, 5s, &silent_closed);
  const auto silent_after = Clock::now() - start;
  bool slow_closed = false;
  read_until_closed(slow.fd, 5s, &slow_closed);
  const auto slow_after = Clock::now() - start;
  trickle.get();
  EXPECT_TRUE(silent_closed);
  EXPECT_TRUE(slow_closed);
  EXPECT_GE(silent_after, 400ms);
  EXPECT_LT(silent_after, 3s);
  EXPECT_LT(slow_after, 3s);
  // The join itself goes on.
  EXPECT_EQ(fetch_from_master({"127.0.0.1", server.port()}, {1, 1}, settings()), bytes("ids"));
  served.get();
  ASSERT_EQ(server.refused().size(), 2u);
  EXPECT_NE(server.refused()[0].find("no valid hello within 0.5 s"), std::string::npos) << server.refused()[0];
}

TEST(TcpRendezvous, TooManyPendingConnectionsDropTheOldest) {
  RendezvousServer server({"127.0.0.1", 0});
  JoinSettings s = settings(20s, 10s);
  s.max_pending = 3;
  auto served = std::async(std::launch::async, [&] { return server.serve(2, 1, bytes("ids"), s); });
  std::vector<RawSocket> silent;
  for (int i = 0; i < 6; ++i) {
    silent.push_back(raw_connect(server.port()));
    read_challenge(silent.back().fd);  // accepted
  }
  bool first_closed = false;
  read_until_closed(silent.front().fd, 3s, &first_closed);  // long before its 10 s
  EXPECT_TRUE(first_closed);
  EXPECT_EQ(fetch_from_master({"127.0.0.1", server.port()}, {1, 1}, s), bytes("ids"));
  served.get();
}

TEST(TcpRendezvous, WrongOrMissingTokenIsRefusedAndTheRealNodesStillJoin) {
  RendezvousServer server({"127.0.0.1", 0});
  const Endpoint master{"127.0.0.1", server.port()};
  auto served = std::async(std::launch::async, [&] { return server.serve(3, 2, bytes("the ids"), settings()); });
  for (const char* token : {"another-token-0123456789", ""}) {
    const auto start = Clock::now();
    try {
      fetch_from_master(master, {1, 2}, settings(10s, 5s, token));
      FAIL() << "expected a refusal";
    } catch (const RendezvousError& e) {
      EXPECT_NE(std::string(e.what()).find("the master refused this node: wrong job token"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("SHARDSCOPE_TOKEN"), std::string::npos) << e.what();
    }
    EXPECT_LT(Clock::now() - start, 2s);  // refused at once, not after a timeout
  }
  auto node1 = std::async(std::launch::async, [&] { return fetch_from_master(master, {1, 2}, settings()); });
  auto node2 = std::async(std::launch::async, [&] { return fetch_from_master(master, {2, 2}, settings()); });
  EXPECT_EQ(node1.get(), bytes("the ids"));
  EXPECT_EQ(node2.get(), bytes("the ids"));
  EXPECT_EQ(served.get().size(), 3u);
  ASSERT_EQ(server.refused().size(), 2u);
  for (const std::string& line : server.refused()) EXPECT_NE(line.find("wrong job token"), std::string::npos) << line;
}

TEST(TcpRendezvous, IdsAreNeverSentToAClientWithoutTheToken) {
  const std::string secret_ids = "NCCL-UNIQUE-ID-BYTES";
  RendezvousServer server({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] { return server.serve(3, 1, bytes(secret_ids), settings()); });
  // One client stays connected and silent through the whole join; another sends a well-formed JOIN with a MAC
  // that is not the token's.
  RawSocket watcher = raw_connect(server.port());
  RawSocket forger = raw_connect(server.port());
  const Raw master_nonce = read_challenge(forger.fd);
  send_raw(forger.fd, join_frame(master_nonce, 1, 1, nullptr));
  bool closed = false;
  const Raw answer = read_until_closed(forger.fd, 3s, &closed);
  EXPECT_TRUE(closed);
  ASSERT_GE(answer.size(), 10u);
  EXPECT_EQ(Raw(answer.begin() + 4, answer.begin() + 10), header(4));  // REFUSED
  EXPECT_TRUE(contains(answer, "wrong job token"));
  EXPECT_FALSE(contains(answer, secret_ids));
  // A raw client that computes the documented MAC with the token is a node like any other.
  RawSocket honest = raw_connect(server.port());
  send_raw(honest.fd, join_frame(read_challenge(honest.fd), 2, 1, kToken));
  EXPECT_EQ(fetch_from_master({"127.0.0.1", server.port()}, {1, 1}, settings()), bytes(secret_ids));
  EXPECT_EQ(served.get().size(), 3u);
  EXPECT_TRUE(contains(read_until_closed(honest.fd, 3s), secret_ids));
  // The join is over: the watcher got a greeting and nothing else.
  const Raw watched = read_until_closed(watcher.fd, 3s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(watched.size(), 42u);  // the challenge only
  EXPECT_FALSE(contains(watched, secret_ids));
}

TEST(TcpRendezvous, OversizedMessageIsDropped) {
  RendezvousServer server({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] { return server.serve(2, 1, bytes("ids"), settings(20s, 10s)); });
  for (std::uint32_t length : {0xFFFFFFFFu, kMaxNodeFrame + 1}) {
    RawSocket hostile = raw_connect(server.port());
    read_challenge(hostile.fd);
    Raw prefix;
    put_u32(prefix, length);
    const auto start = Clock::now();
    send_raw(hostile.fd, prefix);
    bool closed = false;
    read_until_closed(hostile.fd, 5s, &closed);
    EXPECT_TRUE(closed) << length;
    EXPECT_LT(Clock::now() - start, 2s) << length;  // dropped on the length, not after the 10 s handshake
  }
  EXPECT_EQ(fetch_from_master({"127.0.0.1", server.port()}, {1, 1}, settings()), bytes("ids"));
  served.get();
  ASSERT_EQ(server.refused().size(), 2u);
  EXPECT_NE(server.refused()[0].find("announced a 4294967295-byte message (at most 256 accepted)"), std::string::npos)
      << server.refused()[0];
}

// A fake master on loopback: accepts one connection and runs `script` on it.
struct FakeMaster {
  RawSocket listener{::socket(AF_INET, SOCK_STREAM, 0)};
  int port = 0;
  std::future<void> done;
  template <class Script>
  explicit FakeMaster(Script script) {
    sockaddr_in address = ipv4("127.0.0.1", 0);
    ::bind(listener.fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(listener.fd, 4);
    socklen_t length = sizeof address;
    ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin_port);
    done = std::async(std::launch::async, [this, script] {
      RawSocket client(::accept(listener.fd, nullptr, nullptr));
      script(client.fd);
    });
  }
};

Raw challenge_frame() {
  Raw body = header(1);
  body.insert(body.end(), 32, 0x17);
  return framed(body);
}

TEST(TcpRendezvous, NodeDropsAnOversizedMessageFromTheMaster) {
  FakeMaster fake([](int fd) {
    Raw prefix;
    put_u32(prefix, 0xFFFFFFFFu);
    send_raw(fd, prefix);
    read_until_closed(fd, 5s);
  });
  const auto start = Clock::now();
  try {
    fetch_from_master({"127.0.0.1", fake.port}, {1, 1}, settings(10s));
    FAIL() << "expected an error";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("announced a 4294967295-byte message"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(TcpRendezvous, NodeRejectsIdsNotSignedWithItsToken) {
  FakeMaster fake([](int fd) {
    send_raw(fd, challenge_frame());
    read_exactly(fd, 4 + 78);  // the JOIN
    Raw body = header(3);
    body.insert(body.end(), 32, 0);  // no MAC worth the name
    const std::string ids = "forged ids";
    body.insert(body.end(), ids.begin(), ids.end());
    send_raw(fd, framed(body));
    read_until_closed(fd, 5s);
  });
  try {
    fetch_from_master({"127.0.0.1", fake.port}, {1, 1}, settings(10s));
    FAIL() << "expected an error";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("not signed with this node's job token"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardscope::exec
