// safetensors reader and writer against files built by hand from the format's specification: the 8-byte
// little-endian header size, the exact JSON text with its space padding, and float bytes spelled out from their
// IEEE-754 bit patterns. One test per malformed file the reader must refuse, each checking that the message names
// the problem.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "engine/hf_config_files.h"
#include "exec/data/safetensors.h"

namespace shardscope::exec {
namespace {

using Bytes = std::vector<std::byte>;

Bytes bytes_of(std::initializer_list<unsigned> values) {
  Bytes out;
  for (unsigned v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

void append(Bytes& out, const std::string& text) {
  for (char c : text) out.push_back(static_cast<std::byte>(static_cast<unsigned char>(c)));
}

void append(Bytes& out, const Bytes& more) { out.insert(out.end(), more.begin(), more.end()); }

// A file whose header is `header` exactly (its length written as 8 little-endian bytes), then `data`.
Bytes file_of(const std::string& header, const Bytes& data = {}) {
  Bytes out;
  std::uint64_t size = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((size >> (8 * i)) & 0xFF));
  append(out, header);
  append(out, data);
  return out;
}

// The reader's message for `bytes`, or "" when it did not throw SafetensorsError.
std::string error_of(const Bytes& bytes) {
  try {
    parse_safetensors(bytes, "mem.safetensors");
  } catch (const SafetensorsError& error) {
    return error.what();
  }
  return "";
}

#define EXPECT_ERROR(bytes, ...)                                                          \
  do {                                                                                    \
    const std::string message = error_of(bytes);                                          \
    ASSERT_FALSE(message.empty()) << "accepted";                                          \
    EXPECT_NE(message.find("mem.safetensors"), std::string::npos) << message;             \
    for (const char* part : {__VA_ARGS__}) EXPECT_NE(message.find(part), std::string::npos) << message; \
  } while (0)

std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }

Bytes read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  Bytes out;
  append(out, text);
  return out;
}

using TempDir = shardscope::testing::TempConfigDir;  // a fresh folder, removed with everything in it

// 1.0f = 0x3F800000, -2.0f = 0xC0000000, 0.5f = 0x3F000000, 3.0f = 0x40400000 (little-endian bytes reversed).
const Bytes kOne = bytes_of({0x00, 0x00, 0x80, 0x3F});
const Bytes kMinusTwo = bytes_of({0x00, 0x00, 0x00, 0xC0});
const Bytes kHalf = bytes_of({0x00, 0x00, 0x00, 0x3F});
const Bytes kThree = bytes_of({0x00, 0x00, 0x40, 0x40});

// ---- the exact bytes ----

// Header of 138 bytes, padded with 6 spaces to 144 = 0x90 so that the data starts at 8 + 144 = 152, 8-aligned.
Bytes expected_file_with_metadata() {
  Bytes out = bytes_of({0x90, 0, 0, 0, 0, 0, 0, 0});
  append(out,
         R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
         R"("b":{"dtype":"F32","shape":[],"data_offsets":[8,12]}})"
         "      ");
  append(out, kOne);
  append(out, kMinusTwo);
  append(out, kHalf);
  return out;
}

TEST(Safetensors, WriterProducesTheSpecifiedBytes) {
  TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  write_safetensors(path.string(), {{"a", {2}, {1.0f, -2.0f}}, {"b", {}, {0.5f}}}, {{"format", "pt"}});
  const Bytes written = read_bytes(path);
  const Bytes expected = expected_file_with_metadata();
  ASSERT_EQ(written.size(), 164u);
  EXPECT_EQ(written, expected);
}

TEST(Safetensors, WriterWithoutMetadataPadsTheHeader) {
  // 57 bytes of JSON + 7 spaces = 64 = 0x40.
  Bytes expected = bytes_of({0x40, 0, 0, 0, 0, 0, 0, 0});
  append(expected, std::string(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})") + "       ");
  append(expected, kOne);
  append(expected, kMinusTwo);
  append(expected, kHalf);
  append(expected, kThree);
  TempDir dir;
  const auto path = dir.path() / "w.safetensors";
  write_safetensors(path.string(), {{"w", {2, 2}, {1.0f, -2.0f, 0.5f, 3.0f}}});
  EXPECT_EQ(read_bytes(path), expected);
  // No temporary file left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
}

TEST(Safetensors, WriterOfNoTensors) {
  TempDir dir;
  const auto path = dir.path() / "empty.safetensors";
  write_safetensors(path.string(), {});
  Bytes expected = bytes_of({8, 0, 0, 0, 0, 0, 0, 0});
  append(expected, std::string("{}      "));
  EXPECT_EQ(read_bytes(path), expected);
  EXPECT_TRUE(parse_safetensors(expected, "empty").empty());
}

TEST(Safetensors, ParserReadsTheSpecifiedBytes) {
  const auto tensors = parse_safetensors(expected_file_with_metadata(), "m.safetensors");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].name, "a");
  EXPECT_EQ(tensors[0].shape, (std::vector<std::int64_t>{2}));
  ASSERT_EQ(tensors[0].values.size(), 2u);
  EXPECT_EQ(bits(tensors[0].values[0]), 0x3F800000u);
  EXPECT_EQ(bits(tensors[0].values[1]), 0xC0000000u);
  EXPECT_EQ(tensors[1].name, "b");
  EXPECT_TRUE(tensors[1].shape.empty());  // a scalar
  ASSERT_EQ(tensors[1].values.size(), 1u);
  EXPECT_EQ(bits(tensors[1].values[0]), 0x3F000000u);
}

