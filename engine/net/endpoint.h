// Addresses and job tokens shared by everything that talks TCP (the multi-node rendezvous, trace streaming):
// "HOST:PORT" parsing, the token rules and a fresh random token. Standard library only; no sockets here.
#pragma once
#include "net/net_layer.h"
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope::net {

inline constexpr std::size_t kMinTokenLength = 16;
inline constexpr const char* kTokenEnvironmentVariable = "SHARDSCOPE_TOKEN";

// What is wrong with a job token, or nothing: it must have at least kMinTokenLength characters (openssl rand -hex 16
// makes one).
std::optional<std::string> job_token_problem(std::string_view token);

// A new token: 128 random bits (getrandom) as 32 hex digits. Throws std::runtime_error when the OS has no randomness.
std::string random_token();

struct Endpoint {
  std::string host;
  int port = 0;
};
// "HOST:PORT" (port 1..65535; an IPv6 host in brackets, "[::1]:29500"); std::invalid_argument otherwise.
Endpoint parse_endpoint(std::string_view text);
// "HOST:PORT" as parse_endpoint reads it (IPv6 hosts in brackets).
std::string endpoint_text(const Endpoint& endpoint);

}  // namespace shardscope::net
