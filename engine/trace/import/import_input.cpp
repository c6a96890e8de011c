// read_import_bytes, gunzip (zlib's inflate with gzip headers), detect_format.
#include "trace/import/import_input.h"

#include <zlib.h>

#include <cstring>

#include "core/json_input.h"

namespace shardscope {

std::string gunzip(std::string_view data, const std::string& source, std::int64_t max_bytes) {
  std::string out;
  z_stream z{};
  // 16 + MAX_WBITS: a gzip wrapper (zlib.h, inflateInit2).
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw ImportError(source + ": cannot start gzip decompression");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(0);
  std::size_t offered = 0;
  char buffer[1 << 16];
  int rc = Z_OK;
  while (true) {
    if (z.avail_in == 0 && offered < data.size()) {
      const std::size_t n = std::min<std::size_t>(data.size() - offered, 1u << 30);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + offered));
      z.avail_in = static_cast<uInt>(n);
      offered += n;
    }
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (static_cast<std::int64_t>(out.size()) > max_bytes) {
      inflateEnd(&z);
      throw ImportError(source + ": decompresses to more than " + std::to_string(max_bytes >> 20) + " MiB (refused)");
    }
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && offered == data.size()) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && offered == data.size()) {
      inflateEnd(&z);
      throw ImportError(source + ": the gzip data is cut short");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = z.msg ? z.msg : "error " + std::to_string(rc);
      inflateEnd(&z);
      throw ImportError(source + ": damaged gzip data (" + why + ")");
    }
  }
  inflateEnd(&z);
  return out;
}

std::string read_import_bytes(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_input_file(path, kMaxImportFileBytes);
  } catch (const JsonInputError& error) {
    throw ImportError(error.what());
  }
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b)
    return gunzip(bytes, path);
  return bytes;
}

ForeignFormat detect_format(std::string_view bytes) {
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), "SSTRACE\0", 8) == 0) return ForeignFormat::ShardScopeTrace;
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) return ForeignFormat::MemorySnapshot;
  std::size_t i = 0;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t')) ++i;
  if (i < bytes.size() && bytes[i] == '{' && bytes.find("\"traceEvents\"") != std::string_view::npos) return ForeignFormat::ProfilerTrace;
  return ForeignFormat::Unknown;
}

}  // namespace shardscope
