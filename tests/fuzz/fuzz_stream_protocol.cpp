// libFuzzer target: the trace-stream protocol (trace/stream/trace_stream_protocol.h) from both ends, over a socket
// pair so that frames are read by the same FrameReader the server and the viewer use. The first byte picks the side:
// - even: we are the viewer (`shardscope --connect`); the rest is what a server sends: a CHALLENGE frame, then
//   REFUSED or ACCEPT, then the .sstrace stream, fed to TraceBytesFollower in pieces as the viewer does. An ACCEPT
//   of the right size gets its MAC made valid here (as the trace fuzzers fix checksums), so mutations reach the
//   stream; a refusal's text goes through printable() as the viewer shows it.
// - odd: we are the server (`run --serve`); the rest is what a client sends: a SUBSCRIBE frame, parsed and its MAC
//   checked.
// A frame longer than its cap must be refused on its length (FrameReader::TooLong), a stream that is not a trace
// must give TraceFileError; nothing else may escape, crash, hang or trip ASan / UBSan. Seeds: write_stream_seeds.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/untrusted_text.h"
#include "fuzz_trace_input.h"
#include "net/socket_util.h"
#include "trace/events/trace_sink.h"
#include "trace/file/trace_file_reader.h"
#include "trace/stream/trace_stream_protocol.h"

namespace {

using namespace shardscope;
namespace ts = trace_stream;

constexpr const char* kToken = "fuzz-stream-token-0123456789";

// Reads one frame of at most `cap` bytes from fd (the peer's end is closed, so reads never wait).
bool read_frame(int fd, std::uint32_t cap, net::Bytes& body) {
  net::FrameReader reader(cap);
  for (;;) {
    switch (reader.read_some(fd)) {
      case net::FrameReader::Status::More:
        break;
      case net::FrameReader::Status::Done:
        body = std::move(reader.body);
        return true;
      case net::FrameReader::Status::TooLong:
        if (reader.length <= cap) __builtin_trap();  // refused a length within the cap
        return false;
      case net::FrameReader::Status::Closed:
        return false;
    }
  }
}

void as_viewer(int fd) {
  const net::Nonce viewer_nonce{};  // fixed: the same input replays the same way
  net::Bytes body;
  if (!read_frame(fd, ts::kMaxServerFrame, body)) return;
  const auto server_nonce = ts::parse_challenge(body);
  if (!server_nonce) return;
  (void)ts::subscribe_frame(kToken, *server_nonce, viewer_nonce, 0);
  if (!read_frame(fd, ts::kMaxServerFrame, body)) return;
  if (const auto refusal = ts::parse_refused(body)) {
    if (printable(*refusal).size() > kPrintableBytes + 40) __builtin_trap();
    return;
  }
  if (ts::is_frame(body, ts::Kind::Accept) && body.size() == 6 + 16 + 32) {
    ts::StreamId id;
    std::copy_n(body.begin() + 6, 16, id.begin());
    body = ts::accept_frame(kToken, *server_nonce, viewer_nonce, id);
    body.erase(body.begin(), body.begin() + 4);  // the length prefix
  }
  if (!ts::parse_accept(body, kToken, *server_nonce, viewer_nonce)) return;
  std::string stream;
  char chunk[4096];
  for (ssize_t n; (n = ::recv(fd, chunk, sizeof chunk, 0)) > 0;) stream.append(chunk, static_cast<std::size_t>(n));
  stream = fuzz::trace_with_fixed_checksums(reinterpret_cast<const std::uint8_t*>(stream.data()), stream.size());
  VectorTraceSink sink;
  try {
    TraceBytesFollower follower("fuzz stream");
    std::uint32_t state = static_cast<std::uint32_t>(stream.size()) * 2654435761u + 1;
    for (std::size_t at = 0; at < stream.size() && !follower.finished() && !follower.corrupt();) {
      state = state * 1103515245u + 12345u;
      const std::size_t piece = std::min<std::size_t>(1 + (state >> 16) % 512, stream.size() - at);
      follower.feed(std::string_view(stream).substr(at, piece), sink);
      at += piece;
    }
  } catch (const TraceFileError&) {
  }
}

void as_server(int fd) {
  net::Bytes body;
  if (!read_frame(fd, ts::kMaxViewerFrame, body)) return;
  const net::Nonce server_nonce{};
  if (const auto subscribe = ts::parse_subscribe(body)) (void)ts::subscribe_mac_ok(kToken, server_nonce, *subscribe);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return 0;
  // What fits in the socket's buffer (at least 200 kB here; -max_len keeps inputs well below it), then the end.
  const int flags = ::fcntl(pair[0], F_GETFL);
  ::fcntl(pair[0], F_SETFL, flags | O_NONBLOCK);
  std::size_t sent = 1;
  while (sent < size) {
    const ssize_t n = ::send(pair[0], data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::close(pair[0]);
  net::set_nonblocking(pair[1]);
  if (data[0] % 2 == 0) as_viewer(pair[1]);
  else as_server(pair[1]);
  ::close(pair[1]);
  return 0;
}