TEST(Safetensors, TensorsComeInTheOrderOfTheirOffsets) {
  // Keys out of offset order, no padding, whitespace inside the JSON.
  const std::string header =
      R"({ "z": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
      R"(  "a": {"data_offsets": [4, 8], "shape": [1], "dtype": "F32"} })";
  Bytes data = kOne;
  append(data, kThree);
  const auto tensors = parse_safetensors(file_of(header, data), "x");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].name, "z");
  EXPECT_EQ(tensors[0].values, std::vector<float>{1.0f});
  EXPECT_EQ(tensors[1].name, "a");
  EXPECT_EQ(tensors[1].values, std::vector<float>{3.0f});
}

TEST(Safetensors, ZeroSizedTensors) {
  // A 0 in the shape is 0 elements, even beside dimensions whose product would overflow.
  const std::string header =
      R"({"e":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]},)"
      R"("big":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904,0],"data_offsets":[0,0]},)"
      R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})";
  const auto tensors = parse_safetensors(file_of(header, kHalf), "x");
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].name, "big");
  EXPECT_TRUE(tensors[0].values.empty());
  EXPECT_EQ(tensors[0].shape, (std::vector<std::int64_t>{4611686018427387904, 4611686018427387904, 0}));
  EXPECT_EQ(tensors[1].name, "e");
  EXPECT_TRUE(tensors[1].values.empty());
  EXPECT_EQ(tensors[2].name, "s");
  EXPECT_EQ(tensors[2].values, std::vector<float>{0.5f});
}

// ---- other dtypes ----

TEST(Safetensors, Bf16ConvertsExactly) {
  // 0x3F80 -> 1.0f, 0xC000 -> -2.0f, 0x3F81 -> 0x3F810000 (1 + 2^-7), 0x7F80 -> +inf.
  const std::string header = R"({"h":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})";
  const Bytes data = bytes_of({0x80, 0x3F, 0x00, 0xC0, 0x81, 0x3F, 0x80, 0x7F});
  const auto tensors = parse_safetensors(file_of(header, data), "x");
  ASSERT_EQ(tensors.size(), 1u);
  ASSERT_EQ(tensors[0].values.size(), 4u);
  EXPECT_EQ(bits(tensors[0].values[0]), 0x3F800000u);
  EXPECT_EQ(bits(tensors[0].values[1]), 0xC0000000u);
  EXPECT_EQ(bits(tensors[0].values[2]), 0x3F810000u);
  EXPECT_EQ(bits(tensors[0].values[3]), 0x7F800000u);
}

