// libFuzzer target: a .sstrace file's bytes through the reader (read_trace_bytes: framing, header JSON, event
// decoding), and the same bytes through TraceBytesFollower in pieces, as a viewer of `run --serve` receives them
// from the network. A file that is not a readable trace must give TraceFileError; nothing else may escape, crash,
// leak or trip ASan / UBSan; and where the reader finds a complete trace, the follower must finish with the same
// events (it parses the same records, only in pieces). Seeds: traces written by write_trace_seeds (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "fuzz_trace_input.h"
#include "trace/file/trace_file_reader.h"
#include "trace/file/trace_format.h"
#include "trace/events/trace_sink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  const std::string bytes = fuzz::trace_with_fixed_checksums(data, size);
  std::int64_t complete_events = -1;  // the reader's event count when it found the trace complete
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
    if (!r.truncated) complete_events = static_cast<std::int64_t>(r.events.size());
  } catch (const TraceFileError&) {
  }

  // Piece sizes from 1 to 64 bytes, chosen by the input itself so that each input replays the same way.
  VectorTraceSink followed;
  bool follower_finished = false;
  try {
    TraceBytesFollower follower("fuzz stream");
    std::uint32_t state = static_cast<std::uint32_t>(size) * 2654435761u + 1;
    for (std::size_t at = 0; at < bytes.size();) {
      state = state * 1103515245u + 12345u;
      const std::size_t piece = std::min<std::size_t>(1 + (state >> 16) % 64, bytes.size() - at);
      follower.feed(std::string_view(bytes).substr(at, piece), followed);
      at += piece;
    }
    follower_finished = follower.finished();
  } catch (const TraceFileError&) {
    if (complete_events >= 0) __builtin_trap();  // the reader read it whole, the follower refused it
  }
  if (complete_events >= 0 && (!follower_finished || static_cast<std::int64_t>(followed.events().size()) != complete_events))
    __builtin_trap();
  return 0;
}
