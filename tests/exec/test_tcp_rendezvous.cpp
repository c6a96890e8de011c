// The multi-node join (NCCL unique ids from node 0) over TCP on loopback: a master and nodes in threads, refusals,
// and a clear error when the master cannot be reached.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "exec/cuda_host/tcp_rendezvous.h"

namespace shardscope::exec {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> bytes(std::string_view text) {
  std::vector<std::byte> out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) out[i] = static_cast<std::byte>(text[i]);
  return out;
}

TEST(TcpRendezvous, ParsesHostAndPort) {
  const Endpoint e = parse_endpoint("node0.cluster:29500");
  EXPECT_EQ(e.host, "node0.cluster");
  EXPECT_EQ(e.port, 29500);
  EXPECT_THROW(parse_endpoint("node0"), std::invalid_argument);
  EXPECT_THROW(parse_endpoint("node0:"), std::invalid_argument);
  EXPECT_THROW(parse_endpoint("node0:70000"), std::invalid_argument);
  EXPECT_THROW(parse_endpoint("node0:29x"), std::invalid_argument);
}

TEST(TcpRendezvous, EveryNodeReceivesTheMastersPayload) {
  RendezvousServer server(0);
  const Endpoint master{"127.0.0.1", server.port()};
  const std::vector<std::byte> payload = bytes("ids of 3 communicators");
  auto served = std::async(std::launch::async, [&] { return server.serve(3, 4, payload, 10s); });
  auto node1 = std::async(std::launch::async, [&] { return fetch_from_master(master, {1, 4}, 10s); });
  auto node2 = std::async(std::launch::async, [&] { return fetch_from_master(master, {2, 4}, 10s); });
  EXPECT_EQ(node1.get(), payload);
  EXPECT_EQ(node2.get(), payload);
  const std::vector<NodeHello> hellos = served.get();
  ASSERT_EQ(hellos.size(), 3u);
  EXPECT_EQ(hellos[2].node_rank, 2);
}

TEST(TcpRendezvous, NodesMayStartBeforeTheMaster) {
  int port = 0;
  { port = RendezvousServer(0).port(); }  // a free port, closed again
  auto node1 = std::async(std::launch::async, [&] { return fetch_from_master({"127.0.0.1", port}, {1, 2}, 10s); });
  std::this_thread::sleep_for(300ms);  // the node retries meanwhile
  RendezvousServer server(port);
  server.serve(2, 2, bytes("x"), 10s);
  EXPECT_EQ(node1.get(), bytes("x"));
}

TEST(TcpRendezvous, DifferentGpuCountsAreRefusedOnBothSides) {
  RendezvousServer server(0);
  auto served = std::async(std::launch::async, [&] { return server.serve(2, 4, bytes("ids"), 10s); });
  try {
    fetch_from_master({"127.0.0.1", server.port()}, {1, 2}, 10s);
    FAIL() << "expected a refusal";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 has 2 GPUs, the master 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(served.get(), RendezvousError);
}

TEST(TcpRendezvous, UnreachableMasterFailsAfterTheTimeoutNamingIt) {
  int port = 0;
  { port = RendezvousServer(0).port(); }  // nothing listens there now
  const auto start = std::chrono::steady_clock::now();
  try {
    fetch_from_master({"127.0.0.1", port}, {1, 1}, 400ms);
    FAIL() << "expected an error";
  } catch (const RendezvousError& e) {
    const std::string expected = "cannot reach the master at 127.0.0.1:" + std::to_string(port) + " within 0.4 s";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 350ms);
  EXPECT_LT(waited, 3s);
}

TEST(TcpRendezvous, MasterTimesOutWhenNodesDoNotCome) {
  RendezvousServer server(0);
  try {
    server.serve(3, 1, bytes("ids"), 200ms);
    FAIL() << "expected a timeout";
  } catch (const RendezvousError& e) {
    EXPECT_NE(std::string(e.what()).find("0 of 2 joined"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardscope::exec