TEST(Safetensors, F16ConvertsExactly) {
  // 0x3C00 = 1.0; 0x0001 = 2^-24 (smallest subnormal); 0x8001 = -2^-24; 0x03FF = 1023 × 2^-24 (largest subnormal);
  // 0x7BFF = 65504 (largest finite); 0xC000 = -2; 0x7C00 = +inf; 0x8000 = -0.
  const std::string header = R"({"h":{"dtype":"F16","shape":[2,4],"data_offsets":[0,16]}})";
  const Bytes data = bytes_of({0x00, 0x3C, 0x01, 0x00, 0x01, 0x80, 0xFF, 0x03,
                               0xFF, 0x7B, 0x00, 0xC0, 0x00, 0x7C, 0x00, 0x80});
  const auto tensors = parse_safetensors(file_of(header, data), "x");
  ASSERT_EQ(tensors.size(), 1u);
  const auto& v = tensors[0].values;
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(bits(v[0]), 0x3F800000u);
  EXPECT_EQ(v[1], std::ldexp(1.0f, -24));
  EXPECT_EQ(bits(v[1]), 0x33800000u);  // 2^-24: exponent 127 - 24 = 103 = 0x67
  EXPECT_EQ(v[2], -std::ldexp(1.0f, -24));
  EXPECT_EQ(v[3], 1023.0f * std::ldexp(1.0f, -24));
  EXPECT_EQ(v[4], 65504.0f);
  EXPECT_EQ(v[5], -2.0f);
  EXPECT_EQ(v[6], std::numeric_limits<float>::infinity());
  EXPECT_EQ(bits(v[7]), 0x80000000u);
}

TEST(Safetensors, F16NanStaysNan) {
  const std::string header = R"({"h":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}})";
  const auto tensors = parse_safetensors(file_of(header, bytes_of({0x00, 0x7E})), "x");
  EXPECT_TRUE(std::isnan(tensors.at(0).values.at(0)));
}

TEST(Safetensors, F64IsNarrowedToFloat) {
  // 1.0 = 0x3FF0000000000000; 0.1 = 0x3FB999999999999A, nearest float 0x3DCCCCCD.
  const std::string header = R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})";
  const Bytes data = bytes_of({0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x9A, 0x99, 0x99, 0x99, 0x99, 0x99, 0xB9, 0x3F});
  const auto tensors = parse_safetensors(file_of(header, data), "x");
  ASSERT_EQ(tensors.at(0).values.size(), 2u);
  EXPECT_EQ(bits(tensors[0].values[0]), 0x3F800000u);
  EXPECT_EQ(bits(tensors[0].values[1]), 0x3DCCCCCDu);
}

TEST(Safetensors, MixedDtypesInOneFile) {
  const std::string header =
      R"({"f":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[4,6]},)"
      R"("h":{"dtype":"F16","shape":[1],"data_offsets":[6,8]}})";
  Bytes data = kThree;
  append(data, bytes_of({0x80, 0x3F, 0x00, 0x3C}));
  const auto tensors = parse_safetensors(file_of(header, data), "x");
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0].values, std::vector<float>{3.0f});
  EXPECT_EQ(tensors[1].values, std::vector<float>{1.0f});
  EXPECT_EQ(tensors[2].values, std::vector<float>{1.0f});
}

// ---- malformed files ----

TEST(SafetensorsMalformed, ShorterThanEightBytes) {
  EXPECT_ERROR(bytes_of({1, 0, 0, 0, 0}), "5 bytes", "shorter than the 8-byte");
  EXPECT_ERROR(Bytes{}, "0 bytes", "shorter than the 8-byte");
}

