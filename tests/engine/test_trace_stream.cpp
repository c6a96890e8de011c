// Trace streaming over loopback TCP (trace/stream/trace_stream_server.h, trace/stream/trace_stream_follower.h): several viewers at
// once, a silent connection that must not hold them up, a broken connection resumed with no event lost or read
// twice, a wrong token refused, a handshake timeout. The events received are compared field by field with the list
// the test emitted, never with what the code itself encoded.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include "engine/trace_test_helpers.h"
#include "net/socket_util.h"
#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_file_writer.h"
#include "trace/file/trace_format.h"
#include "trace/stream/trace_stream_follower.h"
#include "trace/stream/trace_stream_protocol.h"
#include "trace/stream/trace_stream_server.h"

namespace shardscope {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::ev;
using testing::expect_event_eq;
using testing::small_header;
using testing::with_text;

constexpr const char* kToken = "stream-test-token-0123456789";

// What a viewer's sink saw.
struct Collected : TraceSink {
  int begins = 0, ends = 0;
  TraceHeader header;
  std::vector<TraceEvent> events;
  void begin(const TraceHeader& h) override {
    ++begins;
    header = h;
  }
  void emit(const TraceEvent& e) override { events.push_back(e); }
  void end() override { ++ends; }
};

// Every event distinct (time, rank, op, step and a text naming its index), so a lost, repeated or reordered one shows.
std::vector<TraceEvent> make_events(int count) {
  std::vector<TraceEvent> events;
  for (int i = 0; i < count; ++i)
    events.push_back(with_text(ev(i % 2 ? TraceEventKind::OpEnd : TraceEventKind::OpBegin, i % 3, 1000 + 37 * i, i % 7, i / 100),
                               "event " + std::to_string(i)));
  return events;
}

void expect_events(const Collected& got, const std::vector<TraceEvent>& want, const std::string& who) {
  ASSERT_EQ(got.events.size(), want.size()) << who;
  for (std::size_t i = 0; i < want.size(); ++i) expect_event_eq(got.events[i], want[i], who + " event " + std::to_string(i));
}

// Polls the followers until `done` or the timeout; true when done.
bool poll_until(std::vector<std::pair<TraceStreamFollower*, Collected*>> viewers, const std::function<bool()>& done,
                std::chrono::milliseconds timeout = 10s) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    for (auto& [follower, sink] : viewers) follower->poll(*sink);
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

TraceStreamSettings settings(std::chrono::milliseconds handshake = 5s) {
  TraceStreamSettings s;
  s.token = kToken;
  s.handshake_timeout = handshake;
  return s;
}

// A raw TCP connection to the server that plays a silent or hostile client.
net::Socket raw_connect(const net::Endpoint& server) {
  std::string error;
  net::Socket socket = net::connect_to(server, Clock::now() + 2s, error);
  EXPECT_GE(socket.fd, 0) << error;
  return socket;
}

TEST(TraceStream, TwoViewersAtOnceWhileASilentClientHoldsAConnection) {
  TraceStreamServer server({"127.0.0.1", 0}, settings());
  ASSERT_GT(server.bound().port, 0);
  EXPECT_EQ(server.bound().host, "127.0.0.1");
  net::Socket silent = raw_connect(server.bound());  // connects first and never says a word

  const std::vector<TraceEvent> events = make_events(3000);
  TraceStreamFollower a(server.bound(), kToken), b(server.bound(), kToken);
  Collected sink_a, sink_b;
  server.begin(small_header());
  for (int i = 0; i < 1500; ++i) server.emit(events[static_cast<std::size_t>(i)]);
  // Well before the silent client's 5 s handshake timeout, both viewers have the first half.
  const auto start = Clock::now();
  ASSERT_TRUE(poll_until({{&a, &sink_a}, {&b, &sink_b}}, [&] { return sink_a.events.size() == 1500 && sink_b.events.size() == 1500; }, 4s))
      << a.status() << " / " << b.status();
  EXPECT_LT(Clock::now() - start, 4s);
  EXPECT_EQ(server.viewers(), 2u);
  for (int i = 1500; i < 3000; ++i) server.emit(events[static_cast<std::size_t>(i)]);
  server.end();
  ASSERT_TRUE(poll_until({{&a, &sink_a}, {&b, &sink_b}}, [&] { return a.finished() && b.finished(); }));
  for (const Collected* sink : {&sink_a, &sink_b}) {
    EXPECT_EQ(sink->begins, 1);
    EXPECT_EQ(sink->ends, 1);
    EXPECT_EQ(sink->header.source, "simulator");
    ASSERT_NE(sink->header.plan, nullptr);
    EXPECT_EQ(sink->header.plan->programs.size(), 3u);
  }
  expect_events(sink_a, events, "viewer a");
  expect_events(sink_b, events, "viewer b");
  EXPECT_EQ(a.status(), "the run finished");

  // A viewer that comes after the run ended (while the recorder lingers) still gets all of it.
  TraceStreamFollower late(server.bound(), kToken);
  Collected sink_late;
  ASSERT_TRUE(poll_until({{&late, &sink_late}}, [&] { return late.finished(); }));
  expect_events(sink_late, events, "late viewer");
}

TEST(TraceStream, ABrokenConnectionResumesWithNoEventLostOrRepeated) {
  TraceStreamServer server({"127.0.0.1", 0}, settings());
  const std::vector<TraceEvent> events = make_events(5000);
  TraceStreamFollowerOptions options;
  options.retry_delay = 20ms;
  TraceStreamFollower viewer(server.bound(), kToken, options);
  Collected sink;
  server.begin(small_header());
  for (int i = 0; i < 2000; ++i) server.emit(events[static_cast<std::size_t>(i)]);
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return sink.events.size() >= 500; })) << viewer.status();
  viewer.drop_connection();  // mid-stream: whatever arrived so far, maybe half a record
  for (int i = 2000; i < 3500; ++i) server.emit(events[static_cast<std::size_t>(i)]);
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.connections() >= 2 && sink.events.size() >= 3000; })) << viewer.status();
  viewer.drop_connection();
  for (int i = 3500; i < 5000; ++i) server.emit(events[static_cast<std::size_t>(i)]);
  server.end();
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.finished(); })) << viewer.status();
  EXPECT_GE(viewer.connections(), 3u);
  EXPECT_EQ(sink.begins, 1);
  EXPECT_EQ(sink.ends, 1);
  expect_events(sink, events, "resumed viewer");
  EXPECT_EQ(viewer.received(), server.stream_bytes());
}

