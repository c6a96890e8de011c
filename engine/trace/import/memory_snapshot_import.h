// Converts a CUDA memory snapshot (torch.cuda.memory._snapshot(), pickled by _dump_snapshot: the file memory_viz
// draws) into a trace: each device is a rank; every alloc and free_requested of its trace ring is an Alloc / Free
// of the allocator block (so allocated_after is memory_allocated as PyTorch counts it: snapshot_blocks.h), every
// segment_alloc / segment_free (segment_map / unmap) a 0-byte Alloc / Free that moves reserved_after
// (memory_reserved), in ring order, at the entry's time_us. One event per such entry and nothing else, apart from
// what was live before the ring's first entry (blocks alive in the final segments that the ring never allocated,
// and frees of allocations the ring never saw), which is one Alloc each at the first entry's time, so a test can
// find entry k's event by counting.
// Categories come from the recorded frames (snapshot_frames.h) and what happens to the block later:
//   temporaries (a cuBLAS workspace), ddp_buckets (a c10d::Reducer frame), communication_buffers (torch.distributed), optimizer_state (made inside an
//   optimizer and still alive when the optimizer's frames leave the stack; freed before: temporaries), gradients
//   (made by backward and alive when backward is over, i.e. at the next entry with Python frames outside
//   backward), parameters (moving or building a module), activations (made inside a module's forward and freed by
//   the autograd engine: what autograd kept for backward), else temporaries.
// The snapshot is untrusted: the pickle is read by the data-only reader (pickle_reader.h); a missing key, a value
// of the wrong type, a negative or oversized address or size, a time past the trace limits throw ImportError
// naming the device and entry.
#pragma once
#include <string>
#include <string_view>

#include "trace/import/imported_run.h"

namespace shardscope {

// `pickle` is the file's bytes (gunzipped); `source` names it in errors and gives the run its name.
ImportedRun import_memory_snapshot(std::string_view pickle, const std::string& source);

}  // namespace shardscope