TEST(SafetensorsMalformed, HeaderSizeOverTheLimit) {
  // 100,000,001 = 0x05F5E101.
  Bytes bytes = bytes_of({0x01, 0xE1, 0xF5, 0x05, 0, 0, 0, 0});
  append(bytes, std::string("{}"));
  EXPECT_ERROR(bytes, "100000001", "over the limit of 100000000");
  EXPECT_ERROR(bytes_of({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), "over the limit");
}

TEST(SafetensorsMalformed, HeaderSizeBeyondTheFile) {
  Bytes bytes = bytes_of({100, 0, 0, 0, 0, 0, 0, 0});
  append(bytes, std::string("{}      "));
  EXPECT_ERROR(bytes, "header size 100", "beyond the end of the file");
}

TEST(SafetensorsMalformed, HeaderNotJson) {
  EXPECT_ERROR(file_of(R"({"a":)"), "not valid JSON");
  EXPECT_ERROR(file_of("\xFF\xFE"), "not valid JSON");
  EXPECT_ERROR(file_of(""), "not valid JSON");
}

TEST(SafetensorsMalformed, HeaderNotAnObject) {
  EXPECT_ERROR(file_of("[1, 2]"), "not a JSON object");
  EXPECT_ERROR(file_of("\"x\""), "not a JSON object");
}

// The header is '{' ... '}' and padding spaces only: nothing hides after it (nlohmann alone stops at a NUL byte).
TEST(SafetensorsMalformed, OnlySpacesAroundTheHeader) {
  using namespace std::string_literals;
  EXPECT_ERROR(file_of("{}\0garbage"s), "a NUL byte");
  EXPECT_ERROR(file_of("{}\n"), "only spaces may follow");
  EXPECT_ERROR(file_of(" {}"), "does not begin with '{'");
  EXPECT_ERROR(file_of("\xEF\xBB\xBF{}"), "byte-order mark");
}

TEST(SafetensorsMalformed, EntryNotAnObject) {
  EXPECT_ERROR(file_of(R"({"w":[1]})"), "tensor \"w\"", "not an object");
}

TEST(SafetensorsMalformed, MissingDtype) {
  EXPECT_ERROR(file_of(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", kOne), "tensor \"w\"", "no \"dtype\"");
}

TEST(SafetensorsMalformed, MissingShape) {
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", kOne), "tensor \"w\"", "no \"shape\"");
}

TEST(SafetensorsMalformed, MissingDataOffsets) {
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1]}})", kOne), "tensor \"w\"", "no \"data_offsets\"");
}

TEST(SafetensorsMalformed, WrongTypes) {
  EXPECT_ERROR(file_of(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", kOne), "tensor \"w\"",
               "\"dtype\" is not a string");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", kOne), "tensor \"w\"",
               "\"shape\" is not an array");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", kOne), "tensor \"w\"",
               "\"shape\" is not an array of integers");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", kOne),
               "\"shape\" is not an array of integers");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", kOne), "tensor \"w\"",
               "\"data_offsets\" is not an array of two integers");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":{"a":0}}})", kOne),
               "\"data_offsets\" is not an array of two integers");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4.0]}})", kOne), "tensor \"w\"",
               "\"data_offsets\" is not an array of two non-negative integers");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,4]}})", kOne),
               "\"data_offsets\" is not an array of two non-negative integers");
}

TEST(SafetensorsMalformed, NegativeDimension) {
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,4]}})", kOne), "tensor \"w\"",
               "negative dimension");
}

TEST(SafetensorsMalformed, DimensionBeyondInt64) {
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,4]}})", kOne),
               "tensor \"w\"", "too large");
}

