// import_memory_snapshot: the snapshot's dict (PyTorch 2.x torch/cuda/memory.py _snapshot: "segments",
// "device_traces", "allocator_settings") replayed per device into trace events (see memory_snapshot_import.h).
#include "trace/import/memory_snapshot_import.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "trace/file/recording_stamp.h"
#include "trace/import/import_input.h"
#include "trace/import/pickle_reader.h"
#include "trace/import/snapshot_blocks.h"
#include "trace/import/snapshot_frames.h"

namespace shardscope {

namespace {

enum class Action { Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap, Oom, Other };

Action action_of(std::string_view a) {
  if (a == "alloc") return Action::Alloc;
  if (a == "free_requested") return Action::FreeRequested;
  if (a == "free_completed") return Action::FreeCompleted;
  if (a == "segment_alloc") return Action::SegmentAlloc;
  if (a == "segment_free") return Action::SegmentFree;
  if (a == "segment_map") return Action::SegmentMap;
  if (a == "segment_unmap") return Action::SegmentUnmap;
  if (a == "oom") return Action::Oom;
  return Action::Other;  // "snapshot" and whatever a later PyTorch adds
}

struct Entry {
  Action action = Action::Other;
  std::uint64_t address = 0;
  Bytes size = 0;
  std::optional<std::int64_t> time_us;
  FrameRoles roles;
  std::optional<PickleRef> frames;
};

struct FinalBlock {  // a block of the snapshot's segments as they were when it was taken
  Bytes size = 0;
  bool allocated = false;
  std::optional<PickleRef> frames;
};

struct DeviceData {
  std::vector<Entry> ring;
  std::map<std::uint64_t, FinalBlock> final_blocks;  // by address
  Bytes final_reserved = 0;
  bool has_segments = false;
};

class SnapshotReader {
 public:
  explicit SnapshotReader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ImportError(source_ + ": " + where + ": " + what);
  }

  std::int64_t integer(PickleRef dict, std::string_view key, const std::string& where, std::int64_t low, std::int64_t high) const {
    const auto v = dict.get(key);
    if (!v) fail(where, "has no '" + std::string(key) + "'");
    const auto i = v->as_int();
    if (!i) fail(where, "'" + std::string(key) + "' is a " + std::string(pickle_kind_name(v->kind())) + ", not an int");
    if (*i < low || *i > high) fail(where, "'" + std::string(key) + "' = " + std::to_string(*i) + " is out of range");
    return *i;
  }

  Entry entry(PickleRef e, const std::string& where) const {
    if (!e.is(PickleKind::Dict)) fail(where, "is a " + std::string(pickle_kind_name(e.kind())) + ", not a dict");
    Entry out;
    const auto action = e.get("action");
    if (!action || !action->as_str()) fail(where, "has no 'action' string");
    out.action = action_of(*action->as_str());
    if (out.action == Action::Other || out.action == Action::Oom) return out;
    out.address = static_cast<std::uint64_t>(integer(e, "addr", where, 0, std::numeric_limits<std::int64_t>::max()));
    out.size = integer(e, "size", where, 0, kMaxTraceBytes);
    if (e.get("time_us")) out.time_us = integer(e, "time_us", where, 0, std::int64_t{1} << 62);  // Unix µs
    out.frames = e.get("frames");
    out.roles = frame_roles(out.frames);
    return out;
  }

