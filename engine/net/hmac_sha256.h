// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the job tokens of the multi-node rendezvous
// (exec/cuda_host/tcp_rendezvous.h) and of trace streaming (trace/stream/trace_stream_server.h): peers prove they hold the
// token without sending it. Small inputs only (a handshake's few hundred
// bytes and the NCCL ids), so a plain one-shot implementation; standard library only.
#pragma once
#include "net/net_layer.h"
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace shardscope::net {

using Digest256 = std::array<std::uint8_t, 32>;

Digest256 sha256(std::span<const std::uint8_t> data);
Digest256 hmac_sha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> message);

// Compares in time independent of where the digests differ.
bool digests_equal(const Digest256& a, const Digest256& b);

}  // namespace shardscope::net
