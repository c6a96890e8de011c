// The bytes of a file handed to `shardscope-cli import` or the window's File → Open: read whole (a regular file,
// at most a cap), gunzipped when it is gzip (`trace.json.gz`, as torch.profiler's export_chrome_trace writes with a
// .gz name), and what kind of file it is by its content, not its name.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shardscope {

// Any problem with a file to import: unreadable, not a known format, damaged, hostile. The message names the file
// and says what is wrong; the CLI exits 2 with it.
class ImportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Larger inputs are refused: a profiler trace of a long run is hundreds of MiB of JSON; the importer holds it and
// its parse in memory.
inline constexpr std::int64_t kMaxImportFileBytes = std::int64_t{1} << 30;
// A gzip file may not expand past this (a small "zip bomb" cannot exhaust memory).
inline constexpr std::int64_t kMaxImportInflatedBytes = std::int64_t{1} << 30;

// The file's bytes, gunzipped when they start with the gzip magic (1f 8b). Throws ImportError.
std::string read_import_bytes(const std::string& path);

// Inflates a gzip stream (one or more members, as `cat a.gz b.gz` makes); throws ImportError naming `source` when
// it is damaged, cut short or expands past `max_bytes`.
std::string gunzip(std::string_view data, const std::string& source, std::int64_t max_bytes = kMaxImportInflatedBytes);

enum class ForeignFormat { Unknown, ShardScopeTrace, ProfilerTrace, MemorySnapshot };

// What `bytes` (already gunzipped) are: "SSTRACE\0" a ShardScope trace; a pickle (protocol 2+: 0x80) a memory
// snapshot; a JSON object whose text names "traceEvents" a profiler (Chrome) trace.
ForeignFormat detect_format(std::string_view bytes);

}  // namespace shardscope
