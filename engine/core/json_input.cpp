// Bounded reading of input files and JSON text: see json_input.h.
#include "core/json_input.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope {

namespace {

using nlohmann::json;

std::string size_text(std::int64_t bytes) {
  if (bytes % (1024 * 1024) == 0) return std::to_string(bytes / (1024 * 1024)) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// Line and column (1-based) of byte `offset` of `text`.
std::string position_of(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Where the parser is: one frame per open object or array, with the key or index of the element being read.
struct Frame {
  bool object = true;
  std::string key;             // objects: the key being read
  long index = -1;             // arrays: the element being read
  std::set<std::string> keys;  // objects: keys seen so far
};

std::string path_of(const std::vector<Frame>& frames) {
  std::string path;
  for (const Frame& frame : frames) {
    if (frame.object) {
      if (frame.key.empty() && &frame == &frames.back()) break;
      path += (path.empty() ? "" : ".") + frame.key;
    } else if (frame.index >= 0) {
      path += "[" + std::to_string(frame.index) + "]";
    }
    if (path.size() > 60) return path.substr(0, 60) + "…";  // a path 64 levels deep says no more by its length
  }
  return path;
}

// nlohmann's lexer (3.11) takes a NUL byte for the end of input (for string literals) and skips a UTF-8 byte-order
// mark, so "{...}\0garbage" and a BOM would pass: neither is JSON (RFC 8259 forbids raw control characters and
// says a parser may ignore a BOM, not that a writer may add one), so both are refused here before nlohmann sees them.
void check_document_bytes(const std::string& text, const std::string& source) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0)
    throw JsonInputError(source + ": starts with a UTF-8 byte-order mark; JSON text must start with '{' or '[' "
                                  "(save the file without a BOM)");
  const auto nul = text.find('\0');
  if (nul != std::string::npos)
    throw JsonInputError(source + ": " + position_of(text, nul) + ": a NUL byte; JSON text cannot contain one");
}

// After a document nlohmann accepted (so only whitespace follows it): padding must be spaces.
void check_trailing_spaces(const std::string& text, const std::string& source) {
  const auto last = text.find_last_not_of(" \t\n\r");
  const auto other = text.find_first_not_of(' ', last == std::string::npos ? 0 : last + 1);
  if (other != std::string::npos)
    throw JsonInputError(source + ": " + position_of(text, other) +
                         ": only spaces may follow the JSON document (got a tab or line break)");
}

}  // namespace

std::string json_error_text(const std::exception& error) {
  std::string text = error.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const auto end = text.find("] ");
    if (end != std::string::npos) text = text.substr(end + 2);
  }
  return text;
}

std::string read_input_file(const std::string& path, std::int64_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) throw JsonInputError(path + ": cannot be opened (no such file)");
  if (fs::is_directory(status)) throw JsonInputError(path + ": is a directory, not a file");
  if (!fs::is_regular_file(status))
    throw JsonInputError(path + ": is not a regular file (a device, FIFO or socket); only regular files are read");
  const auto size = fs::file_size(path, error);
  if (!error && size > static_cast<std::uintmax_t>(max_bytes))
    throw JsonInputError(path + ": is " + std::to_string(size) + " bytes; input files are limited to " + size_text(max_bytes));
  std::ifstream file(path, std::ios::binary);
  if (!file) throw JsonInputError(path + ": cannot be opened (permission denied or unreadable)");
  // Read at most one byte past the cap: a file that grows while it is read (or reports size 0, as /proc does) is
  // still bounded.
  std::string text;
  char buffer[64 * 1024];
  while (file) {
    file.read(buffer, sizeof buffer);
    text.append(buffer, static_cast<std::size_t>(file.gcount()));
    if (static_cast<std::int64_t>(text.size()) > max_bytes)
      throw JsonInputError(path + ": is more than " + size_text(max_bytes) + "; input files are limited to " + size_text(max_bytes));
  }
  if (file.bad()) throw JsonInputError(path + ": could not be read");
  return text;
}

