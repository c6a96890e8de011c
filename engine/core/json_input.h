// Reading untrusted input files and JSON text (scenario files, Hugging Face configs) so that no input crashes,
// hangs or exhausts memory: only regular files, at most a size cap; JSON nested at most kMaxJsonDepth deep,
// optionally without duplicate keys; every problem a JsonInputError whose message names the source and says what is
// wrong ("ddp.json: line 3, column 14: number overflow parsing '1e400' ..."). Values quoted in messages are bounded
// (describe_json_value), never dumped whole.
// Usage:
//   const std::string text = read_input_file(path);                         // throws JsonInputError
//   const nlohmann::json root = parse_json_input(text, path, {.reject_duplicate_keys = true});
//   error += "(got " + describe_json_value(value) + ")";                      // "an array of 3 items", "\"abc\"", "1e+30"
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace shardscope {

// Input files larger than this are refused (configs and scenarios are a few KiB).
constexpr std::int64_t kMaxInputFileBytes = 16 * 1024 * 1024;
// JSON nested deeper than this (objects and arrays) is refused; a scenario file is 2 deep, a lesson about 6.
constexpr int kMaxJsonDepth = 64;

// The message is complete ("PATH: is not a regular file ..."): callers wrap it in their own error type.
class JsonInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole file as text. Throws JsonInputError naming `path` when it does not exist, is not a regular file (a
// directory, /dev/zero, a FIFO), cannot be read, or holds more than `max_bytes`.
std::string read_input_file(const std::string& path, std::int64_t max_bytes = kMaxInputFileBytes);

struct JsonInputOptions {
  bool reject_duplicate_keys = false;  // a key twice in one object is an error (nlohmann keeps the last silently)
  int max_depth = kMaxJsonDepth;
  bool trailing_spaces_only = false;  // safetensors pads its header with spaces: no newline or tab after the '}'
};

// Parses `text`; `source` names it in messages. Throws JsonInputError for invalid JSON (with line and column), a
// number that overflows a double, nesting deeper than options.max_depth, anything after the document but whitespace,
// a NUL byte or a byte-order mark, and (optionally) duplicate keys (named with their path: "training.batch").
nlohmann::json parse_json_input(const std::string& text, const std::string& source, const JsonInputOptions& options = {});

// A short description of a JSON value for messages: scalars as JSON text cut to 40 characters, arrays and objects
// by kind and size ("an array of 3 items", "an object with 2 keys"); never recursive, so any value is safe.
std::string describe_json_value(const nlohmann::json& value);

// nlohmann's exception text without its "[json.exception.parse_error.101] " prefix.
std::string json_error_text(const std::exception& error);

}  // namespace shardscope
