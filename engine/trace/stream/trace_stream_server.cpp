// TraceStreamServer: the encoded stream in memory, one poll() loop serving every viewer (see trace_stream_server.h).
#include "trace/stream/trace_stream_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "net/socket_util.h"
#include "trace/file/trace_format.h"
#include "trace/stream/trace_stream_protocol.h"

namespace shardscope {

namespace {

namespace ts = trace_stream;
using net::Clock;

constexpr const char* kTokenHint = "the viewer needs the recorder's token: --token or SHARDSCOPE_TOKEN";

struct Viewer {
  enum class State { Handshake, Streaming, Closing };
  net::Socket socket;
  std::string peer;
  State state = State::Handshake;
  Clock::time_point deadline;  // Handshake: the SUBSCRIBE's; Closing: the refusal's flush
  net::Bytes out;              // a handshake frame being sent
  std::size_t sent = 0;
  std::uint64_t offset = 0;    // Streaming: the next stream byte to send
  net::FrameReader in{ts::kMaxViewerFrame};
  net::Nonce server_nonce{};
  bool closed = false;
  bool pending_frame() const { return sent < out.size(); }
};

// Sends what the socket takes now of data[0, size); the bytes sent, or -1 when the connection broke.
long send_some(int fd, const void* data, std::size_t size) {
  long total = 0;
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) return -1;
    total += n;
    data = static_cast<const char*>(data) + n;
    size -= static_cast<std::size_t>(n);
  }
  return total;
}

}  // namespace

TraceStreamServer::TraceStreamServer(const net::Endpoint& listen, TraceStreamSettings settings) : settings_(std::move(settings)) {
  if (const auto problem = net::job_token_problem(settings_.token)) throw TraceStreamError(*problem);
  std::string error;
  net::Socket socket = net::listen_on(listen, error);
  if (socket.fd < 0)
    throw TraceStreamError("cannot listen on " + net::endpoint_text(listen) + " (" + error + ")");
  bound_ = net::bound_endpoint(socket.fd);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) throw TraceStreamError("pipe failed: " + net::errno_text(errno));
  wake_read_ = pipe_fds[0];
  wake_write_ = pipe_fds[1];
  const net::Nonce id = net::random_nonce();
  std::copy_n(id.begin(), stream_id_.size(), stream_id_.begin());
  stream_ = trace_format::encode_preamble();
  std::swap(listen_fd_, socket.fd);
  thread_ = std::thread([this] { serve(); });
}

TraceStreamServer::~TraceStreamServer() {
  stopping_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_read_, wake_write_})
    if (fd >= 0) ::close(fd);
}

void TraceStreamServer::wake() {
  if (wake_pending_.exchange(true)) return;  // one byte in the pipe is enough until the loop drains it
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_write_, &byte, 1);
}

void TraceStreamServer::begin(const TraceHeader& header) {
  {
    std::lock_guard lock(mutex_);
    if (begun_) throw std::logic_error("trace stream: begin() called twice");
    begun_ = true;
    trace_format::append_record(stream_, trace_format::RecordType::Header, trace_format::encode_header_json(header));
  }
  wake();
}

void TraceStreamServer::emit(const TraceEvent& event) {
  {
    std::lock_guard lock(mutex_);
    if (!begun_ || ended_) throw std::logic_error("trace stream: emit() outside begin()..end()");
    blocks_.add(event);
    blocks_.close_block(stream_);
  }
  wake();
}

void TraceStreamServer::end() {
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    ended_ = true;
    trace_format::append_record(stream_, trace_format::RecordType::End, {});
  }
  wake();
}

void TraceStreamServer::linger(std::chrono::milliseconds duration, const std::atomic<bool>& stop) const {
  const Clock::time_point until = Clock::now() + duration;
  while (!stop.load() && Clock::now() < until)
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(50), until - Clock::now()));
}

std::uint64_t TraceStreamServer::stream_bytes() const {
  std::lock_guard lock(mutex_);
  return stream_.size();
}

