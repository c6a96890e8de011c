// printable(): escapes, UTF-8 checks and the length cut for untrusted text.
#include "core/untrusted_text.h"

#include <cstdio>

namespace shardscope {

namespace {

// The length of the valid UTF-8 character at the start of `s`, or 0 when it is not one (overlong forms, surrogates
// and code points past U+10FFFF count as invalid, as RFC 3629 says).
std::size_t utf8_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return continuation(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // a UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

std::string hex_escape(unsigned char c) {
  char text[8];
  std::snprintf(text, sizeof text, "\\x%02x", c);
  return text;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t n = utf8_length(text.substr(i));
    std::string piece;
    if (n == 0) {
      piece = hex_escape(static_cast<unsigned char>(text[i]));
    } else if (n == 1) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == '\n') piece = "\\n";
      else if (c == '\t') piece = "\\t";
      else if (c < 0x20 || c == 0x7F) piece = hex_escape(c);  // ESC (0x1b) starts every ANSI sequence
      else piece = std::string(1, static_cast<char>(c));
    } else if (n == 2 && static_cast<unsigned char>(text[i]) == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      piece = "\\u00" + hex_escape(static_cast<unsigned char>(text[i + 1])).substr(2);  // C1 controls (CSI is U+009B)
    } else {
      piece = std::string(text.substr(i, n));
    }
    if (out.size() + piece.size() > max_bytes) {
      out += "… (" + std::to_string(text.size() - i) + " more bytes)";
      return out;
    }
    out += piece;
    i += n == 0 ? 1 : n;
  }
  return out;
}

std::optional<int> parse_count(std::string_view digits) {
  if (digits.empty() || digits.size() > 10) return std::nullopt;
  long long value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value > 1'000'000'000) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace shardscope