namespace {

// Builds the document as nlohmann's own DOM parser does (json::parse without a callback), checking depth and keys as
// it goes. Not through a parser callback: nlohmann 3.11.2's callback parser scans the enclosing array or object for a
// discarded value after every object it ends (json_sax_dom_callback_parser::end_object), so an array of n objects
// cost n²/2 steps (200,000 "{}" in a 600 kB scenario file: 36 s; a 1.2 MB trace header of 40,000 programs: 1.1 s).
class CheckingSax {
 public:
  CheckingSax(json& result, const std::string& source, const JsonInputOptions& options)
      : dom_(result, /*allow_exceptions=*/true), source_(source), options_(options) {}

  bool null() { return element(), dom_.null(); }
  bool boolean(bool value) { return element(), dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return element(), dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return element(), dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t& text) { return element(), dom_.number_float(value, text); }
  bool string(json::string_t& value) { return element(), dom_.string(value); }
  bool binary(json::binary_t& value) { return element(), dom_.binary(value); }
  bool start_object(std::size_t size) { return open(true), dom_.start_object(size); }
  bool start_array(std::size_t size) { return open(false), dom_.start_array(size); }
  bool end_object() { return frames_.pop_back(), dom_.end_object(); }
  bool end_array() { return frames_.pop_back(), dom_.end_array(); }
  bool key(json::string_t& key) {
    Frame& frame = frames_.back();
    frame.key = key;
    if (options_.reject_duplicate_keys && !frame.keys.insert(frame.key).second)
      throw JsonInputError(source_ + ": " + path_of(frames_) +
                           ": duplicate key (each key may appear once in an object; JSON readers disagree on "
                           "which copy wins)");
    return dom_.key(key);
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    return dom_.parse_error(position, token, error);  // throws it
  }

 private:
  void element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  void open(bool object) {
    element();
    if (static_cast<int>(frames_.size()) + 1 > options_.max_depth) {
      const std::string where = path_of(frames_);
      throw JsonInputError(source_ + ": " + (where.empty() ? "" : where + ": ") + "nested more than " +
                           std::to_string(options_.max_depth) + " levels deep (objects and arrays); refused");
    }
    frames_.push_back({object, "", -1, {}});
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const std::string& source_;
  const JsonInputOptions& options_;
  std::vector<Frame> frames_;  // one per open object or array
};

}  // namespace

json parse_json_input(const std::string& text, const std::string& source, const JsonInputOptions& options) {
  check_document_bytes(text, source);
  try {
    json document;
    CheckingSax sax(document, source, options);
    json::sax_parse(text, &sax);
    if (options.trailing_spaces_only) check_trailing_spaces(text, source);
    return document;
  } catch (const json::parse_error& error) {
    throw JsonInputError(source + ": is not valid JSON: " + json_error_text(error));
  } catch (const json::out_of_range& error) {
    // 406: a number beyond a double's range ("1e400"); nlohmann gives no position, so find the token.
    std::string problem = json_error_text(error);
    const auto quote = problem.find('\'');
    const auto end = quote == std::string::npos ? std::string::npos : problem.find('\'', quote + 1);
    if (end != std::string::npos) {
      const std::string token = problem.substr(quote + 1, end - quote - 1);
      const auto at = text.find(token);
      problem = (at != std::string::npos ? position_of(text, at) + ": " : std::string()) + "the number " + token +
                " is out of range (a JSON number must be within about ±1.8e308)";
    }
    throw JsonInputError(source + ": is not valid JSON: " + problem);
  } catch (const json::exception& error) {
    throw JsonInputError(source + ": is not valid JSON: " + json_error_text(error));
  }
}

std::string describe_json_value(const json& value) {
  constexpr std::size_t kMaxChars = 40;
  if (value.is_array()) {
    const std::size_t n = value.size();
    return n == 0 ? "an empty array" : "an array of " + std::to_string(n) + (n == 1 ? " item" : " items");
  }
  if (value.is_object()) {
    const std::size_t n = value.size();
    return n == 0 ? "an empty object" : "an object with " + std::to_string(n) + (n == 1 ? " key" : " keys");
  }
  if (value.is_discarded()) return "nothing";
  std::string text = value.dump();  // a scalar: no recursion
  if (text.size() > kMaxChars) {
    std::size_t cut = kMaxChars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    text = text.substr(0, cut) + "…";
  }
  return text;
}

}  // namespace shardscope
