// Serves a run's trace to viewers over TCP while it is recorded (`shardscope-cli run --serve HOST:PORT`): a TraceSink
// that encodes what it is given exactly as a .sstrace file would hold it (trace/file/trace_format.h), keeps those bytes in
// memory, and sends them to every viewer that proves it holds the token (protocol: trace/stream/trace_stream_protocol.h),
// from the start or from where a reconnecting viewer left off. Viewers read it with TraceStreamFollower.
// Usage:
//   TraceStreamServer server({"127.0.0.1", 0}, {.token = token});   // binds and starts serving; TraceStreamError if it cannot
//   std::cerr << "serving on " << net::endpoint_text(server.bound()) << "\n";
//   TeeTraceSink tee({&file, &server});  run(..., tee);             // begin / emit... / end
//   server.linger(std::chrono::seconds(5), stop_flag);               // viewers still to come get the whole run
// One thread serves every connection in a poll() loop: a viewer that connects and says nothing is dropped after the
// handshake timeout (5 s) and never holds up the others; a slow viewer only falls behind (its bytes wait in the
// stream, which is kept whole). At most max_viewers connections at once; beyond, the oldest silent one is dropped.
// Thread contract: begin/emit/end from any thread (serialised); the rest from the owning thread.
#pragma once
#include "net/net_layer.h"
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/endpoint.h"
#include "trace/file/trace_event_codec.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

class TraceStreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceStreamSettings {
  std::string token;                                   // the secret viewers must hold (net::job_token_problem rules)
  std::chrono::milliseconds handshake_timeout{5'000};  // accept → valid SUBSCRIBE
  std::size_t max_viewers = 64;
};

class TraceStreamServer : public TraceSink {
 public:
  TraceStreamServer(const net::Endpoint& listen, TraceStreamSettings settings);
  ~TraceStreamServer() override;  // stops serving and closes every connection
  TraceStreamServer(const TraceStreamServer&) = delete;
  TraceStreamServer& operator=(const TraceStreamServer&) = delete;

  net::Endpoint bound() const { return bound_; }  // the listening address (the port chosen when 0 was asked)

  void begin(const TraceHeader& header) override;
  void emit(const TraceEvent& event) override;
  void end() override;

  // After end(): keeps serving for `duration`, or until `stop` becomes true (a Ctrl-C handler's flag), checked
  // every 50 ms.
  void linger(std::chrono::milliseconds duration, const std::atomic<bool>& stop) const;

  std::uint64_t stream_bytes() const;
  std::size_t viewers() const { return viewers_.load(); }              // connections receiving the stream now
  std::uint64_t viewers_served() const { return served_.load(); }      // accepted subscriptions so far
  std::vector<std::string> refused() const;  // one line per refused or dropped connection ("127.0.0.1:41236: wrong token")

 private:
  void serve();
  void wake();

  TraceStreamSettings settings_;
  net::Endpoint bound_;
  int listen_fd_ = -1;
  int wake_read_ = -1, wake_write_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> wake_pending_{false};
  std::atomic<std::size_t> viewers_{0};
  std::atomic<std::uint64_t> served_{0};

  mutable std::mutex mutex_;  // the stream and the refusals
  std::string stream_;   // the .sstrace encoding so far: what the file would hold
  trace_format::EventBlockEncoder blocks_;  // one block per event: a viewer sees each event as it comes
  bool begun_ = false, ended_ = false;
  std::vector<std::string> refused_;
  std::array<std::uint8_t, 16> stream_id_{};

  std::thread thread_;
};

}  // namespace shardscope
