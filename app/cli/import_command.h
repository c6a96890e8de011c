// `shardscope-cli import FILE --out run.sstrace`: converts a torch.profiler Chrome trace (JSON, .json.gz) or a CUDA
// memory snapshot (torch.cuda.memory._dump_snapshot pickle) into a ShardScope trace the window, `compare` and
// `trace info` read (engine/trace/import/). Prints what it wrote (ranks, events, each rank's peak) and, on stderr,
// what the conversion approximated. Errors: ImportError (not a known format, damaged, hostile) -> exit 2.
#pragma once
#include <iosfwd>
#include <string>

namespace shardscope::cli {

void import_file(const std::string& file, const std::string& out_path, const std::string& command_line, std::ostream& out,
                 std::ostream& err);

}  // namespace shardscope::cli
