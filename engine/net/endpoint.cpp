// Endpoint parsing, token rules, random tokens.
#include "net/endpoint.h"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace shardscope::net {

std::optional<std::string> job_token_problem(std::string_view token) {
  if (token.empty())
    return std::string("no job token: give the same secret to every process with --token or ") + kTokenEnvironmentVariable +
           " (e.g. `openssl rand -hex 16`)";
  if (token.size() < kMinTokenLength)
    return "the job token must have at least " + std::to_string(kMinTokenLength) + " characters, not " +
           std::to_string(token.size()) + " (e.g. `openssl rand -hex 16`)";
  return std::nullopt;
}

std::string random_token() {
  std::array<unsigned char, 16> bits{};
  std::size_t filled = 0;
  while (filled < bits.size()) {
    const ssize_t n = ::getrandom(bits.data() + filled, bits.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("no random numbers for a token: ") + std::strerror(errno));
    filled += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bits) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

Endpoint parse_endpoint(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("expected HOST:PORT, got '" + std::string(text) + "'");
  Endpoint endpoint{std::string(text.substr(0, colon)), 0};
  if (endpoint.host.size() > 2 && endpoint.host.front() == '[' && endpoint.host.back() == ']')
    endpoint.host = endpoint.host.substr(1, endpoint.host.size() - 2);  // [IPv6]:PORT
  const std::string port(text.substr(colon + 1));
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) || port.size() > 5 ||
      (endpoint.port = std::stoi(port)) < 1 || endpoint.port > 65535)
    throw std::invalid_argument("the port in '" + std::string(text) + "' must be a number in 1..65535");
  return endpoint;
}

std::string endpoint_text(const Endpoint& endpoint) {
  const bool v6 = endpoint.host.find(':') != std::string::npos;
  return (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
}

}  // namespace shardscope::net
