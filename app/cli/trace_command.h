// `shardscope-cli trace info | export | check FILE`: what a recorded trace holds (header, ranks, events, duration,
// whether it is complete), its Chrome-trace and memory-CSV exports, and whether every record of it is sound.
// Every command that finds the file cut short says so on stderr ("warning: trace file ... is cut short at byte N
// of M: ...") and goes on with the events before the cut.
// Errors: a file that cannot be opened or is not a trace throws TraceFileError (exit 2); check_trace returns 1 for
// a damaged or cut-short trace instead.
#pragma once
#include <iosfwd>
#include <string>

namespace shardscope::cli {

// trace info: `header` (the header object as the file holds it), `ranks`, `events`, `duration_ns` (first event to
// last), `complete`, `cut_at_byte` (null when complete, else where the readable part ends), `reason` (null when
// complete, else why it ends there). Text: a readable summary of the same.
void print_trace_info(const std::string& path, bool as_json, std::ostream& out, std::ostream& err);

// trace export: the Chrome trace (--chrome) and / or memory CSV (--csv) of the run as the window opens it (a recorded
// run's rank files together, a profiler trace or memory snapshot converted: trace/import/open_run.h). Throws
// ScenarioError naming the flag when neither is given or an output cannot be written.
void export_trace(const std::string& path, const std::string& chrome, const std::string& csv, std::ostream& err);

// trace check: framing, every record's CRC, the header, every event's rank, op and tensor against the header (as
// TraceStore checks them), the End record and nothing after it. Prints "ok: ..." with the counts and returns 0, or
// prints the problem and returns 1 (damaged or cut short).
int check_trace(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace shardscope::cli