TEST(TraceStream, ManyDropsWhileTheRunGoesOnLoseNothing) {
  TraceStreamServer server({"127.0.0.1", 0}, settings());
  const std::vector<TraceEvent> events = make_events(6000);
  TraceStreamFollowerOptions options;
  options.retry_delay = 5ms;
  TraceStreamFollower viewer(server.bound(), kToken, options);
  Collected sink;
  server.begin(small_header());
  for (std::size_t i = 0; i < events.size(); ++i) {
    server.emit(events[i]);
    if (i % 250 == 125) {
      // Once the viewer is connected (again), break its connection while bytes are in flight: the break may fall
      // inside a record.
      const std::uint64_t drops = i / 250;
      ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.connections() > drops; })) << viewer.status();
      viewer.drop_connection();
    }
  }
  server.end();
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.finished(); })) << viewer.status();
  EXPECT_GE(viewer.connections(), 25u);
  expect_events(sink, events, "viewer dropped 24 times");
}

// A window takes a fast stream a slice at a time: polled 50 bytes a call, the viewer still gets every event once, in
// order, and parses no more than it was given.
TEST(TraceStream, APollTakesAtMostTheBytesItIsGiven) {
  TraceStreamServer server({"127.0.0.1", 0}, settings());
  const std::vector<TraceEvent> events = make_events(2000);
  TraceStreamFollower viewer(server.bound(), kToken);
  Collected sink;
  server.begin(small_header());
  for (const auto& e : events) server.emit(e);
  server.end();
  const auto deadline = Clock::now() + 10s;
  while (!viewer.finished() && Clock::now() < deadline) {
    const std::uint64_t before = viewer.received();
    viewer.poll(sink, 50);
    EXPECT_LE(viewer.received() - before, 50u);
    if (viewer.received() == before) std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(viewer.finished()) << viewer.status();
  EXPECT_EQ(sink.begins, 1);
  EXPECT_EQ(sink.ends, 1);
  expect_events(sink, events, "sliced viewer");
  EXPECT_EQ(viewer.received(), server.stream_bytes());
}

// The resumption rests on the parser taking the stream in pieces cut anywhere: fed 7 bytes at a time (cuts inside
// the preamble, the header and every kind of record), it yields the events the file reader yields whole.
TEST(TraceStream, TheParserTakesTheEncodingInArbitraryPieces) {
  const std::string path = ::testing::TempDir() + "stream_pieces.sstrace";
  const std::vector<TraceEvent> events = make_events(300);
  {
    TraceFileWriter writer(path);
    writer.begin(small_header());
    for (const auto& e : events) writer.emit(e);
    writer.end();
  }
  const std::string bytes = testing::read_bytes(path);
  TraceBytesFollower parser("pieces");
  Collected sink;
  for (std::size_t at = 0; at < bytes.size(); at += 7) parser.feed(std::string_view(bytes).substr(at, 7), sink);
  EXPECT_TRUE(parser.finished());
  EXPECT_FALSE(parser.corrupt());
  EXPECT_EQ(parser.received(), bytes.size());
  EXPECT_EQ(sink.begins, 1);
  EXPECT_EQ(sink.ends, 1);
  expect_events(sink, events, "pieces");
  std::remove(path.c_str());
}

TEST(TraceStream, AWrongTokenIsRefusedAndTheRightOneStillServed) {
  TraceStreamServer server({"127.0.0.1", 0}, settings());
  server.begin(small_header());
  server.emit(make_events(1)[0]);
  TraceStreamFollower wrong(server.bound(), "not-the-token-0123456789");
  TraceStreamFollower none(server.bound(), "");
  TraceStreamFollower right(server.bound(), kToken);
  Collected sink_wrong, sink_none, sink_right;
  ASSERT_TRUE(poll_until({{&wrong, &sink_wrong}, {&none, &sink_none}, {&right, &sink_right}},
                         [&] { return wrong.refused() && none.refused() && sink_right.events.size() == 1; }, 4s));
  EXPECT_EQ(wrong.status().rfind("refused: wrong token", 0), 0u) << wrong.status();
  EXPECT_EQ(none.status().rfind("refused: wrong token", 0), 0u) << none.status();
  EXPECT_EQ(sink_wrong.begins + sink_none.begins, 0);  // not a byte of the run
  EXPECT_EQ(wrong.received(), 0u);
  const auto refused = server.refused();
  ASSERT_EQ(refused.size(), 2u);
  for (const auto& line : refused) EXPECT_NE(line.find("127.0.0.1:"), std::string::npos) << line;
  for (const auto& line : refused) EXPECT_NE(line.find("wrong token"), std::string::npos) << line;
}

TEST(TraceStream, ASilentConnectionIsDroppedAfterTheHandshakeTimeout) {
  TraceStreamServer server({"127.0.0.1", 0}, settings(300ms));
  net::Socket silent = raw_connect(server.bound());
  const auto start = Clock::now();
  // The challenge comes at once (38 bytes: length, "SSTS", version, kind, nonce); then, silence until the server hangs up.
  std::uint8_t buffer[256];
  std::size_t got = 0;
  bool closed = false;
  while (Clock::now() - start < 3s && !closed) {
    pollfd p{silent.fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(silent.fd, buffer, sizeof buffer, 0);
    if (n <= 0) closed = true;
    else got += static_cast<std::size_t>(n);
  }
  const auto waited = Clock::now() - start;
  EXPECT_TRUE(closed);
  EXPECT_EQ(got, 4u + 6u + 32u);
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 2s);
  const auto refused = server.refused();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("no valid subscription within 0.3 s"), std::string::npos) << refused[0];
}

