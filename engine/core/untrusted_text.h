// The one way untrusted text (file, tensor, model and device names, command lines, lesson strings, a server's messages)
// reaches a terminal, a report or the window: control characters escaped (no ANSI escape sequence reaches a user's
// terminal), bytes that are not UTF-8 shown as \xNN (so a JSON report stays valid), and at most `max_bytes` kept,
// cut at a character boundary with "… (N more bytes)".
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace shardscope {

inline constexpr std::size_t kPrintableBytes = 256;

std::string printable(std::string_view text, std::size_t max_bytes = kPrintableBytes);

// A count written in untrusted text ("rank12", "step 3"): decimal digits only, whole, at most 1,000,000,000; nullopt
// otherwise ("0abc", "-1", "4294967296" and "" are not counts, never read as 0 or wrapped).
std::optional<int> parse_count(std::string_view digits);

}  // namespace shardscope
