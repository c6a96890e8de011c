// CSV export of the memory series of a TraceStore. Depends on engine/ only.
// Usage:
//   std::ofstream out("memory.csv");
//   write_memory_csv(store, out);
// Columns (header row first, then one row per memory change, i.e. per Alloc / Free event, of every rank,
// ordered by t_ns, then rank, then arrival):
//   t_ns             nanoseconds since the start of the run
//   rank             global rank
//   allocated_bytes  the rank's allocated bytes after the change (as accounted by the trace's rules)
//   reserved_bytes   the rank's reserved bytes after the change (equal to allocated under exact rules)
//   parameters, gradients, ddp_buckets, optimizer_state, activations, temporaries, communication_buffers,
//   gathered_parameters
//                    allocated bytes per category after the change (keys of core/category.h, in that order)
// Thread: takes the store's lock for the whole export.
#pragma once
#include <ostream>

#include "trace/store/trace_store.h"

namespace shardscope {

void write_memory_csv(const TraceStore& store, std::ostream& out);

}  // namespace shardscope