TEST(TraceStream, AViewerWaitsForAServerNotUpYet) {
  int port = 0;
  {
    std::string error;
    net::Socket probe = net::listen_on({"127.0.0.1", 0}, error);  // a free port, closed again at once
    port = net::bound_endpoint(probe.fd).port;
  }
  TraceStreamFollowerOptions options;
  options.retry_delay = 20ms;
  TraceStreamFollower viewer({"127.0.0.1", port}, kToken, options);
  Collected sink;
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.status().rfind("waiting for 127.0.0.1:", 0) == 0; }, 3s))
      << viewer.status();
  TraceStreamServer server({"127.0.0.1", port}, settings());
  const std::vector<TraceEvent> events = make_events(10);
  server.begin(small_header());
  for (const auto& e : events) server.emit(e);
  server.end();
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.finished(); })) << viewer.status();
  expect_events(sink, events, "viewer that waited");
}

// A window closing while its server does not answer (an address that drops every packet) closes at once, not after
// the 5 s connect timeout.
TEST(TraceStream, AFollowerStopsAtOnceWhileAConnectHangs) {
  auto follower = std::make_unique<TraceStreamFollower>(net::Endpoint{"192.0.2.1", 9}, kToken);  // TEST-NET-1: no answer
  std::this_thread::sleep_for(300ms);
  const auto start = Clock::now();
  follower.reset();
  EXPECT_LT(Clock::now() - start, 1s);
}