  std::vector<DeviceData> devices(PickleRef root) const {
    if (root.is(PickleKind::List))
      throw ImportError(source_ + ": a list of segments (torch.cuda.memory_snapshot()) without the allocator's trace ring: record "
                                  "with torch.cuda.memory._record_memory_history() and save with torch.cuda.memory._dump_snapshot()");
    if (!root.is(PickleKind::Dict))
      throw ImportError(source_ + ": not a memory snapshot: the pickle holds a " + std::string(pickle_kind_name(root.kind())) +
                        ", not the dict torch.cuda.memory._dump_snapshot() writes");
    const auto traces = root.get("device_traces");
    if (!traces || !traces->is(PickleKind::List))
      throw ImportError(source_ + ": not a memory snapshot: no 'device_traces' list (torch.cuda.memory._dump_snapshot() writes one)");
    std::vector<DeviceData> out(traces->size());
    if (out.size() > static_cast<std::size_t>(kMaxTraceRanks)) fail("device_traces", "lists more devices than a trace may hold");
    const std::vector<PickleRef> rings = traces->items();
    for (std::size_t d = 0; d < out.size(); ++d) {
      const PickleRef ring = rings[d];
      const std::string where = "device_traces[" + std::to_string(d) + "]";
      if (!ring.is(PickleKind::List)) fail(where, "is not a list");
      std::size_t k = 0;
      for (PickleRef e : ring.items()) out[d].ring.push_back(entry(e, where + "[" + std::to_string(k++) + "]"));
    }
    if (const auto segments = root.get("segments")) {
      if (!segments->is(PickleKind::List)) fail("segments", "is not a list");
      std::size_t k = 0;
      for (PickleRef s : segments->items()) read_segment(s, "segments[" + std::to_string(k++) + "]", out);
    }
    return out;
  }

  std::optional<Bytes> max_split_size(PickleRef root) const {
    const auto settings = root.get("allocator_settings");
    if (!settings) return std::nullopt;
    const auto v = settings->get("max_split_size");
    const auto i = v ? v->as_int() : std::nullopt;
    if (!i || *i <= 0 || *i > kMaxTraceBytes) return std::nullopt;  // -1: unlimited (SIZE_MAX)
    return *i;
  }

 private:
  void read_segment(PickleRef s, const std::string& where, std::vector<DeviceData>& devices) const {
    if (!s.is(PickleKind::Dict)) fail(where, "is not a dict");
    const auto device = static_cast<std::size_t>(integer(s, "device", where, 0, kMaxTraceRanks - 1));
    if (device >= devices.size()) devices.resize(device + 1);
    DeviceData& d = devices[device];
    const auto address = static_cast<std::uint64_t>(integer(s, "address", where, 0, std::numeric_limits<std::int64_t>::max()));
    const Bytes total = integer(s, "total_size", where, 0, kMaxTraceBytes);
    d.has_segments = true;
    d.final_reserved += total;
    if (d.final_reserved > kMaxTraceBytes) fail(where, "segments add up to more than a trace may hold");
    const auto blocks = s.get("blocks");
    if (!blocks) return;
    if (!blocks->is(PickleKind::List)) fail(where, "'blocks' is not a list");
    std::uint64_t next = address;  // older snapshots give blocks no address: they follow each other
    std::size_t k = 0;
    for (PickleRef b : blocks->items()) {
      const std::string bw = where + ".blocks[" + std::to_string(k++) + "]";
      if (!b.is(PickleKind::Dict)) fail(bw, "is not a dict");
      const Bytes size = integer(b, "size", bw, 0, kMaxTraceBytes);
      const std::uint64_t at = b.get("address") ? static_cast<std::uint64_t>(integer(b, "address", bw, 0, std::numeric_limits<std::int64_t>::max())) : next;
      const auto state = b.get("state");
      const std::string_view st = state && state->as_str() ? *state->as_str() : "";
      // "active_allocated": memory_allocated counts it; "active_pending_free" was freed (free_requested) and waits
      // for its stream's events; "inactive" is free.
      d.final_blocks[at] = FinalBlock{size, st == "active_allocated", b.get("frames")};
      next = at + static_cast<std::uint64_t>(size);
    }
  }

