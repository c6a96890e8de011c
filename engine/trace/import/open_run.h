// The one way a front end opens a run from a path (shardscope --trace, File → Open, shardscope-cli compare): a
// ShardScope trace (.sstrace) — with its sibling rank files when it is one of a recorded run's per-rank files, or a
// directory of them (trace/file/rank_files.h) — or a foreign file converted on the fly: a torch.profiler Chrome
// trace (JSON, .json.gz) or a CUDA memory snapshot pickle (trace/import/). Depends on engine/trace only.
// Usage:
//   OpenedRun run = load_run(path, store);   // throws TraceFileError / ImportError naming the problem
//   for (const std::string& note : run.notes) warn(note);
#pragma once
#include <string>
#include <vector>

#include "trace/file/trace_file_reader.h"
#include "trace/import/imported_run.h"

namespace shardscope {

struct OpenedRun {
  TraceReadResult read;            // header, event count, truncation (for an import: complete, path = the file)
  std::string kind;                // "trace", "rank files", "profiler trace", "memory snapshot"
  std::vector<std::string> files;  // the files read (several for rank files)
  std::vector<std::string> notes;  // what an import approximated or left out
};

// Loads `path` into `sink` as above. Throws TraceFileError for a damaged or unreadable ShardScope trace, ImportError
// for a foreign file that cannot be converted or is of no known kind.
OpenedRun load_run(const std::string& path, TraceSink& sink);

// Converts a profiler trace or memory snapshot (by content, not name). Throws ImportError, also for a ShardScope
// trace ("already a ShardScope trace") and anything else.
ImportedRun import_foreign_file(const std::string& path);

// Whether load_run would take `path` as a run rather than a scenario: a directory, a trace, or a file whose content
// is a profiler trace or snapshot (reads at most the file's first bytes and, for JSON, looks for "traceEvents").
bool looks_like_run(const std::string& path);

}  // namespace shardscope