TEST(TraceStream, ATokenTooShortIsRefusedByTheServer) {
  TraceStreamSettings s;
  s.token = "short";
  try {
    TraceStreamServer server({"127.0.0.1", 0}, s);
    FAIL() << "a 5-character token was accepted";
  } catch (const TraceStreamError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 16 characters, not 5"), std::string::npos) << e.what();
  }
}

// A hostile server: it answers the handshake as a real one (it holds the token), then sends `stream` and after it
// zeros, 1 MiB at a time, until the viewer hangs up (or 10 s, or 1 GiB). What it managed to send, and whether the
// viewer hung up, are read once the thread is joined.
struct HostileServer {
  net::Socket listener;
  net::Endpoint bound;
  std::uint64_t sent = 0;
  bool hung_up = false;
  std::chrono::milliseconds hung_up_after{0};
  std::thread thread;

  std::string refusal;  // when set, sent as REFUSED instead of ACCEPT and the stream

  explicit HostileServer(std::string stream, std::string refused = "") : refusal(std::move(refused)) {
    std::string error;
    listener = net::listen_on({"127.0.0.1", 0}, error);
    bound = net::bound_endpoint(listener.fd);
    thread = std::thread([this, stream = std::move(stream)] { serve(stream); });
  }
  ~HostileServer() {
    if (thread.joinable()) thread.join();
  }
  void serve(const std::string& stream) {
    if (!net::wait_for(listener.fd, POLLIN, Clock::now() + 5s)) return;
    net::Socket viewer(::accept(listener.fd, nullptr, nullptr));
    if (viewer.fd < 0) return;
    net::set_nonblocking(viewer.fd);
    std::string error;
    const net::Nonce server_nonce = net::random_nonce();
    const auto deadline = Clock::now() + 5s;
    if (!net::send_all(viewer.fd, trace_stream::challenge_frame(server_nonce), deadline, error)) return;
    net::FrameReader in(trace_stream::kMaxViewerFrame);
    net::FrameReader::Status status = net::FrameReader::Status::More;
    while (status == net::FrameReader::Status::More && net::wait_for(viewer.fd, POLLIN, deadline)) status = in.read_some(viewer.fd);
    const auto subscribe = trace_stream::parse_subscribe(in.body);
    if (!subscribe) return;
    if (!refusal.empty()) {
      net::send_all(viewer.fd, trace_stream::refused_frame(refusal), deadline, error);
      return;
    }
    if (!net::send_all(viewer.fd, trace_stream::accept_frame(kToken, server_nonce, subscribe->viewer_nonce, {}), deadline, error)) return;
    const auto started = Clock::now();
    if (!net::send_all(viewer.fd, net::as_bytes(stream), Clock::now() + 5s, error)) {
      hung_up = true;
      return;
    }
    const std::vector<std::uint8_t> zeros(1 << 20, 0);
    while (sent < (std::uint64_t{1} << 30) && Clock::now() - started < 10s) {
      if (!net::send_all(viewer.fd, zeros, Clock::now() + 2s, error)) {
        hung_up = error.find("timed out") == std::string::npos && error.find("deadline") == std::string::npos;
        break;
      }
      sent += zeros.size();
    }
    hung_up_after = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  }
};

