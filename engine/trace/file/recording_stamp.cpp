// make_recording_stamp, utc_iso8601, shell_quoted_command_line, StampingTraceSink.
#include "trace/file/recording_stamp.h"

#include <unistd.h>

#include <array>
#include <ctime>
#include <string_view>

namespace shardscope {

std::string utc_iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::array<char, 32> text{};
  const std::size_t n = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text.data(), n);
}

RecordingStamp make_recording_stamp(std::string command_line) {
  RecordingStamp stamp;
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) == 0) stamp.host = name.data();
  stamp.recorded_at = utc_iso8601(std::chrono::system_clock::now());
  stamp.command_line = std::move(command_line);
  return stamp;
}

std::string shell_quoted_command_line(const std::vector<std::string>& words) {
  const auto plain = [](const std::string& word) {
    if (word.empty()) return false;
    for (const char c : word) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
      if (!ok) return false;
    }
    return true;
  };
  std::string out;
  for (const std::string& word : words) {
    if (!out.empty()) out += ' ';
    if (plain(word)) {
      out += word;
      continue;
    }
    out += '\'';
    for (const char c : word) {
      if (c == '\'') out += "'\\''";
      else out += c;
    }
    out += '\'';
  }
  return out;
}

void StampingTraceSink::begin(const TraceHeader& header) {
  TraceHeader stamped = header;
  if (stamped.host.empty()) stamped.host = stamp_.host;
  if (stamped.recorded_at.empty()) stamped.recorded_at = stamp_.recorded_at;
  if (stamped.command_line.empty()) stamped.command_line = stamp_.command_line;
  next_.begin(stamped);
}

}  // namespace shardscope
