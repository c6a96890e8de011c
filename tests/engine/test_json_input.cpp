// Untrusted input: files (regular only, size-capped), JSON (depth-bounded, duplicate keys optional, numbers that
// overflow, positions in messages), bounded descriptions of values; and the int64 edge cases of the unit helpers.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "core/units.h"
#include "hf_config_files.h"

namespace shardscope {
namespace {

using nlohmann::json;

std::string read_error(const std::string& path, std::int64_t max_bytes = kMaxInputFileBytes) {
  try {
    read_input_file(path, max_bytes);
  } catch (const JsonInputError& error) {
    return error.what();
  }
  return "";
}

std::string parse_error(const std::string& text, const JsonInputOptions& options = {}) {
  try {
    parse_json_input(text, "in.json", options);
  } catch (const JsonInputError& error) {
    return error.what();
  }
  return "";
}

std::string nested(int depth, const std::string& inner = "1") {
  return std::string(static_cast<std::size_t>(depth), '[') + inner + std::string(static_cast<std::size_t>(depth), ']');
}

TEST(InputFiles, OnlyRegularFilesUpToTheCap) {
  testing::TempConfigDir dir;
  const std::string small = dir.write("small.json", "{}");
  EXPECT_EQ(read_input_file(small), "{}");
  // A device never ends: refused by kind, before any byte is read (it would hang or fill memory).
  EXPECT_EQ(read_error("/dev/zero"), "/dev/zero: is not a regular file (a device, FIFO or socket); only regular files are read");
  const std::string folder = std::filesystem::path(small).parent_path().string();
  EXPECT_EQ(read_error(folder), folder + ": is a directory, not a file");
  EXPECT_EQ(read_error("/nonexistent/x.json"), "/nonexistent/x.json: cannot be opened (no such file)");
  // Over the cap: the size and the limit are named.
  const std::string big = dir.write("big.json", std::string(100, ' '));
  EXPECT_EQ(read_error(big, 10), big + ": is 100 bytes; input files are limited to 10 bytes");
  EXPECT_EQ(kMaxInputFileBytes, 16 * 1024 * 1024);
}

TEST(JsonInput, ErrorsNameTheSourceAndThePosition) {
  EXPECT_EQ(parse_json_input(R"({"a": [1, 2]})", "in.json")["a"][1], 2);
  const std::string broken = parse_error("{\n  \"a\": }");
  EXPECT_EQ(broken.rfind("in.json: is not valid JSON: ", 0), 0u) << broken;
  EXPECT_NE(broken.find("line 2"), std::string::npos) << broken;
  EXPECT_EQ(broken.find("[json.exception"), std::string::npos) << broken;  // nlohmann's prefix is not for users
}

// A number beyond a double is nlohmann's out_of_range 406, not a parse_error: it must still be an input error,
// with where it is.
TEST(JsonInput, NumbersBeyondADoubleAreRefusedWithTheirPosition) {
  const std::string text = "{\n  \"x\": 1,\n  \"y\": 1e400\n}";
  const std::size_t at = text.find("1e400");
  const std::size_t column = at - text.rfind('\n', at);  // 1-based
  EXPECT_EQ(parse_error(text), "in.json: is not valid JSON: line 3, column " + std::to_string(column) +
                                   ": the number 1e400 is out of range (a JSON number must be within about ±1.8e308)");
  EXPECT_NE(parse_error("[-1e400]").find("the number -1e400 is out of range"), std::string::npos);
}

TEST(JsonInput, NestingIsBounded) {
  EXPECT_NO_THROW(parse_json_input(nested(kMaxJsonDepth), "in.json"));
  const std::string deep = parse_error(nested(kMaxJsonDepth + 1));
  EXPECT_NE(deep.find("nested more than " + std::to_string(kMaxJsonDepth) + " levels deep"), std::string::npos) << deep;
  // 200,000 levels: refused at level 65 (no stack overflow, no quadratic work); the path in the message is bounded.
  const std::string very_deep = parse_error("{\"k\": " + nested(200000) + "}");
  EXPECT_EQ(very_deep.rfind("in.json: k[0][0]", 0), 0u) << very_deep.substr(0, 200);
  EXPECT_LT(very_deep.size(), 200u);
  EXPECT_NE(parse_error(nested(3), {.max_depth = 2}).find("nested more than 2 levels"), std::string::npos);
}

// 200,000 sibling objects, which the callback parser's rescans made take 36 s (speed belongs to benchmarks, not to an
// assertion here; a return of the quadratic parse would show as this test running into CTest's timeout).
TEST(JsonInput, ManyObjectsInOneArrayParse) {
  std::string text = "[";
  for (int i = 0; i < 200'000; ++i) text += i ? ",{}" : "{}";
  text += "]";
  const json parsed = parse_json_input(text, "in.json", {.reject_duplicate_keys = true});
  EXPECT_EQ(parsed.size(), 200'000u);
  // Paths in messages still count array elements.
  EXPECT_NE(parse_error("[{}, {}, {\"a\": 1, \"a\": 2}]", {.reject_duplicate_keys = true}).find("[2].a: duplicate key"),
            std::string::npos);
}

TEST(JsonInput, DuplicateKeysAreRefusedWhenAsked) {
  const std::string text = R"({"training": {"batch": 8, "steps": 1, "batch": 9}, "list": [{"a": 1}, {"a": 2}]})";
  EXPECT_EQ(parse_json_input(text, "in.json")["training"]["batch"], 9);  // nlohmann's default: the last wins
  const std::string error = parse_error(text, {.reject_duplicate_keys = true});
  EXPECT_EQ(error.rfind("in.json: training.batch: duplicate key", 0), 0u) << error;
  // The same key in two objects is no duplicate.
  EXPECT_EQ(parse_error(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 1}]})", {.reject_duplicate_keys = true}), "");
  EXPECT_NE(parse_error(R"({"c": [{"x": 1}, {"x": 1, "x": 2}]})", {.reject_duplicate_keys = true}).find("c[1].x: duplicate key"),
            std::string::npos);
}

// nlohmann takes a NUL byte for the end of input and skips a byte-order mark: neither may make a document pass.
TEST(JsonInput, DocumentsEndAtTheirClosingBraceWithNoNulAndNoByteOrderMark) {
  using namespace std::string_literals;
  EXPECT_EQ(parse_error("{\"a\": 1}\0garbage"s), "in.json: line 1, column 9: a NUL byte; JSON text cannot contain one");
  EXPECT_EQ(parse_error("{\"a\": \"x\0y\"}"s), "in.json: line 1, column 9: a NUL byte; JSON text cannot contain one");
  EXPECT_NE(parse_error("\xEF\xBB\xBF{}").find("starts with a UTF-8 byte-order mark"), std::string::npos);
  EXPECT_NE(parse_error("{} x").find("is not valid JSON"), std::string::npos);
  EXPECT_EQ(parse_error("{} \n\t"), "");  // whitespace after the document is JSON
  // safetensors pads with spaces only.
  EXPECT_EQ(parse_error("{}    ", {.trailing_spaces_only = true}), "");
  EXPECT_EQ(parse_error("{}\n", {.trailing_spaces_only = true}),
            "in.json: line 1, column 3: only spaces may follow the JSON document (got a tab or line break)");
}

TEST(JsonInput, ValuesAreDescribedBoundedAndWithoutRecursion) {
  EXPECT_EQ(describe_json_value(json(12)), "12");
  EXPECT_EQ(describe_json_value(json("abc")), "\"abc\"");
  EXPECT_EQ(describe_json_value(json::array({1, 2, 3})), "an array of 3 items");
  EXPECT_EQ(describe_json_value(json::object({{"a", 1}})), "an object with 1 key");
  EXPECT_EQ(describe_json_value(json::array()), "an empty array");
  const std::string long_text = describe_json_value(json(std::string(100000, 'x')));
  EXPECT_LE(long_text.size(), 48u);
  // Nested far deeper than the parser allows (built by hand): described by its outer shape, never dumped.
  json deep = 1;
  for (int i = 0; i < 100000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  EXPECT_EQ(describe_json_value(deep), "an array of 1 item");
}

TEST(Units, FormatDurationTakesEveryInt64) {
  EXPECT_EQ(format_duration(812), "812 ns");
  EXPECT_EQ(format_duration(-812), "-812 ns");
  EXPECT_EQ(format_duration(1'235'000'000), "1.235 s");
  // INT64_MIN has no positive counterpart: formatting it must not recurse or overflow.
  const std::string lowest = format_duration(std::numeric_limits<TimeNs>::min());
  EXPECT_EQ(lowest, "-9223372036.855 s");
  EXPECT_EQ(format_duration(std::numeric_limits<TimeNs>::max()), "9223372036.855 s");
  EXPECT_EQ(format_bytes(std::numeric_limits<Bytes>::min()).front(), '-');
}

TEST(Units, DurationsSaturateAtTheMaximum) {
  EXPECT_EQ(saturating_duration_ns(1.4), 1);
  EXPECT_EQ(saturating_duration_ns(1e30), kMaxTimeNs);
  EXPECT_EQ(saturating_duration_ns(std::numeric_limits<double>::infinity()), kMaxTimeNs);
  EXPECT_EQ(saturating_duration_ns(std::nan("")), kMaxTimeNs);
  EXPECT_EQ(saturating_duration_ns(-5), 0);
  EXPECT_EQ(saturating_add(kMaxTimeNs, kMaxTimeNs), kMaxTimeNs);
  EXPECT_EQ(saturating_add(kMaxTimeNs - 1, 1), kMaxTimeNs);
  EXPECT_EQ(saturating_add(3, 4), 7);
  EXPECT_LT(2 * kMaxTimeNs, std::numeric_limits<TimeNs>::max());  // the sum before clamping fits
}

}  // namespace
}  // namespace shardscope