TEST(SafetensorsMalformed, NumelTimesSizeOverflows) {
  // numel 2^64 overflows; numel 2^62 fits but × 4 bytes overflows.
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", kOne),
               "tensor \"w\"", "overflows");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]}})", kOne),
               "tensor \"w\"", "overflows");
  // Offsets that wrap to the right size modulo 2^64 are still refused (END beyond the buffer).
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1],)"
                       R"("data_offsets":[18446744073709551614,18446744073709551615]}})",
                       kOne),
               "beyond the data buffer");
}

TEST(SafetensorsMalformed, OffsetsOutOfTheBuffer) {
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", kOne), "tensor \"w\"",
               "data_offsets [0, 16]", "beyond the data buffer of 4 bytes");
}

TEST(SafetensorsMalformed, EndBeforeBegin) {
  Bytes data = kOne;
  append(data, kOne);
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", data), "tensor \"w\"",
               "end is before the begin");
}

TEST(SafetensorsMalformed, SizeMismatch) {
  Bytes data = kOne;
  append(data, kOne);
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data), "tensor \"w\"",
               "size mismatch", "needs 12");
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F16","shape":[1],"data_offsets":[0,4]}})", kOne), "size mismatch");
}

TEST(SafetensorsMalformed, GapAtTheStart) {
  Bytes data = kOne;
  append(data, kOne);
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data), "tensor \"w\"", "gap",
               "[0, 4)");
}

TEST(SafetensorsMalformed, GapBetweenTensors) {
  Bytes data = kOne;
  append(data, kOne);
  append(data, kOne);
  EXPECT_ERROR(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                       data),
               "tensor \"b\"", "gap", "[4, 8)", "after tensor \"a\"");
}

TEST(SafetensorsMalformed, GapAtTheEnd) {
  Bytes data = kOne;
  append(data, kOne);
  EXPECT_ERROR(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data), "gap", "[4, 8)");
  // Bytes after a file with no tensors are a gap too.
  EXPECT_ERROR(file_of("{}", kOne), "gap", "[0, 4)");
}

TEST(SafetensorsMalformed, Overlap) {
  Bytes data = kOne;
  append(data, kOne);
  EXPECT_ERROR(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       data),
               "tensor \"b\"", "overlap tensor \"a\"");
  // Two tensors on the same bytes.
  EXPECT_ERROR(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                       kOne),
               "overlap");
}

TEST(SafetensorsMalformed, DuplicateNames) {
  Bytes data = kOne;
  append(data, kOne);
  EXPECT_ERROR(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       data),
               "duplicate key", "a");
}

TEST(SafetensorsMalformed, UnknownDtype) {
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", kOne), "tensor \"w\"",
               "unknown dtype \"F31\"");
  // A dtype of the format that this reader does not convert.
  EXPECT_ERROR(file_of(R"({"w":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", kOne), "tensor \"w\"",
               "dtype I32 is not supported");
}

TEST(SafetensorsMalformed, MetadataNotStrings) {
  EXPECT_ERROR(file_of(R"({"__metadata__":{"step":1}})"), "__metadata__", "\"step\"", "not a string");
  EXPECT_ERROR(file_of(R"({"__metadata__":[]})"), "__metadata__", "not an object");
}

// ---- files ----

