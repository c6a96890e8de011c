// Frames of the trace-stream handshake (see trace_stream_protocol.h).
#include "trace/stream/trace_stream_protocol.h"

#include <algorithm>

namespace shardscope::trace_stream {

namespace {

constexpr std::uint8_t kMagic[4] = {'S', 'S', 'T', 'S'};
constexpr std::size_t kHeaderSize = 6;
constexpr std::string_view kSubscribeLabel = "shardscope-stream-subscribe";
constexpr std::string_view kAcceptLabel = "shardscope-stream-accept";

net::Bytes start_frame(Kind kind) {
  net::Bytes frame = {0, 0, 0, 0};
  net::append(frame, kMagic);
  frame.push_back(kVersion);
  frame.push_back(static_cast<std::uint8_t>(kind));
  return frame;
}

net::Bytes finish_frame(net::Bytes frame) {
  const auto length = static_cast<std::uint32_t>(frame.size() - 4);
  for (int i = 0; i < 4; ++i) frame[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(length >> (24 - 8 * i));
  return frame;
}

net::Digest256 subscribe_mac(std::string_view token, const net::Nonce& server, const net::Nonce& viewer, std::uint64_t resume_from) {
  net::Bytes message;
  net::append(message, kSubscribeLabel);
  net::append(message, server);
  net::append(message, viewer);
  net::put_u64(message, resume_from);
  return net::hmac_sha256(net::as_bytes(token), message);
}

net::Digest256 accept_mac(std::string_view token, const net::Nonce& server, const net::Nonce& viewer, const StreamId& id) {
  net::Bytes message;
  net::append(message, kAcceptLabel);
  net::append(message, server);
  net::append(message, viewer);
  net::append(message, id);
  return net::hmac_sha256(net::as_bytes(token), message);
}

}  // namespace

net::Bytes challenge_frame(const net::Nonce& server_nonce) {
  net::Bytes frame = start_frame(Kind::Challenge);
  net::append(frame, server_nonce);
  return finish_frame(std::move(frame));
}

net::Bytes subscribe_frame(std::string_view token, const net::Nonce& server_nonce, const net::Nonce& viewer_nonce,
                           std::uint64_t resume_from) {
  net::Bytes frame = start_frame(Kind::Subscribe);
  net::append(frame, viewer_nonce);
  net::put_u64(frame, resume_from);
  net::append(frame, subscribe_mac(token, server_nonce, viewer_nonce, resume_from));
  return finish_frame(std::move(frame));
}

net::Bytes accept_frame(std::string_view token, const net::Nonce& server_nonce, const net::Nonce& viewer_nonce,
                        const StreamId& stream_id) {
  net::Bytes frame = start_frame(Kind::Accept);
  net::append(frame, stream_id);
  net::append(frame, accept_mac(token, server_nonce, viewer_nonce, stream_id));
  return finish_frame(std::move(frame));
}

net::Bytes refused_frame(std::string_view reason) {
  net::Bytes frame = start_frame(Kind::Refused);
  net::append(frame, reason.substr(0, kMaxServerFrame - kHeaderSize));
  return finish_frame(std::move(frame));
}

bool is_frame(const net::Bytes& body, Kind kind) {
  return body.size() >= kHeaderSize && std::equal(kMagic, kMagic + 4, body.begin()) && body[4] == kVersion &&
         body[5] == static_cast<std::uint8_t>(kind);
}

std::optional<net::Nonce> parse_challenge(const net::Bytes& body) {
  if (!is_frame(body, Kind::Challenge) || body.size() != kHeaderSize + 32) return std::nullopt;
  net::Nonce nonce;
  std::copy_n(body.begin() + kHeaderSize, 32, nonce.begin());
  return nonce;
}

std::optional<Subscribe> parse_subscribe(const net::Bytes& body) {
  if (!is_frame(body, Kind::Subscribe) || body.size() != kHeaderSize + 32 + 8 + 32) return std::nullopt;
  Subscribe s;
  const std::uint8_t* p = body.data() + kHeaderSize;
  std::copy_n(p, 32, s.viewer_nonce.begin());
  s.resume_from = net::get_u64(p + 32);
  std::copy_n(p + 40, 32, s.mac.begin());
  return s;
}

bool subscribe_mac_ok(std::string_view token, const net::Nonce& server_nonce, const Subscribe& subscribe) {
  return net::digests_equal(subscribe.mac, subscribe_mac(token, server_nonce, subscribe.viewer_nonce, subscribe.resume_from));
}

std::optional<StreamId> parse_accept(const net::Bytes& body, std::string_view token, const net::Nonce& server_nonce,
                                     const net::Nonce& viewer_nonce) {
  if (!is_frame(body, Kind::Accept) || body.size() != kHeaderSize + 16 + 32) return std::nullopt;
  StreamId id;
  std::copy_n(body.begin() + kHeaderSize, 16, id.begin());
  net::Digest256 mac;
  std::copy_n(body.begin() + kHeaderSize + 16, 32, mac.begin());
  if (!net::digests_equal(mac, accept_mac(token, server_nonce, viewer_nonce, id))) return std::nullopt;
  return id;
}

std::optional<std::string> parse_refused(const net::Bytes& body) {
  if (!is_frame(body, Kind::Refused)) return std::nullopt;
  return std::string(body.begin() + kHeaderSize, body.end());
}

}  // namespace shardscope::trace_stream
