// .sstrace framing, checksums and the compact event encoding (see trace_format.h). The header JSON is in
// trace_header_json.cpp.
#include "trace/file/trace_format.h"

#include <array>
#include <cstring>
#include <stdexcept>

namespace shardscope::trace_format {

namespace {

// Slicing-by-8 tables: tables[0] is the classic byte table; tables[k][b] is the CRC of byte b followed by k zero
// bytes, so eight bytes are folded in with eight lookups (several times the byte-at-a-time speed; every event byte
// is checksummed once when written and once when read).
using CrcTables = std::array<std::array<std::uint32_t, 256>, 8>;
CrcTables make_crc_tables() {
  CrcTables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  return t;
}
const CrcTables kCrcTables = make_crc_tables();

std::uint32_t load_le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) | (static_cast<std::uint32_t>(p[2]) << 16) |
         (static_cast<std::uint32_t>(p[3]) << 24);
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}


void put_signed(std::string& out, std::int64_t v) { put_varint(out, zigzag(v)); }

bool get_signed(const unsigned char*& p, const unsigned char* end, std::int64_t& v) {
  std::uint64_t u = 0;
  if (!read_varint(p, end, u)) return false;
  v = unzigzag(u);
  return true;
}

template <class Int>
bool get_int(const unsigned char*& p, const unsigned char* end, Int& out) {
  std::int64_t v = 0;
  if (!get_signed(p, end, v)) return false;
  out = static_cast<Int>(v);
  return static_cast<std::int64_t>(out) == v;  // refuse values that do not fit the field
}

enum Presence : std::uint8_t {
  kStep = 1 << 0,
  kOp = 1 << 1,
  kBytes = 1 << 2,
  kAllocated = 1 << 3,
  kReserved = 1 << 4,
  kTensor = 1 << 5,
  kText = 1 << 6,
};

constexpr int kEventKindCount = 8;  // TraceEventKind::OpBegin .. RunEnd

}  // namespace

std::uint32_t crc32(const unsigned char* data, std::size_t size, std::uint32_t crc) {
  const auto& t = kCrcTables;
  crc = ~crc;
  for (; size >= 8; data += 8, size -= 8) {
    const std::uint32_t lo = crc ^ load_le32(data), hi = load_le32(data + 4);
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][hi & 0xFF] ^
          t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; size > 0; ++data, --size) crc = t[0][(crc ^ *data) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::string encode_preamble(std::uint32_t version) {
  std::string out(kMagic, sizeof kMagic);
  put_u32(out, version);
  put_u32(out, 0);
  return out;
}

namespace {

void check_record_size(RecordType type, std::size_t size) {
  const bool header = type == RecordType::Header;
  const std::uint64_t cap = header ? kMaxHeaderRecordBytes : kMaxRecordBytes;
  if (size > cap)
    throw std::length_error(std::string(header ? "the trace header" : "a trace record") + " would be " + std::to_string(size) +
                            " bytes, more than the " + std::to_string(cap) + " readers accept (" +
                            (header ? "kMaxHeaderRecordBytes" : "kMaxRecordBytes") + ")");
}

}  // namespace

void append_record(std::string& out, RecordType type, std::string_view payload) {
  check_record_size(type, payload.size());
  const std::size_t start = out.size();
  out.push_back(static_cast<char>(type));
  put_varint(out, payload.size());
  out.append(payload);
  put_u32(out, crc32(reinterpret_cast<const unsigned char*>(out.data() + start), out.size() - start));
}

void append_record(std::string& out, RecordType type, std::string_view first, std::string_view second) {
  check_record_size(type, first.size() + second.size());
  const std::size_t start = out.size();
  out.push_back(static_cast<char>(type));
  put_varint(out, first.size() + second.size());
  out.append(first);
  out.append(second);
  put_u32(out, crc32(reinterpret_cast<const unsigned char*>(out.data() + start), out.size() - start));
}

void append_event_payload(std::string& out, const TraceEvent& e, TimeNs previous_t_ns) {
  std::uint8_t presence = 0;
  if (e.step != 0) presence |= kStep;
  if (e.op != -1) presence |= kOp;
  if (e.bytes != 0) presence |= kBytes;
  if (e.allocated_after != 0) presence |= kAllocated;
  if (e.reserved_after != 0) presence |= kReserved;
  if (e.tensor != -1) presence |= kTensor;
  if (!e.text.empty()) presence |= kText;
  out.push_back(static_cast<char>(e.kind));
  out.push_back(static_cast<char>(static_cast<int>(e.stream) | (static_cast<int>(e.category) << 4)));
  out.push_back(static_cast<char>(presence));
  put_signed(out, e.rank);
  put_signed(out, e.t_ns - previous_t_ns);
  if (presence & kStep) put_signed(out, e.step);
  if (presence & kOp) put_signed(out, e.op);
  if (presence & kBytes) put_signed(out, e.bytes);
  if (presence & kAllocated) put_signed(out, e.allocated_after);
  if (presence & kReserved) put_signed(out, e.reserved_after);
  if (presence & kTensor) put_signed(out, e.tensor);
  if (presence & kText) {
    put_varint(out, e.text.size());
    out.append(e.text);
  }
}

bool decode_event_payload(const unsigned char* p, std::size_t size, TimeNs previous_t_ns, TraceEvent& e) {
  const unsigned char* end = p + size;
  if (size < 3) return false;
  const int kind = p[0], stream = p[1] & 0x0F, category = p[1] >> 4, presence = p[2];
  if (kind >= kEventKindCount || stream >= kStreamCount || category >= kCategoryCount || (presence & 0x80)) return false;
  p += 3;
  e = TraceEvent{};
  e.kind = static_cast<TraceEventKind>(kind);
  e.stream = static_cast<Stream>(stream);
  e.category = static_cast<Category>(category);
  std::int64_t dt = 0;
  if (!get_int(p, end, e.rank) || !get_signed(p, end, dt)) return false;
  // Times and byte counts past what a run can produce are damage (and would overflow the sums readers make).
  if (__builtin_add_overflow(previous_t_ns, dt, &e.t_ns) || e.t_ns > kMaxTraceTimeNs || e.t_ns < -kMaxTraceTimeNs) return false;
  const auto bytes_in_range = [](Bytes b) { return b <= kMaxTraceBytes && b >= -kMaxTraceBytes; };
  if ((presence & kStep) && !get_int(p, end, e.step)) return false;
  if ((presence & kOp) && !get_int(p, end, e.op)) return false;
  if ((presence & kBytes) && !(get_int(p, end, e.bytes) && bytes_in_range(e.bytes))) return false;
  if ((presence & kAllocated) && !(get_int(p, end, e.allocated_after) && bytes_in_range(e.allocated_after))) return false;
  if ((presence & kReserved) && !(get_int(p, end, e.reserved_after) && bytes_in_range(e.reserved_after))) return false;
  if ((presence & kTensor) && !get_int(p, end, e.tensor)) return false;
  if (presence & kText) {
    std::uint64_t n = 0;
    if (!read_varint(p, end, n) || n > static_cast<std::uint64_t>(end - p)) return false;
    e.text.assign(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    p += n;
  }
  return p == end;
}

bool read_varint(const unsigned char*& p, const unsigned char* end, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const unsigned char b = *p++;
    value |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

std::uint32_t read_u32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) | (static_cast<std::uint32_t>(p[2]) << 16) |
         (static_cast<std::uint32_t>(p[3]) << 24);
}

}  // namespace shardscope::trace_format
