// Trace file, Chrome trace and CSV outputs of a run.
#include "cli/trace_outputs.h"

#include <fstream>
#include <ostream>

#include "scenario/scenario.h"
#include "trace/export/chrome_trace_export.h"
#include "trace/export/memory_csv_export.h"
#include "trace/file/recording_stamp.h"
#include "trace/file/trace_file_writer.h"

namespace shardscope::cli {

namespace {

template <typename Write>
void write_file(const std::string& flag, const std::string& path, Write&& write, std::ostream& log) {
  std::ofstream out(path);
  if (!out) throw ScenarioError(flag, "cannot open '" + path + "' for writing");
  write(out);
  out.close();
  if (!out) throw ScenarioError(flag, "could not write '" + path + "' (disk full?)");
  log << "wrote " << path << "\n";
}

}  // namespace

TraceOutputs::TraceOutputs(TraceOutputPaths paths, std::string command_line, TraceSink* stream) : paths_(std::move(paths)) {
  std::vector<TraceSink*> sinks;
  if (stream) sinks.push_back(stream);
  if (!paths_.trace.empty()) {
    try {
      owned_.push_back(std::make_unique<TraceFileWriter>(paths_.trace));
    } catch (const std::exception& error) {
      throw ScenarioError("--out", error.what());
    }
    sinks.push_back(owned_.back().get());
  }
  if (!paths_.chrome.empty() || !paths_.csv.empty()) {
    store_ = std::make_unique<TraceStore>();
    sinks.push_back(store_.get());
  }
  if (sinks.empty()) sink_ = std::make_unique<DiscardTraceSink>();
  else sink_ = std::make_unique<TeeTraceSink>(sinks);
  stamped_ = std::make_unique<StampingTraceSink>(*sink_, make_recording_stamp(std::move(command_line)));
}

TraceOutputs::~TraceOutputs() = default;

void TraceOutputs::finish(std::ostream& log) {
  if (!paths_.trace.empty()) log << "wrote " << paths_.trace << "\n";
  if (!paths_.chrome.empty()) write_chrome_file(*store_, "--chrome", paths_.chrome, log);
  if (!paths_.csv.empty()) write_memory_csv_file(*store_, "--csv", paths_.csv, log);
}

void write_chrome_file(const TraceStore& store, const std::string& flag, const std::string& path, std::ostream& log) {
  write_file(flag, path, [&](std::ostream& out) { write_chrome_trace(store, out); }, log);
}

void write_memory_csv_file(const TraceStore& store, const std::string& flag, const std::string& path, std::ostream& log) {
  write_file(flag, path, [&](std::ostream& out) { write_memory_csv(store, out); }, log);
}

}  // namespace shardscope::cli