// The start of a record of type `type` announcing `length` payload bytes (the payload and CRC never come).
std::string record_announcing(trace_format::RecordType type, std::uint64_t length) {
  std::string out(1, static_cast<char>(type));
  trace_format::put_varint(out, length);
  return out;
}

// A server announcing a 2^32 - 1-byte header: the viewer refuses it on the length alone, names the limit, stops
// receiving and hangs up; the server cannot make it buffer more than what the sockets held meanwhile (before the
// limit, the viewer buffered all of it: 5.4 GiB and growing).
TEST(TraceStream, AServerAnnouncingAHugeHeaderIsRefusedWithoutBufferingIt) {
  HostileServer hostile(trace_format::encode_preamble() + record_announcing(trace_format::RecordType::Header, 0xFFFFFFFFu));
  TraceStreamFollower viewer(hostile.bound, kToken);
  Collected sink;
  std::string refusal;
  const auto start = Clock::now();
  while (refusal.empty() && Clock::now() - start < 5s) {
    try {
      viewer.poll(sink);
    } catch (const TraceFileError& e) {
      refusal = e.what();
    }
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_NE(refusal.find("a record of 4294967295 bytes, more than the 1073741824 a trace's header may hold (kMaxHeaderRecordBytes)"),
            std::string::npos) << refusal;
  EXPECT_NE(viewer.status().find("kMaxHeaderRecordBytes"), std::string::npos) << viewer.status();
  hostile.thread.join();
  EXPECT_TRUE(hostile.hung_up) << "sent " << hostile.sent;
  EXPECT_LT(hostile.hung_up_after, 3s);
  EXPECT_LT(hostile.sent, std::uint64_t{64} << 20);  // socket buffers, never the announced 4 GiB
  EXPECT_EQ(sink.begins, 0);
}

// After a valid header, an event record announcing 2^32 - 1 bytes is damage: the viewer keeps the header, says which
// limit the record broke, and hangs up.
TEST(TraceStream, AServerAnnouncingAHugeEventRecordIsCutOffAtIt) {
  std::string stream = trace_format::encode_preamble();
  trace_format::append_record(stream, trace_format::RecordType::Header, trace_format::encode_header_json(small_header()));
  HostileServer hostile(stream + record_announcing(trace_format::RecordType::EventBlock, 0xFFFFFFFFu));
  TraceStreamFollower viewer(hostile.bound, kToken);
  Collected sink;
  const auto start = Clock::now();
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.corrupt(); }, 5s)) << viewer.status();
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(sink.begins, 1);
  EXPECT_NE(viewer.problem().find("a record of 4294967295 bytes, more than the 16777216 a trace's records may hold (kMaxRecordBytes)"),
            std::string::npos) << viewer.problem();
  hostile.thread.join();
  EXPECT_TRUE(hostile.hung_up) << "sent " << hostile.sent;
  EXPECT_LT(hostile.sent, std::uint64_t{64} << 20);
}

