// The handshake of trace streaming (`shardscope-cli run --serve`, `shardscope --connect`), shared by
// trace_stream_server.cpp and trace_stream_follower.cpp. Not for use outside engine/trace.
//
// Frames as in the multi-node rendezvous (net/socket_util.h): u32 big-endian length, then a body starting "SSTS",
// u8 version (1), u8 kind. Nonces 32 bytes, MAC = HMAC-SHA256 keyed with the token, u64 big-endian:
//   server → viewer, on accept   CHALLENGE  nonce_s
//   viewer → server              SUBSCRIBE  nonce_v, u64 resume_from, MAC("shardscope-stream-subscribe" nonce_s nonce_v resume_from)
//   server → viewer              ACCEPT     stream_id (16 bytes), MAC("shardscope-stream-accept" nonce_s nonce_v stream_id)
//                          or    REFUSED    reason (text), then the server closes
// After ACCEPT the server sends the .sstrace encoding itself (trace/file/trace_format.h: preamble, header record, event
// records, End) from byte resume_from on, as it grows, and closes once End is sent. resume_from is the number of
// stream bytes the viewer already holds (0 the first time): TCP delivers a prefix of the stream, so a viewer that
// reconnects asks for exactly what follows it and no event is lost or read twice. stream_id names the run, so a
// viewer notices when it reconnects to a different one. The token never crosses the network; both sides prove
// they hold it (the viewer in SUBSCRIBE, the server in ACCEPT).
#pragma once
#include "net/net_layer.h"
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/hmac_sha256.h"
#include "net/socket_util.h"

namespace shardscope::trace_stream {

using StreamId = std::array<std::uint8_t, 16>;

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::uint32_t kMaxViewerFrame = 256;    // SUBSCRIBE is 78 bytes
inline constexpr std::uint32_t kMaxServerFrame = 4096;   // a refusal's text

enum class Kind : std::uint8_t { Challenge = 1, Subscribe = 2, Accept = 3, Refused = 4 };

struct Subscribe {
  net::Nonce viewer_nonce{};
  std::uint64_t resume_from = 0;
  net::Digest256 mac{};
};

net::Bytes challenge_frame(const net::Nonce& server_nonce);
net::Bytes subscribe_frame(std::string_view token, const net::Nonce& server_nonce, const net::Nonce& viewer_nonce,
                           std::uint64_t resume_from);
net::Bytes accept_frame(std::string_view token, const net::Nonce& server_nonce, const net::Nonce& viewer_nonce,
                        const StreamId& stream_id);
net::Bytes refused_frame(std::string_view reason);

// Whether a frame body is of this protocol and version and of `kind`.
bool is_frame(const net::Bytes& body, Kind kind);
std::optional<net::Nonce> parse_challenge(const net::Bytes& body);
std::optional<Subscribe> parse_subscribe(const net::Bytes& body);
bool subscribe_mac_ok(std::string_view token, const net::Nonce& server_nonce, const Subscribe& subscribe);
// The stream id when the body is an ACCEPT whose MAC proves the server holds the token.
std::optional<StreamId> parse_accept(const net::Bytes& body, std::string_view token, const net::Nonce& server_nonce,
                                     const net::Nonce& viewer_nonce);
std::optional<std::string> parse_refused(const net::Bytes& body);

}  // namespace shardscope::trace_stream
