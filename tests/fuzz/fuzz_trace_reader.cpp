// libFuzzer target: a .sstrace file's bytes through the reader (read_trace_bytes: framing, header JSON, event
// decoding). A file that is not a readable trace must give TraceFileError; nothing else may escape, crash, leak or
// trip ASan / UBSan. Seeds: traces written by write_trace_seeds (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "fuzz_trace_input.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  const std::string bytes = fuzz::trace_with_fixed_checksums(data, size);
  try {
    const TraceReadResult r = read_trace_bytes(bytes, "fuzz.sstrace");
    // What readers do next: label events from the header's plan, write the header back out.
    std::size_t labels = 0;
    if (r.header.plan)
      for (const auto& e : r.events)
        if (e.rank >= 0 && static_cast<std::size_t>(e.rank) < r.header.plan->programs.size() && e.op >= 0 &&
            static_cast<std::size_t>(e.op) < r.header.plan->programs[static_cast<std::size_t>(e.rank)].ops.size())
          labels += r.header.plan->programs[static_cast<std::size_t>(e.rank)].ops[static_cast<std::size_t>(e.op)].label.size();
    (void)trace_format::encode_header_json(r.header);
    (void)labels;
  } catch (const TraceFileError&) {
  }
  return 0;
}