  std::string source_;
};

// What the importer knows of one allocation: its block, category, name and trace tensor id.
struct Live {
  Bytes bytes = 0;
  Category category = Category::Temporaries;
  TensorId tensor = -1;
};

// For each entry i, the index of the first later entry with Python frames that is not in `role` (size() if none):
// where a stretch of optimizer or backward work ends, as the main thread's stack shows it.
template <class Pred>
std::vector<std::size_t> next_outside(const std::vector<Entry>& ring, Pred in_role) {
  std::vector<std::size_t> out(ring.size());
  std::size_t next = ring.size();
  for (std::size_t i = ring.size(); i-- > 0;) {
    out[i] = next;
    if (ring[i].roles.has_python && !in_role(ring[i].roles)) next = i;
  }
  return out;
}

// The category of a block allocated with `roles`, freed at ring index `freed` (nullopt: never in the ring).
Category category_of(const FrameRoles& roles, std::optional<std::size_t> freed, std::size_t optimizer_end, std::size_t backward_end,
                     const std::vector<Entry>& ring) {
  if (roles.workspace) return Category::Temporaries;
  if (roles.reducer) return Category::DdpBuckets;
  if (roles.collective) return Category::CommunicationBuffers;
  if (roles.optimizer) return !freed || *freed > optimizer_end ? Category::OptimizerState : Category::Temporaries;
  if (roles.backward) return !freed || *freed > backward_end ? Category::Gradients : Category::Temporaries;
  if (roles.parameters) return Category::Parameters;
  if (roles.forward && freed && ring[*freed].roles.backward) return Category::Activations;
  return Category::Temporaries;
}

std::string segment_text(const Entry& e) {
  const char* what = e.action == Action::SegmentAlloc ? "segment_alloc" : e.action == Action::SegmentFree ? "segment_free"
                     : e.action == Action::SegmentMap ? "segment_map" : "segment_unmap";
  return std::string(what) + " " + format_bytes(e.size);
}

struct DeviceImport {
  std::vector<TraceEvent> events;
  std::size_t approximated = 0;   // allocations whose block size is the rounded request, not the replayed block
  std::size_t before_ring = 0;    // allocations live before the ring's first entry
  std::size_t ooms = 0;
  bool expandable = false;
};

DeviceImport import_device(int rank, const DeviceData& d, std::optional<Bytes> max_split, std::int64_t base_us, const std::string& source) {
  DeviceImport out;
  const std::vector<Entry>& ring = d.ring;
  const auto optimizer_end = next_outside(ring, [](const FrameRoles& r) { return r.optimizer; });
  const auto backward_end = next_outside(ring, [](const FrameRoles& r) { return r.backward; });

  // Where each alloc is freed, which allocations predate the ring, and the reserved bytes before its first entry.
  std::vector<std::optional<std::size_t>> freed_at(ring.size());
  std::unordered_map<std::uint64_t, std::size_t> open;  // address -> alloc index
  std::vector<std::size_t> freed_unseen;                // free_requested of an allocation the ring never saw
  Bytes reserved_change = 0;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const Entry& e = ring[i];
    switch (e.action) {
      case Action::Alloc: open[e.address] = i; break;
      case Action::FreeRequested:
        if (auto it = open.find(e.address); it != open.end()) {
          freed_at[it->second] = i;
          open.erase(it);
        } else {
          freed_unseen.push_back(i);
        }
        break;
      case Action::SegmentAlloc:
      case Action::SegmentMap: reserved_change += e.size; break;
      case Action::SegmentFree:
      case Action::SegmentUnmap: reserved_change -= e.size; break;
      default: break;
    }
    if (e.action == Action::SegmentMap || e.action == Action::SegmentUnmap) out.expandable = true;
  }
  // memory_reserved at the end is the final segments' total: before the ring it was that minus what the ring did.
  Bytes reserved = std::clamp<Bytes>(d.final_reserved - reserved_change, 0, kMaxTraceBytes);

  std::int64_t last_us = base_us;
  auto time_of = [&](const Entry& e) {
    if (e.time_us) last_us = std::max(last_us, *e.time_us);
    const std::int64_t ns_per_us = 1000;
    if (last_us - base_us > kMaxTraceTimeNs / ns_per_us)
      throw ImportError(source + ": device_traces[" + std::to_string(rank) + "]: time_us lies too far from the first entry's");
    return (last_us - base_us) * ns_per_us;
  };

