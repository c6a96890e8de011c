// `run --serve` addresses (cli/trace_serving.h): a bare port is loopback, an explicit host is kept, port 0 is allowed
// (a free port), anything else is refused naming --serve.
#include <gtest/gtest.h>

#include "cli/trace_serving.h"
#include "scenario/scenario.h"

namespace shardscope::cli {
namespace {

TEST(TraceServing, ABarePortMeansLoopback) {
  const net::Endpoint e = parse_serve_address("7000");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 7000);
  EXPECT_EQ(parse_serve_address("0").port, 0);
}

TEST(TraceServing, AnExplicitHostIsKept) {
  const net::Endpoint any = parse_serve_address("0.0.0.0:65535");
  EXPECT_EQ(any.host, "0.0.0.0");
  EXPECT_EQ(any.port, 65535);
  EXPECT_EQ(parse_serve_address("[::1]:9").host, "::1");
  EXPECT_EQ(parse_serve_address("viewer-host:0").host, "viewer-host");
}

TEST(TraceServing, BadAddressesNameTheFlag) {
  for (const char* bad : {"", "http", "-1", "65536", "123456", ":7000", "host:", "host:7x"}) {
    try {
      parse_serve_address(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const ScenarioError& e) {
      EXPECT_EQ(e.field(), "--serve") << bad;
    }
  }
}

}  // namespace
}  // namespace shardscope::cli