TEST(Safetensors, RoundTripThroughAFile) {
  TempDir dir;
  const auto path = (dir.path() / "round.safetensors").string();
  std::vector<float> big(100'003);  // over one 64 KiB write chunk, not a multiple of it
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.25f - 1000.0f;
  const std::vector<float> special{0.0f,
                                   -0.0f,
                                   std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::denorm_min(),
                                   std::numeric_limits<float>::max(),
                                   std::bit_cast<float>(0x7FC01234u)};  // a NaN with a payload
  const std::vector<SafetensorsTensor> tensors{
      {"transformer.h.0.attn.c_attn.weight", {7}, special},
      {"big", {100'003}, big},
      {"nämé \"quoted\"\n", {1, 1}, {42.0f}},
      {"empty", {3, 0}, {}},
      {"scalar", {}, {-7.5f}},
  };
  write_safetensors(path, tensors, {{"format", "pt"}, {"note", "ünïcode \"and\" quotes"}});
  const auto back = read_safetensors(path);
  ASSERT_EQ(back.size(), tensors.size());
  // Offsets follow the written order; the zero-sized tensor sits at the same offset as "scalar" and sorts first.
  const std::vector<std::size_t> order{0, 1, 2, 3, 4};
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsTensor& want = tensors[order[i]];
    EXPECT_EQ(back[i].name, want.name);
    EXPECT_EQ(back[i].shape, want.shape);
    ASSERT_EQ(back[i].values.size(), want.values.size()) << want.name;
    for (std::size_t j = 0; j < want.values.size(); ++j)
      ASSERT_EQ(bits(back[i].values[j]), bits(want.values[j])) << want.name << "[" << j << "]";
  }
}

TEST(Safetensors, OverwritesAnExistingFile) {
  TempDir dir;
  const auto path = (dir.path() / "o.safetensors").string();
  write_safetensors(path, {{"a", {2}, {1.0f, 2.0f}}});
  write_safetensors(path, {{"b", {1}, {3.0f}}});
  const auto back = read_safetensors(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].name, "b");
}

TEST(Safetensors, WriteToAMissingDirectoryThrowsAndLeavesNoFile) {
  TempDir dir;
  const auto path = dir.path() / "no-such-dir" / "m.safetensors";
  try {
    write_safetensors(path.string(), {{"a", {1}, {1.0f}}});
    FAIL() << "no error";
  } catch (const SafetensorsError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path.parent_path()));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Safetensors, FailedRenameLeavesNoTemporaryFile) {
  // The target is a directory: the temporary file is written, the rename fails, and it must be removed.
  TempDir dir;
  const auto path = dir.path() / "taken";
  std::filesystem::create_directory(path);
  EXPECT_THROW(write_safetensors(path.string(), {{"a", {1}, {1.0f}}}), SafetensorsError);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
  EXPECT_TRUE(std::filesystem::is_directory(path));
}

TEST(Safetensors, WriterRefusesBadTensorsBeforeCreatingAFile) {
  TempDir dir;
  const auto path = (dir.path() / "bad.safetensors").string();
  const auto message_of = [&](const std::vector<SafetensorsTensor>& tensors) -> std::string {
    try {
      write_safetensors(path, tensors);
    } catch (const SafetensorsError& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(message_of({{"a", {2, 2}, {1.0f}}}).find("does not match its 1 values"), std::string::npos);
  EXPECT_NE(message_of({{"a", {-1}, {}}}).find("negative dimension"), std::string::npos);
  EXPECT_NE(message_of({{"a", {1}, {1.0f}}, {"a", {1}, {1.0f}}}).find("given twice"), std::string::npos);
  EXPECT_NE(message_of({{"__metadata__", {1}, {1.0f}}}).find("reserved"), std::string::npos);
  EXPECT_NE(message_of({{"bad\xFF", {1}, {1.0f}}}).find("not valid UTF-8"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Safetensors, ReadingAMissingFileNamesIt) {
  TempDir dir;
  const auto path = (dir.path() / "absent.safetensors").string();
  try {
    read_safetensors(path);
    FAIL() << "no error";
  } catch (const SafetensorsError& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
  EXPECT_THROW(read_safetensors(dir.path().string()), SafetensorsError);  // a directory
}

TEST(Safetensors, ReadsAFileCutShort) {
  TempDir dir;
  const auto path = dir.path() / "cut.safetensors";
  write_safetensors(path.string(), {{"a", {2}, {1.0f, 2.0f}}});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  EXPECT_THROW(read_safetensors(path.string()), SafetensorsError);
}

}  // namespace
}  // namespace shardscope::exec
