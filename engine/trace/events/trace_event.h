// Trace events: what a simulated, executed or replayed run reports, one record per event, and the header
// that makes a trace self-describing. Shared by sim/, engine/exec/ and the GUI; knows nothing of either.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/category.h"
#include "core/units.h"
#include "plan/plan.h"

namespace shardscope {

enum class TraceEventKind : std::uint8_t {
  OpBegin,       // an op of the rank's program starts on its stream
  OpEnd,         // ... and ends
  Alloc,         // a tensor is allocated (op = the plan's Alloc op)
  Free,          // ... freed
  Phase,         // a phase marker of the plan is passed (text = phase name)
  DeviceMemory,  // measured device-level use (executor: cudaMemGetInfo); bytes = used, reserved = total
  Error,         // a rank failed (text = message); the run ends after it
  RunEnd,        // the run is over (rank = -1, text = "ok" or why it stopped)
};

std::string trace_event_kind_name(TraceEventKind kind);

struct TraceEvent {
  TraceEventKind kind = TraceEventKind::OpBegin;
  int rank = 0;            // -1 for run-wide events
  TimeNs t_ns = 0;         // since the start of the run
  int step = 0;            // training step (0 = set-up); replayed steps keep the plan's op indices
  OpIndex op = -1;         // index into the rank's Program::ops; -1 when the event is not an op of the plan
  Stream stream = Stream::Compute;
  // Alloc / Free: the bytes as accounted (tensor bytes under exact rules, the allocator block under PyTorch rules)
  // and the rank's allocated / reserved totals after this event, so a reader needs no allocator model.
  Category category = Category::Temporaries;
  Bytes bytes = 0;
  Bytes allocated_after = 0;
  Bytes reserved_after = 0;
  TensorId tensor = -1;
  std::string text;
};

// What a trace may hold. A trace file is untrusted input: the reader refuses an event whose time or byte fields lie
// past these (a run cannot produce them, and sums and differences of them must not overflow), a header with more
// ranks; TraceStore ignores events past them (see trace_store.h).
inline constexpr TimeNs kMaxTraceTimeNs = TimeNs{1} << 60;  // |t_ns| (36.5 years)
inline constexpr Bytes kMaxTraceBytes = Bytes{1} << 56;     // |bytes|, |allocated_after|, |reserved_after| (64 PiB)
inline constexpr int kMaxTraceRanks = 65536;                // ranks (programs, devices): cluster.world's maximum

struct TraceDevice {
  int rank = 0;
  std::string name;       // "A100-80GB" or the detected GPU's name
  Bytes capacity = 0;
  int physical_device = -1;  // GPU index for executed runs; -1 simulated
};

struct TraceHeader {
  int format_version = 1;
  std::string tool_version;
  std::string source;             // "simulator", "executor cpu", "executor cuda"
  std::string scenario_json;      // the resolved scenario, as a scenario file would hold it
  std::string accounting_rules;   // accounting_rules_label(mode)
  std::shared_ptr<const Plan> plan;  // op labels, kinds, layers, tensors: events refer to it by index
                                     // (a trace file keeps every field but op deps; may be null)
  std::vector<TraceDevice> devices;
  // Where, when and how the run was recorded, so a trace handed on explains itself (optional in the file: a trace
  // written before these existed reads with them empty / absent).
  std::string host;          // host name of the machine that ran it
  std::string recorded_at;   // recording start, UTC ISO-8601 ("2026-11-25T20:10:59Z")
  std::string command_line;  // argv, each word shell-quoted where needed, joined by spaces
  // Set by the cuda backend (absent for the simulator and the cpu backend): the CUDA version the driver supports
  // (cudaDriverGetVersion), the CUDA runtime's (cudaRuntimeGetVersion) and NCCL's (ncclGetVersion), "13.0", "2.28.9".
  std::optional<std::string> driver_version, cuda_runtime_version, nccl_version;
};

// The "name" of the header's scenario JSON; empty when it has none (or the JSON is not an object).
std::string trace_scenario_name(const TraceHeader& header);

}  // namespace shardscope
