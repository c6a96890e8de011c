// The trace command: info (with step times, run/step_timing.h), export and check of a .sstrace file (see
// trace_command.h).
#include "cli/trace_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <tuple>

#include "cli/trace_outputs.h"
#include "core/units.h"
#include "core/untrusted_text.h"
#include "cli/trace_steps.h"
#include "run/step_timing.h"
#include "scenario/scenario.h"
#include "trace/file/trace_file_reader.h"
#include "trace/import/open_run.h"
#include "trace/store/trace_store.h"

namespace shardscope::cli {

namespace {

// A read trace and the TraceStore it was loaded into (which checks every event's indices against the header).
struct LoadedTrace {
  TraceReadResult file;  // without its events: they went straight into the store
  TraceStore store;
};

void load(const std::string& path, LoadedTrace& trace, std::ostream& err, TraceSink* also = nullptr) {
  if (also != nullptr) {
    TeeTraceSink both({&trace.store, also});
    trace.file = load_trace_file(path, both);
  } else {
    trace.file = load_trace_file(path, trace.store);
  }
  if (trace.file.truncated) err << "warning: " << describe_cut(trace.file) << "\n";
}

std::string format_description(std::uint32_t version) {
  return version >= 2 ? fmt::format("version {} (event blocks)", version) : fmt::format("version {} (one record per event)", version);
}

// A header's texts are the file's, untrusted: shown through printable() (control characters escaped, cut), so a
// crafted trace cannot send escape sequences to the terminal nor a megabyte-long line.
std::string or_dash(const std::string& text, std::size_t max_bytes = kPrintableBytes) {
  return text.empty() ? "—" : printable(text, max_bytes);
}
std::string or_dash(const std::optional<std::string>& text) { return text ? printable(*text) : "—"; }

}  // namespace

void print_trace_info(const std::string& path, bool as_json, std::ostream& out, std::ostream& err) {
  LoadedTrace trace;
  OpIntervalSink intervals;
  load(path, trace, err, &intervals);
  const TraceReadResult& file = trace.file;
  // Step times by the rules run --json uses (run/step_timing.h): a recorded run's or a simulated one's.
  const std::vector<StepTiming> steps = trace_step_timings(trace.store, intervals);
  const auto [ranks, t_min, t_max] = trace.store.read([](const TraceData& d) { return std::tuple(d.ranks.size(), d.t_min, d.t_max); });
  const TimeNs duration = t_max - t_min;
  if (as_json) {
    using nlohmann::json;
    json header = json::parse(file.header_json, nullptr, /*allow_exceptions=*/false);
    json root;
    root["header"] = std::move(header);
    root["ranks"] = ranks;
    root["events"] = file.event_count;
    root["duration_ns"] = duration;
    root["complete"] = !file.truncated;
    root["cut_at_byte"] = file.truncated ? json(file.valid_bytes) : json(nullptr);
    root["reason"] = file.truncated ? json(file.problem) : json(nullptr);
    json step_times = json::array(), load_times = json::array();
    for (const StepTiming& t : steps) {
      step_times.push_back(t.step_ns);
      load_times.push_back(t.load_batch_ns);
    }
    root["step_times_ns"] = step_times;
    root["load_batch_ns"] = load_times;
    root["median_step_ns"] = steps.empty() ? json(nullptr) : json(median_step(steps).step_ns);
    json by_kind = json::object();
    if (!steps.empty())
      for (int k = 0; k < kTimeKindCount; ++k)
        by_kind[time_kind_name(static_cast<TimeKind>(k))] = median_step(steps).by_kind[static_cast<std::size_t>(k)];
    root["median_step_by_kind_ns"] = steps.empty() ? json(nullptr) : by_kind;
    out << root.dump(2) << "\n";
    return;
  }
  const TraceHeader& h = file.header;
  out << fmt::format("trace:        {} ({} bytes)\n", path, file.file_bytes);
  out << fmt::format("format:       {}\n", format_description(file.format_version));
  out << fmt::format("source:       {} ({})\n", printable(h.source), printable(h.tool_version));
  out << fmt::format("scenario:     {}\n", or_dash(trace_scenario_name(h)));
  out << fmt::format("ranks:        {}\n", ranks);
  out << fmt::format("events:       {}\n", file.event_count);
  out << fmt::format("duration:     {}\n", format_duration(duration));
  out << fmt::format("host:         {}\n", or_dash(h.host));
  out << fmt::format("recorded at:  {}\n", or_dash(h.recorded_at));
  out << fmt::format("command line: {}\n", or_dash(h.command_line, 4096));
  if (h.driver_version || h.cuda_runtime_version || h.nccl_version)
    out << fmt::format("versions:     driver (CUDA) {}, CUDA runtime {}, NCCL {}\n", or_dash(h.driver_version),
                       or_dash(h.cuda_runtime_version), or_dash(h.nccl_version));
  else
    out << "versions:     — (no CUDA run)\n";
  for (const TraceDevice& d : h.devices)
    out << fmt::format("device:       rank {}: {}{}\n", d.rank, printable(d.name), d.capacity > 0 ? ", " + format_bytes(d.capacity) : "");
  if (file.truncated)
    out << fmt::format("complete:     no, cut at byte {}: {}\n", file.valid_bytes, file.problem);
  else
    out << "complete:     yes (End record present)\n";
  if (steps.empty()) {
    out << "steps:        — (no training step ran, or this build does not lower the header's scenario to its plan)\n";
  } else {
    const StepTiming& median = median_step(steps);
    std::string kinds;
    for (int k = 0; k < kTimeKindCount; ++k)
      kinds += fmt::format("{}{} {}", k == 0 ? "" : ", ", time_kind_name(static_cast<TimeKind>(k)),
                           format_duration(median.by_kind[static_cast<std::size_t>(k)]));
    out << fmt::format("steps:        {} timed; median step {} (step {}; {}), batch loading apart\n", steps.size(),
                       format_duration(median.step_ns), median.step, kinds);
  }
}

void export_trace(const std::string& path, const std::string& chrome, const std::string& csv, std::ostream& err) {
  if (chrome.empty() && csv.empty()) throw ScenarioError("trace export", "give --chrome OUT, --csv OUT or both");
  // As the window opens it: a recorded run's rank files as one run, a profiler trace or memory snapshot converted.
  TraceStore store;
  const OpenedRun run = load_run(path, store);
  if (run.read.truncated) err << "warning: " << describe_cut(run.read) << "\n";
  for (const std::string& note : run.notes) err << "note: " << note << "\n";
  if (!chrome.empty()) write_chrome_file(store, "--chrome", chrome, err);
  if (!csv.empty()) write_memory_csv_file(store, "--csv", csv, err);
}

int check_trace(const std::string& path, std::ostream& out, std::ostream& err) {
  LoadedTrace trace;
  try {
    load(path, trace, err);
  } catch (const TraceFileError& error) {
    if (!error.damaged()) throw;  // not a trace, unreadable, a newer format: exit 2
    out << "damaged: " << error.what() << "\n";
    return 1;
  }
  const TraceReadResult& file = trace.file;
  if (file.truncated) {
    out << fmt::format("cut short: {} of {} bytes are sound, {} events; {}\n", file.valid_bytes, file.file_bytes,
                       file.event_count, file.problem);
    return 1;
  }
  if (file.valid_bytes < file.file_bytes) {
    out << fmt::format("damaged: {} bytes follow the End record (at byte {})\n", file.file_bytes - file.valid_bytes, file.valid_bytes);
    return 1;
  }
  const auto [ranks, ignored, t_min, t_max] =
      trace.store.read([](const TraceData& d) { return std::tuple(d.ranks.size(), d.ignored_events, d.t_min, d.t_max); });
  if (ignored > 0) {
    out << fmt::format("damaged: {} of {} events name a rank, op or tensor the header lacks, or lie past the trace limits (times, "
                       "byte counts, a begin more than {} spans late)\n",
                       ignored, file.event_count, kMaxLateBeginSpans);
    return 1;
  }
  out << fmt::format("ok: {} events, {} ranks, {}, {} bytes, every record's CRC checked, End record present; format {}\n",
                     file.event_count, ranks, format_duration(t_max - t_min), file.file_bytes, format_description(file.format_version));
  return 0;
}

}  // namespace shardscope::cli
