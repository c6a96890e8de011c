// `shardscope-cli run --serve [HOST:]PORT`: serves the run's trace to viewers (`shardscope --connect HOST:PORT`) while
// it runs, then lingers so viewers still to come get all of it (trace/stream/trace_stream_server.h).
// On start it prints one line a script can parse on stderr:
//   serving on 127.0.0.1:41236 token 5f0c...e1
// The token is --token / SHARDSCOPE_TOKEN when given (at least 16 characters), else 128 random bits in hex.
// After the run: --serve-linger SECONDS more (default 5; 0 exits at once), ended early by Ctrl-C (SIGINT) or SIGTERM.
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

#include "net/endpoint.h"
#include "trace/events/trace_sink.h"
#include "trace/stream/trace_stream_server.h"

namespace shardscope::cli {

inline constexpr double kDefaultServeLingerSeconds = 5;
inline constexpr double kMaxServeLingerSeconds = 86400;

// "PORT" (loopback, 127.0.0.1) or "HOST:PORT" (that address; "[::1]:PORT" for IPv6); port 0..65535, 0 picks a free
// one. ScenarioError naming --serve otherwise.
net::Endpoint parse_serve_address(std::string_view text);

class TraceServing {
 public:
  // Listens at once (a bad address or a port in use fails before the run, ScenarioError naming --serve; a token
  // too short, naming --token) and prints the "serving on" line on `log`.
  TraceServing(std::string_view address, const std::string& token, double linger_seconds, std::ostream& log);
  ~TraceServing();
  TraceSink& sink() { return *server_; }
  // After the run: serves on for the linger time or until SIGINT / SIGTERM; says so on `log`.
  void linger(std::ostream& log);

 private:
  std::unique_ptr<TraceStreamServer> server_;
  double linger_seconds_ = kDefaultServeLingerSeconds;
};

}  // namespace shardscope::cli
