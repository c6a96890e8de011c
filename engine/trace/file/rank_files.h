// One recorded run kept as one trace file per rank (python -m shardscope.record under torchrun or mp.spawn writes
// run.rank0.sstrace, run.rank1.sstrace, ... or DIR/rank0.sstrace, ...), read back as one run: ranks side by side on
// a common clock. Each file's header has a "recording" object {rank, world_size, pid, t0_unix_ns}; its events'
// times count from its own t0, so file k's events are shifted by t0_k − min(t0) (without t0 in every file, by 0).
// Each file lists every rank of the world as a device and holds its own rank's events, so the merge is the first
// file's header (devices: the union) and every file's events; the files' RunEnd events become one at the latest
// time ("ok" when every rank's is, else the first other). Depends on engine/trace only.
// Usage:
//   std::vector<std::string> files = run_rank_files("run.rank0.sstrace");   // [run.rank0.sstrace, run.rank1.sstrace]
//   TraceReadResult r = load_rank_files(files, store);
#pragma once
#include <string>
#include <vector>

#include "trace/file/trace_file_reader.h"

namespace shardscope {

// The files of the run `path` belongs to, in rank order: for a directory, its rank<N>.sstrace files (or, if none,
// its <stem>.rank<N>.<ext> files of one stem); for a file named <stem>.rank<N>.<ext>, every <stem>.rank<K>.<ext>
// beside it; else `path` alone. Throws TraceFileError for a directory with no rank files.
std::vector<std::string> run_rank_files(const std::string& path);

// The "recording" object of a trace header JSON (the recorder's): rank, world size and t0; absent fields stay -1.
struct RecordingInfo {
  int rank = -1;
  int world_size = -1;
  std::int64_t t0_unix_ns = -1;
};
RecordingInfo recording_info(const std::string& header_json);

// The header of a trace file, reading only as much of the file as it takes. Throws what read_trace_file throws.
TraceReadResult read_trace_header(const std::string& path);

// Streams the files into `sink` as one run (see above). The result: the first file's header and path, events
// summed, truncated when any file is (problem names it), file bytes summed.
TraceReadResult load_rank_files(const std::vector<std::string>& files, TraceSink& sink);

}  // namespace shardscope