  Bytes allocated = 0;
  auto push = [&](TraceEventKind kind, TimeNs t, Bytes bytes, Category category, TensorId tensor, std::string text) {
    allocated += kind == TraceEventKind::Alloc ? bytes : -bytes;
    if (allocated > kMaxTraceBytes || allocated < -kMaxTraceBytes || reserved > kMaxTraceBytes)
      throw ImportError(source + ": device " + std::to_string(rank) + ": allocations add up to more than a trace may hold");
    TraceEvent ev;
    ev.kind = kind;
    ev.rank = rank;
    ev.t_ns = t;
    ev.bytes = bytes;
    ev.category = category;
    ev.tensor = tensor;
    ev.allocated_after = allocated;
    ev.reserved_after = reserved;
    ev.text = std::move(text);
    out.events.push_back(std::move(ev));
  };

  // What was live before the first entry: blocks alive at the end that the ring never allocated (their size and
  // frames are in the final segments) and allocations the ring frees without having made them.
  std::unordered_map<std::uint64_t, Live> live;
  TensorId next_tensor = static_cast<TensorId>(ring.size());
  const TimeNs t0 = ring.empty() ? 0 : time_of(ring.front());
  std::unordered_map<std::uint64_t, bool> allocated_in_ring;
  for (const auto& [address, i] : open) allocated_in_ring[address] = true;
  for (const auto& [address, block] : d.final_blocks) {
    if (!block.allocated || allocated_in_ring.count(address)) continue;
    const FrameRoles roles = frame_roles(block.frames);
    const Category category = category_of(roles, std::nullopt, ring.size(), ring.size(), ring);
    live[address] = Live{block.size, category, next_tensor};
    push(TraceEventKind::Alloc, t0, block.size, category, next_tensor++, frame_summary(block.frames) + " (before the trace began)");
    ++out.before_ring;
  }
  for (std::size_t i : freed_unseen) {
    const Entry& e = ring[i];
    if (live.count(e.address)) continue;
    const Bytes bytes = SnapshotBlocks::round_size(e.size);
    live[e.address] = Live{bytes, Category::Temporaries, next_tensor};
    push(TraceEventKind::Alloc, t0, bytes, Category::Temporaries, next_tensor++, "allocated before the trace began");
    ++out.before_ring;
    ++out.approximated;
  }

  SnapshotBlocks blocks(max_split.value_or(0));
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const Entry& e = ring[i];
    switch (e.action) {
      case Action::SegmentAlloc:
      case Action::SegmentMap:
        if (e.action == Action::SegmentAlloc) blocks.segment_alloc(e.address, e.size);
        reserved += e.size;
        push(TraceEventKind::Alloc, time_of(e), 0, Category::Temporaries, -1, segment_text(e));
        break;
      case Action::SegmentFree:
      case Action::SegmentUnmap:
        if (e.action == Action::SegmentFree) blocks.segment_free(e.address);
        reserved = std::max<Bytes>(0, reserved - e.size);
        push(TraceEventKind::Free, time_of(e), 0, Category::Temporaries, -1, segment_text(e));
        break;
      case Action::Alloc: {
        std::optional<Bytes> size = blocks.alloc(e.address, e.size);
        if (!size) {
          // Not in a segment the ring made: the final segments know the block if it is still there, else the
          // rounded request is the best guess (a large block that was not split counts more).
          const auto final_block = d.final_blocks.find(e.address);
          if (!freed_at[i] && final_block != d.final_blocks.end() && final_block->second.allocated) {
            size = final_block->second.size;
          } else {
            size = SnapshotBlocks::round_size(e.size);
            ++out.approximated;
          }
        }
        const Category category = category_of(e.roles, freed_at[i], optimizer_end[i], backward_end[i], ring);
        live[e.address] = Live{*size, category, static_cast<TensorId>(i)};
        push(TraceEventKind::Alloc, time_of(e), *size, category, static_cast<TensorId>(i), frame_summary(e.frames));
        break;
      }
      case Action::FreeRequested: {
        const auto it = live.find(e.address);
        if (it == live.end()) break;  // a second free of one block: a damaged ring; nothing is live there
        push(TraceEventKind::Free, time_of(e), it->second.bytes, it->second.category, it->second.tensor, frame_summary(e.frames));
        live.erase(it);
        break;
      }
      case Action::FreeCompleted: blocks.release(e.address); break;
      case Action::Oom: ++out.ooms; break;
      case Action::Other: break;
    }
  }
  return out;
}

