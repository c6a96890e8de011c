// The import command: convert, write through the trace writer, summarise from a store filled alongside.
#include "cli/import_command.h"

#include <fmt/format.h>

#include <ostream>

#include "core/units.h"
#include "trace/file/trace_file_writer.h"
#include "trace/import/open_run.h"
#include "trace/store/trace_store.h"

namespace shardscope::cli {

void import_file(const std::string& file, const std::string& out_path, const std::string& command_line, std::ostream& out,
                 std::ostream& err) {
  ImportedRun run = import_foreign_file(file);
  run.header.command_line = command_line;
  TraceStore store;
  {
    TraceFileWriter writer(out_path);
    TeeTraceSink tee({&writer, &store});
    replay_imported(run, tee);
  }
  for (const std::string& note : run.notes) err << "note: " << note << "\n";
  out << fmt::format("{} ({}) -> {}: {} events\n", file, run.header.source, out_path, run.events.size());
  store.read([&](const TraceData& data) {
    for (const RankTimeline& rank : data.ranks) {
      const TraceDevice* device = nullptr;
      for (const TraceDevice& d : data.header.devices)
        if (d.rank == rank.rank) device = &d;
      std::size_t spans = 0;
      for (const StreamSpans& s : rank.streams) spans += s.spans.size();
      out << fmt::format("  rank {} ({}): {} spans, {} allocations and frees, peak allocated {}", rank.rank,
                         device ? device->name : "?", spans, rank.memory.size(), format_bytes(rank.peak.allocated));
      if (rank.peak.reserved > 0) out << fmt::format(", peak reserved {}", format_bytes(rank.peak.reserved));
      out << "\n";
    }
  });
}

}  // namespace shardscope::cli
