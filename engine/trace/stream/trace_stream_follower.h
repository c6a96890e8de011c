// Follows a run served over TCP (`shardscope-cli run --serve`, trace/stream/trace_stream_server.h) the way
// TraceFileFollower follows a growing file: poll() hands the complete records received since the last call to a
// TraceSink (begin(header), emit() per event, end() at the End record), so a window reads a served run and a
// followed file through the same code. A background thread connects, proves it holds the token
// (trace/stream/trace_stream_protocol.h) and receives; when the connection drops it reconnects (every retry_delay) and
// asks for the stream from the first byte it lacks, so no event is lost or read twice. A refusal (wrong token)
// stops it for good: refused() and status() say why.
// Thread contract: construct, poll and read the state from one thread; the receiving thread is internal.
#pragma once
#include "net/net_layer.h"
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "net/endpoint.h"
#include "trace/file/trace_file_reader.h"
#include "trace/events/trace_sink.h"

namespace shardscope {

struct TraceStreamFollowerOptions {
  std::chrono::milliseconds handshake_timeout{5'000};  // connect → ACCEPT
  std::chrono::milliseconds retry_delay{250};          // between attempts while the server is away
};

class TraceStreamFollower {
 public:
  TraceStreamFollower(net::Endpoint server, std::string token, TraceStreamFollowerOptions options = {});
  ~TraceStreamFollower();
  TraceStreamFollower(const TraceStreamFollower&) = delete;
  TraceStreamFollower& operator=(const TraceStreamFollower&) = delete;

  // Never blocks; returns the number of events emitted. Parses at most `max_bytes` of what was received (the rest
  // waits for the next call), as TraceFileFollower::poll.
  std::size_t poll(TraceSink& sink, std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

  bool has_header() const { return parser_.has_header(); }
  bool finished() const { return parser_.finished(); }  // End record read
  bool corrupt() const { return parser_.corrupt(); }
  const std::string& problem() const { return parser_.problem(); }
  bool refused() const;      // the server refused this viewer (wrong token, a different run): no more retries
  std::string status() const;  // "connecting to 127.0.0.1:7000…", "receiving from …", "refused: wrong token (…)"
  std::uint64_t connections() const { return connections_.load(); }  // subscriptions accepted so far
  std::uint64_t received() const { return parser_.received(); }

  // Tests: breaks the current connection as a network failure would (the follower reconnects).
  void drop_connection();

 private:
  void receive_loop();
  void set_status(std::string text);
  bool wait_retry();  // sleeps retry_delay unless stopped; false when stopped

  net::Endpoint server_;
  std::string token_;
  TraceStreamFollowerOptions options_;
  TraceBytesFollower parser_;

  mutable std::mutex mutex_;
  std::condition_variable stop_signal_;
  std::string inbox_;          // received; parsed up to inbox_parsed_
  std::size_t inbox_parsed_ = 0;
  std::uint64_t received_ = 0; // stream bytes received in all (the resume point)
  std::string status_;
  bool refused_ = false;
  bool stop_ = false;
  int current_fd_ = -1;
  std::atomic<std::uint64_t> connections_{0};
  std::thread thread_;
};

}  // namespace shardscope
