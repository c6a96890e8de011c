// Shared by the trace fuzzers: libFuzzer's bytes as a trace file. Each record of a .sstrace ends with a CRC-32 of
// itself, which a random mutation almost always breaks, so the fuzzer would hardly get past "checksum mismatch";
// records whose framing is complete get their checksum recomputed here so that mutations reach the header JSON and
// event decoding (damaged checksums are covered by tests/engine/test_trace_file.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/file/trace_format.h"

namespace shardscope::fuzz {

inline std::string trace_with_fixed_checksums(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto* base = reinterpret_cast<unsigned char*>(bytes.data());
  std::size_t pos = trace_format::kPreambleBytes;
  while (pos < bytes.size()) {
    const unsigned char* q = base + pos + 1;
    std::uint64_t length = 0;
    if (!trace_format::read_varint(q, base + bytes.size(), length)) break;
    const std::size_t framing = static_cast<std::size_t>(q - (base + pos));
    if (length > bytes.size() || bytes.size() - pos - framing < length + 4) break;
    const std::size_t checked = framing + static_cast<std::size_t>(length);
    const std::uint32_t crc = trace_format::crc32(base + pos, checked);
    for (int i = 0; i < 4; ++i) base[pos + checked + static_cast<std::size_t>(i)] = static_cast<unsigned char>((crc >> (8 * i)) & 0xFF);
    pos += checked + 4;
  }
  return bytes;
}

}  // namespace shardscope::fuzz
