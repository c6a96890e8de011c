// TraceStreamFollower: a receiving thread that (re)connects and subscribes, and a parser fed on the polling thread.
#include "trace/stream/trace_stream_follower.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "core/untrusted_text.h"
#include "net/socket_util.h"
#include "trace/stream/trace_stream_protocol.h"

namespace shardscope {

namespace {

namespace ts = trace_stream;
using net::Clock;

// Why a connection ended: Retry (it broke or went silent), Refused (the server said no, or is not one of ours).
struct Outcome {
  enum class Kind { Retry, Refused, Stopped } kind = Kind::Retry;
  std::string why;
};

}  // namespace

TraceStreamFollower::TraceStreamFollower(net::Endpoint server, std::string token, TraceStreamFollowerOptions options)
    : server_(std::move(server)), token_(std::move(token)), options_(options), parser_(net::endpoint_text(server_)) {
  status_ = "connecting to " + net::endpoint_text(server_) + "…";
  thread_ = std::thread([this] { receive_loop(); });
}

TraceStreamFollower::~TraceStreamFollower() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::size_t TraceStreamFollower::poll(TraceSink& sink, std::size_t max_bytes) {
  std::string bytes;
  {
    std::lock_guard lock(mutex_);
    const std::size_t count = std::min(max_bytes, inbox_.size() - inbox_parsed_);
    if (inbox_parsed_ == 0 && count == inbox_.size()) {
      bytes.swap(inbox_);
    } else {
      bytes.assign(inbox_, inbox_parsed_, count);
      inbox_parsed_ += count;
      // The parsed front goes once it is half the inbox, so taking a long inbox a slice at a time stays linear.
      if (inbox_parsed_ * 2 >= inbox_.size()) {
        inbox_.erase(0, inbox_parsed_);
        inbox_parsed_ = 0;
      }
    }
  }
  std::size_t events = 0;
  try {
    events = parser_.feed(bytes, sink);
  } catch (const std::exception& e) {
    // A header that is not a trace's (TraceFileError; a record past kMaxHeaderRecordBytes among them): the receiving
    // thread stops too, or it would go on buffering what the server sends.
    {
      std::lock_guard lock(mutex_);
      if (!stop_) status_ = std::string("the stream is not a readable trace: ") + e.what();
      stop_ = true;
      inbox_.clear();
      inbox_.shrink_to_fit();
      inbox_parsed_ = 0;
    }
    stop_signal_.notify_all();
    throw;
  }
  if (parser_.finished() || parser_.corrupt()) {
    {
      std::lock_guard lock(mutex_);
      if (!stop_) status_ = parser_.finished() ? "the run finished" : "the stream is damaged: " + parser_.problem();
      stop_ = true;  // nothing more to receive
    }
    stop_signal_.notify_all();
  }
  return events;
}

bool TraceStreamFollower::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

std::string TraceStreamFollower::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

void TraceStreamFollower::set_status(std::string text) {
  std::lock_guard lock(mutex_);
  if (!stop_) status_ = std::move(text);
}

void TraceStreamFollower::drop_connection() {
  std::lock_guard lock(mutex_);
  if (current_fd_ >= 0) ::shutdown(current_fd_, SHUT_RDWR);
}

bool TraceStreamFollower::wait_retry() {
  std::unique_lock lock(mutex_);
  return !stop_signal_.wait_for(lock, options_.retry_delay, [&] { return stop_; });
}

void TraceStreamFollower::receive_loop() {
  const std::string where = net::endpoint_text(server_);
  bool have_id = false;
  ts::StreamId stream_id{};
  auto stopped = [&] {
    std::lock_guard lock(mutex_);
    return stop_;
  };
  // Waits for `events` in slices, so a stop request is seen within 100 ms.
  auto wait = [&](int fd, short events, Clock::time_point deadline) {
    for (;;) {
      if (stopped()) return false;
      const Clock::time_point slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(100));
      if (net::wait_for(fd, events, slice)) return true;
      if (Clock::now() >= deadline) return false;
    }
  };
  auto read_frame = [&](int fd, Clock::time_point deadline, net::Bytes& body) -> std::optional<Outcome> {
    net::FrameReader reader(ts::kMaxServerFrame);
    for (;;) {
      if (!wait(fd, POLLIN, deadline)) return Outcome{stopped() ? Outcome::Kind::Stopped : Outcome::Kind::Retry, "no answer in time"};
      switch (reader.read_some(fd)) {
        case net::FrameReader::Status::More:
          break;
        case net::FrameReader::Status::Done:
          body = std::move(reader.body);
          return std::nullopt;
        case net::FrameReader::Status::Closed:
          return Outcome{Outcome::Kind::Retry, reader.error};
        case net::FrameReader::Status::TooLong:
          return Outcome{Outcome::Kind::Refused, "what answers at " + where + " is not a ShardScope trace server"};
      }
    }
  };
  // One connection: handshake, then receive until it ends.
  auto session = [&](int fd) -> Outcome {
    const Clock::time_point deadline = Clock::now() + options_.handshake_timeout;
    net::Bytes body;
    if (auto failed = read_frame(fd, deadline, body)) return *failed;
    const auto server_nonce = ts::parse_challenge(body);
    if (!server_nonce) return {Outcome::Kind::Refused, "what answers at " + where + " is not a ShardScope trace server of this version"};
    const net::Nonce viewer_nonce = net::random_nonce();
    std::uint64_t resume_from = 0;
    {
      std::lock_guard lock(mutex_);
      resume_from = received_;
    }
    std::string error;
    if (!net::send_all(fd, ts::subscribe_frame(token_, *server_nonce, viewer_nonce, resume_from), deadline, error))
      return {Outcome::Kind::Retry, error};
    if (auto failed = read_frame(fd, deadline, body)) return *failed;
    // The server's own words, untrusted: escaped and cut before they reach a status line or stderr.
    if (const auto refusal = ts::parse_refused(body)) return {Outcome::Kind::Refused, printable(*refusal)};
    const auto id = ts::parse_accept(body, token_, *server_nonce, viewer_nonce);
    if (!id) return {Outcome::Kind::Refused, "the server at " + where + " does not hold the token (or is not a ShardScope trace server)"};
    if (have_id && *id != stream_id) return {Outcome::Kind::Refused, "the server at " + where + " now serves a different run"};
    have_id = true;
    stream_id = *id;
    ++connections_;
    set_status("receiving from " + where);
    char chunk[1 << 16];
    for (;;) {
      if (!wait(fd, POLLIN, Clock::time_point::max())) return {Outcome::Kind::Stopped, ""};
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n <= 0) return {Outcome::Kind::Retry, n == 0 ? "the server closed the connection" : net::errno_text(errno)};
      std::lock_guard lock(mutex_);
      inbox_.append(chunk, static_cast<std::size_t>(n));
      received_ += static_cast<std::uint64_t>(n);
    }
  };

  for (;;) {
    if (stopped()) return;
    std::string error;
    const net::Cancelled stop_requested = [](const void* self) {
      const auto* follower = static_cast<const TraceStreamFollower*>(self);
      std::lock_guard lock(follower->mutex_);
      return follower->stop_;
    };
    net::Socket socket = net::connect_to(server_, Clock::now() + options_.handshake_timeout, error, stop_requested, this);
    if (socket.fd < 0) {
      set_status("waiting for " + where + " (" + error + ")…");
      if (!wait_retry()) return;
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      current_fd_ = socket.fd;
    }
    Outcome outcome;
    try {
      outcome = session(socket.fd);
    } catch (const std::exception& e) {  // poll or getrandom failing: try again rather than end the window's source
      outcome = {Outcome::Kind::Retry, e.what()};
    }
    {
      std::lock_guard lock(mutex_);
      current_fd_ = -1;
      socket.close();
      if (outcome.kind == Outcome::Kind::Refused && !stop_) {
        refused_ = true;
        status_ = "refused: " + outcome.why;
        return;
      }
    }
    if (outcome.kind == Outcome::Kind::Stopped) return;
    set_status("connection to " + where + " lost (" + outcome.why + "); reconnecting…");
    if (!wait_retry()) return;
  }
}

}  // namespace shardscope