// `run --serve`'s side: a client announcing a 2^32 - 1-byte message is dropped on the length alone (nothing allocated
// for it), while a viewer connected meanwhile gets every event.
TEST(TraceStream, AClientAnnouncingAHugeMessageIsDroppedAndViewersStillServed) {
  TraceStreamServer server({"127.0.0.1", 0}, settings());
  net::Socket hostile = raw_connect(server.bound());
  const std::uint8_t announce[4] = {0xFF, 0xFF, 0xFF, 0xFF};
  ASSERT_EQ(::send(hostile.fd, announce, 4, MSG_NOSIGNAL), 4);
  const std::vector<TraceEvent> events = make_events(500);
  TraceStreamFollower viewer(server.bound(), kToken);
  Collected sink;
  server.begin(small_header());
  for (const auto& e : events) server.emit(e);
  server.end();
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.finished(); }, 5s)) << viewer.status();
  expect_events(sink, events, "viewer beside a hostile client");
  // The hostile connection was closed: after the 38-byte challenge, recv sees the end.
  const auto start = Clock::now();
  std::uint8_t buffer[256];
  bool closed = false;
  while (!closed && Clock::now() - start < 2s) {
    pollfd p{hostile.fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    closed = ::recv(hostile.fd, buffer, sizeof buffer, 0) <= 0;
  }
  EXPECT_TRUE(closed);
  const auto refused = server.refused();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("announced a 4294967295-byte message (at most 256 accepted)"), std::string::npos) << refused[0];
}

// A server's refusal is its own text, untrusted: the viewer's status (which the window shows and --screenshot prints
// on stderr) has it escaped and cut, no escape sequence and not 4 kB of it.
TEST(TraceStream, ARefusalsTextIsShownEscapedAndCut) {
  HostileServer hostile("", "\x1b[2J\x1b]0;pwned\x07" + std::string(4000, 'x'));
  TraceStreamFollower viewer(hostile.bound, kToken);
  Collected sink;
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.refused(); }, 5s)) << viewer.status();
  const std::string status = viewer.status();
  EXPECT_EQ(status.find('\x1b'), std::string::npos) << status;
  EXPECT_EQ(status.rfind("refused: \\x1b[2J\\x1b]0;pwned\\x07xxx", 0), 0u) << status;
  EXPECT_NE(status.find("more bytes)"), std::string::npos) << status;
  EXPECT_LT(status.size(), 400u);
}

// Writers never make a record readers refuse: an event whose text is 3 MiB is written with its first
// kMaxEventTextBytes (1 MiB) only, cut before a UTF-8 character, and reads back.
TEST(TraceStream, AnEventTextPastTheLimitIsCutSoItsRecordReads) {
  std::string text(trace_format::kMaxEventTextBytes - 1, 'a');
  text += "\xC3\xA9";  // "é" straddles the limit: cut before it
  text += std::string(3 << 20, 'b');
  TraceStreamServer server({"127.0.0.1", 0}, settings());
  TraceStreamFollower viewer(server.bound(), kToken);
  Collected sink;
  server.begin(small_header());
  server.emit(with_text(ev(TraceEventKind::Error, 0, 1000), text));
  server.end();
  ASSERT_TRUE(poll_until({{&viewer, &sink}}, [&] { return viewer.finished() || viewer.corrupt(); }, 5s)) << viewer.status();
  ASSERT_FALSE(viewer.corrupt()) << viewer.problem();
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0].text, std::string(trace_format::kMaxEventTextBytes - 1, 'a'));
  std::string record;
  EXPECT_THROW(trace_format::append_record(record, trace_format::RecordType::EventBlock, std::string((16 << 20) + 1, 'x')),
               std::length_error);
}

}  // namespace
}  // namespace shardscope