std::string file_stem(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

ImportedRun import_memory_snapshot(std::string_view pickle, const std::string& source) {
  PickleDocument doc;
  try {
    doc = parse_pickle(pickle, source);
  } catch (const PickleError& error) {
    throw ImportError(error.what());
  }
  const SnapshotReader reader(source);
  const std::vector<DeviceData> devices = reader.devices(doc.root());
  const std::optional<Bytes> max_split = reader.max_split_size(doc.root());

  // Devices up to the last that holds anything; times from the earliest entry of any device, so devices line up.
  std::size_t used = 0;
  std::optional<std::int64_t> base_us;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (!devices[d].ring.empty() || devices[d].has_segments) used = d + 1;
    for (const Entry& e : devices[d].ring)
      if (e.time_us) base_us = base_us ? std::min(*base_us, *e.time_us) : *e.time_us;
  }
  std::size_t entries = 0;
  for (const DeviceData& d : devices) entries += d.ring.size();
  if (entries == 0)
    throw ImportError(source + ": the snapshot's trace ring is empty: call torch.cuda.memory._record_memory_history() before the "
                               "steps to record, then torch.cuda.memory._dump_snapshot()");

  ImportedRun run;
  TraceHeader& h = run.header;
  h.format_version = 2;
  h.source = "pytorch memory snapshot";
  h.accounting_rules = "PyTorch caching allocator (memory snapshot)";
  h.scenario_json = nlohmann::json{{"name", file_stem(source)}}.dump();
  if (base_us) h.recorded_at = utc_iso8601(std::chrono::system_clock::time_point(std::chrono::microseconds(*base_us)));
  std::size_t approximated = 0, before = 0, ooms = 0;
  bool expandable = false;
  TimeNs t_end = 0;
  for (std::size_t d = 0; d < used; ++d) {
    h.devices.push_back(TraceDevice{static_cast<int>(d), "CUDA device " + std::to_string(d), 0, static_cast<int>(d)});
    DeviceImport device = import_device(static_cast<int>(d), devices[d], max_split, base_us.value_or(0), source);
    approximated += device.approximated;
    before += device.before_ring;
    ooms += device.ooms;
    expandable = expandable || device.expandable;
    if (!device.events.empty()) t_end = std::max(t_end, device.events.back().t_ns);
    run.events.insert(run.events.end(), std::make_move_iterator(device.events.begin()), std::make_move_iterator(device.events.end()));
  }
  TraceEvent end;
  end.kind = TraceEventKind::RunEnd;
  end.rank = -1;
  end.t_ns = t_end;
  end.text = "ok";
  run.events.push_back(end);

  if (before > 0)
    run.notes.push_back(std::to_string(before) + " allocations were live before the trace ring's first entry (recording started late, "
                        "or the ring was full and dropped its oldest entries): they start at the first entry's time");
  if (approximated > 0)
    run.notes.push_back(std::to_string(approximated) + " allocations lie in segments the ring did not see created: their block size is "
                        "the request rounded to 512 B, which undercounts a large block the allocator did not split");
  if (expandable) run.notes.push_back("expandable segments (segment_map / segment_unmap): reserved follows them, block sizes are approximate");
  if (ooms > 0) run.notes.push_back(std::to_string(ooms) + " out-of-memory entries in the trace ring");
  return run;
}

}  // namespace shardscope
