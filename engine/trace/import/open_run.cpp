// load_run, import_foreign_file, looks_like_run (see open_run.h).
#include "trace/import/open_run.h"

#include <filesystem>
#include <fstream>

#include "trace/file/rank_files.h"
#include "trace/import/import_input.h"
#include "trace/import/memory_snapshot_import.h"
#include "trace/import/profiler_trace_import.h"

namespace shardscope {

ImportedRun import_foreign_file(const std::string& path) {
  const std::string bytes = read_import_bytes(path);
  switch (detect_format(bytes)) {
    case ForeignFormat::ProfilerTrace: return import_profiler_trace(bytes, path);
    case ForeignFormat::MemorySnapshot: return import_memory_snapshot(bytes, path);
    case ForeignFormat::ShardScopeTrace: throw ImportError(path + ": already a ShardScope trace (open it as it is)");
    case ForeignFormat::Unknown: break;
  }
  // A legacy profiler trace is a JSON array of events.
  const auto first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && bytes[first] == '[' && bytes.find("\"ph\"") != std::string::npos) return import_profiler_trace(bytes, path);
  throw ImportError(path + ": not a ShardScope trace, a torch.profiler trace (JSON with \"traceEvents\") or a CUDA memory snapshot "
                           "(torch.cuda.memory._dump_snapshot pickle)");
}

OpenedRun load_run(const std::string& path, TraceSink& sink) {
  OpenedRun run;
  if (std::filesystem::is_directory(path) || looks_like_trace_file(path)) {
    run.files = run_rank_files(path);
    run.kind = run.files.size() > 1 ? "rank files" : "trace";
    run.read = load_rank_files(run.files, sink);
    return run;
  }
  ImportedRun imported = import_foreign_file(path);
  run.kind = imported.header.source.find("snapshot") != std::string::npos ? "memory snapshot" : "profiler trace";
  run.files = {path};
  run.notes = imported.notes;
  replay_imported(imported, sink);
  run.read.header = std::move(imported.header);
  run.read.event_count = imported.events.size();
  run.read.path = path;
  run.read.format_version = 0;
  return run;
}

bool looks_like_run(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  if (looks_like_trace_file(path)) return true;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) return true;  // gzip
  if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80) return true;  // pickle
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return false;
  if (head[first] == '[') return head.find("\"ph\"") != std::string::npos;
  return head[first] == '{' && head.find("\"traceEvents\"") != std::string::npos;
}

}  // namespace shardscope
