// libFuzzer target: bytes as a CUDA memory snapshot (a pickle) through the data-only pickle reader and the snapshot
// importer, then into a TraceStore as the window would show it. A hostile or broken pickle must give PickleError
// (from parse_pickle) or ImportError (from import_memory_snapshot); nothing else may escape, crash, trip ASan /
// UBSan, hang on a pickle that nests a list inside itself, or allocate more than the input justifies (the reader's
// nodes and edges are bounded by the opcodes it runs). Seeds: tests/fuzz/snapshot_seeds/ (small snapshots made by
// PyTorch's pickle.dump, hand-made hostile ones).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace/import/import_input.h"
#include "trace/import/memory_snapshot_import.h"
#include "trace/import/pickle_reader.h"
#include "trace/store/trace_store.h"

namespace {

// Values reachable from the root, at most kMaxPickleDepth deep (a cycle stops there) and at most `budget` visits (a
// value shared by many parents, as GET makes them, would otherwise be visited exponentially often).
std::size_t walk(shardscope::PickleRef v, int depth, std::size_t& budget) {
  if (depth > shardscope::kMaxPickleDepth || budget == 0) return 0;
  --budget;
  std::size_t n = 1;
  (void)v.as_int();
  (void)v.as_number();
  (void)v.as_str();
  for (shardscope::PickleRef item : v.items()) n += walk(item, depth + 1, budget);
  for (const auto& [key, value] : v.pairs()) n += walk(key, depth + 1, budget) + walk(value, depth + 1, budget);
  (void)v.get("device_traces");
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const PickleDocument doc = parse_pickle(bytes, "fuzz.pickle");
    if (doc.node_count() > size + 1) __builtin_trap();  // at most one node per opcode byte
    std::size_t budget = 100000;
    walk(doc.root(), 0, budget);
  } catch (const PickleError&) {
  }
  try {
    const ImportedRun run = import_memory_snapshot(bytes, "fuzz.pickle");
    TraceStore store;
    replay_imported(run, store);
    store.read([](const TraceData& d) {
      for (const RankTimeline& r : d.ranks)
        if (r.peak.allocated < 0 || static_cast<std::size_t>(r.rank) >= d.ranks.size()) __builtin_trap();
    });
  } catch (const ImportError&) {
  }
  return 0;
}
