// libFuzzer target: text as a torch.profiler Chrome trace through the importer, then into a TraceStore. A bad file
// must give ImportError; nothing else may escape, crash or trip ASan / UBSan. Seeds: tests/fuzz/profiler_seeds/.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/import/import_input.h"
#include "trace/import/profiler_trace_import.h"
#include "trace/store/trace_store.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  try {
    const ImportedRun run = import_profiler_trace(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    TraceStore store;
    replay_imported(run, store);
  } catch (const ImportError&) {
  }
  return 0;
}
