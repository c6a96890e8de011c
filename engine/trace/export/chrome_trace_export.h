// Chrome trace event JSON export of a TraceStore, for Perfetto (ui.perfetto.dev) and chrome://tracing.
// Depends on engine/ only.
// Usage:
//   std::ofstream out("run.json");
//   write_chrome_trace(store, out);
// Mapping: a rank is a process (pid = rank, process_name "rank N (device name)"); a stream is a thread
// (tid = Stream index, thread_name "compute" / "communication" / "copy", named only where it has spans).
// Each span is an "X" complete event: ts / dur in microseconds with three decimals (exact nanoseconds),
// name = the op's label (a plan-less trace's: the span's text), cat = its compute kind ("forward") or collective kind
// ("all-reduce") or op kind ("send") (a plan-less trace's: what its text names, trace/store/span_kind.h, else
// "unknown"), args = op index, step, layer, micro_batch, flops and bytes_accessed (compute), payload_bytes,
// group, root, peer (communication), unfinished (a span never ended: drawn up to the end of the trace).
// Each memory sample is a "C" counter event "memory (bytes)" with one arg per category key; measured device
// memory is a "C" counter "device memory used (bytes)". Phase markers and errors are "i" instant events on
// their rank (process scope); the run end and run-wide errors are global instants.
// Thread: takes the store's lock for the whole export (producers wait).
#pragma once
#include <ostream>

#include "trace/store/trace_store.h"

namespace shardscope {

void write_chrome_trace(const TraceStore& store, std::ostream& out);

// "1234.567" for 1234567 ns: microseconds with the nanoseconds kept exactly.
std::string chrome_trace_us(TimeNs ns);

}  // namespace shardscope