std::vector<std::string> TraceStreamServer::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

void TraceStreamServer::serve() {
  std::vector<std::unique_ptr<Viewer>> viewers;
  std::vector<pollfd> polled;
  auto note = [&](const Viewer& v, const std::string& why) {
    std::lock_guard lock(mutex_);
    if (refused_.size() < 1000) refused_.push_back(v.peer + ": " + why);  // bounded: a flood of probes stays cheap
  };
  auto close = [&](Viewer& v, const std::string& why) {
    if (!why.empty()) note(v, why);
    if (v.state == Viewer::State::Streaming) --viewers_;
    v.socket.close();
    v.closed = true;
  };
  auto refuse = [&](Viewer& v, const std::string& why) {
    note(v, why);
    v.out = ts::refused_frame(why);
    v.sent = 0;
    v.state = Viewer::State::Closing;
    v.deadline = Clock::now() + std::chrono::seconds(1);
  };
  auto flush_frame = [](Viewer& v) {
    if (!v.pending_frame()) return true;
    const long n = send_some(v.socket.fd, v.out.data() + v.sent, v.out.size() - v.sent);
    if (n < 0) return false;
    v.sent += static_cast<std::size_t>(n);
    return true;
  };
  // Sends the stream bytes the viewer lacks; false when the connection broke. Closes it once End has gone out.
  auto send_stream = [&](Viewer& v) {
    std::lock_guard lock(mutex_);
    if (v.offset < stream_.size()) {
      const long n = send_some(v.socket.fd, stream_.data() + v.offset, stream_.size() - v.offset);
      if (n < 0) return false;
      v.offset += static_cast<std::uint64_t>(n);
    }
    return true;
  };
  auto take_subscribe = [&](Viewer& v) {
    const auto subscribe = ts::parse_subscribe(v.in.body);
    if (!subscribe) {
      refuse(v, "not a ShardScope viewer of this version (trace stream version " + std::to_string(ts::kVersion) + ")");
      return;
    }
    if (!ts::subscribe_mac_ok(settings_.token, v.server_nonce, *subscribe)) {
      refuse(v, std::string("wrong token (") + kTokenHint + ")");
      return;
    }
    const std::uint64_t size = stream_bytes();
    if (subscribe->resume_from > size) {
      refuse(v, "asks to resume at byte " + std::to_string(subscribe->resume_from) + " of a stream of " +
                    std::to_string(size) + " bytes (a different run?)");
      return;
    }
    v.out = ts::accept_frame(settings_.token, v.server_nonce, subscribe->viewer_nonce, stream_id_);
    v.sent = 0;
    v.offset = subscribe->resume_from;
    v.state = Viewer::State::Streaming;
    ++viewers_;
    ++served_;
  };
  auto accept_all = [&] {
    for (int i = 0; i < 64; ++i) {
      sockaddr_storage address{};
      socklen_t length = sizeof address;
      net::Socket socket(::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (socket.fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the listener stays readable: pause, not spin
        return;
      }
      auto v = std::make_unique<Viewer>();
      std::swap(v->socket.fd, socket.fd);
      v->peer = net::address_text(address, length);
      v->deadline = Clock::now() + settings_.handshake_timeout;
      v->server_nonce = net::random_nonce();
      v->out = ts::challenge_frame(v->server_nonce);
      if (!flush_frame(*v)) continue;  // hung up at once
      if (viewers.size() >= std::max<std::size_t>(settings_.max_viewers, 1)) {
        auto oldest = std::find_if(viewers.begin(), viewers.end(),
                                   [](const auto& other) { return other->state == Viewer::State::Handshake; });
        if (oldest == viewers.end()) {
          refuse(*v, "too many viewers (" + std::to_string(viewers.size()) + ")");
        } else {
          close(**oldest, "dropped: " + std::to_string(viewers.size()) + " connections at once");
        }
      }
      viewers.push_back(std::move(v));
    }
  };

  while (!stopping_.load()) {
    const Clock::time_point now = Clock::now();
    for (auto& v : viewers) {
      if (v->state == Viewer::State::Handshake && now >= v->deadline)
        close(*v, "no valid subscription within " + net::seconds_text(settings_.handshake_timeout));
      else if (v->state == Viewer::State::Closing && now >= v->deadline)
        close(*v, "");
    }
    std::erase_if(viewers, [](const auto& v) { return v->closed; });

    std::uint64_t size = 0;
    bool complete = false;
    {
      std::lock_guard lock(mutex_);  // both at once: a size read before end() must not pass for the whole stream
      size = stream_.size();
      complete = ended_;
    }
    Clock::time_point wake_at = now + std::chrono::seconds(1);
    polled.assign({pollfd{wake_read_, POLLIN, 0}, pollfd{listen_fd_, POLLIN, 0}});
    for (const auto& v : viewers) {
      short events = v->state == Viewer::State::Closing ? 0 : POLLIN;
      if (v->pending_frame() || (v->state == Viewer::State::Streaming && v->offset < size)) events |= POLLOUT;
      polled.push_back(pollfd{v->socket.fd, events, 0});
      if (v->state != Viewer::State::Streaming) wake_at = std::min(wake_at, v->deadline);
    }
    const int ready = ::poll(polled.data(), polled.size(), net::remaining_ms(wake_at));
    if (ready < 0 && errno != EINTR) break;  // cannot happen with valid descriptors; the viewers see the close
    if (ready <= 0) continue;
    if (polled[0].revents & POLLIN) {
      char drain[64];
      while (::read(wake_read_, drain, sizeof drain) > 0) {
      }
      wake_pending_ = false;
    }

    for (std::size_t i = 0; i < viewers.size(); ++i) {
      Viewer& v = *viewers[i];
      const short revents = polled[i + 2].revents;
      if (revents == 0 || v.closed) continue;
      if (!flush_frame(v)) {
        close(v, v.state == Viewer::State::Streaming ? "" : "hung up");
        continue;
      }
      if (v.state == Viewer::State::Closing) {
        if (!v.pending_frame() || (revents & (POLLERR | POLLHUP))) close(v, "");
        continue;
      }
      if (v.state == Viewer::State::Streaming) {
        if (revents & (POLLIN | POLLHUP | POLLERR)) {
          char byte;
          const ssize_t n = ::recv(v.socket.fd, &byte, 1, 0);
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            close(v, "");  // the viewer left (it reconnects with where it stopped, if it wants more)
            continue;
          }
          if (n > 0) {
            close(v, "sent more after its subscription");
            continue;
          }
        }
        if (!v.pending_frame() && !send_stream(v)) {
          close(v, "");
          continue;
        }
        if (complete && !v.pending_frame() && v.offset >= size) {
          // All of a finished run delivered: closing says so (the viewer has read the End record).
          ::shutdown(v.socket.fd, SHUT_WR);
          v.state = Viewer::State::Closing;
          --viewers_;
          v.deadline = Clock::now() + std::chrono::seconds(1);
        }
        continue;
      }
      if (!(revents & (POLLIN | POLLHUP | POLLERR))) continue;
      switch (v.in.read_some(v.socket.fd)) {
        case net::FrameReader::Status::More:
          break;
        case net::FrameReader::Status::Closed:
          close(v, "hung up without subscribing");
          break;
        case net::FrameReader::Status::TooLong:
          close(v, "announced a " + std::to_string(v.in.length) + "-byte message (at most " +
                       std::to_string(ts::kMaxViewerFrame) + " accepted)");
          break;
        case net::FrameReader::Status::Done:
          take_subscribe(v);
          break;
      }
    }
    if (polled[1].revents & POLLIN) accept_all();
  }
  for (auto& v : viewers) close(*v, "");
}

}  // namespace shardscope
