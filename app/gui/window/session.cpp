// Background simulation runs and trace loading for the window.
#include "gui/window/session.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

#include "pipeline/run_pipeline.h"
#include "trace/events/trace_queue.h"
#include "trace/file/trace_file_reader.h"
#include "trace/import/open_run.h"
#include "trace/file/recording_stamp.h"
#include "trace/file/trace_file_writer.h"

namespace shardscope::gui {

namespace {

// A frame's share of moving a run's events into the store: sources are taken a slice at a time until this much time
// has passed, so a run (or followed file) faster than the window fills it over several frames instead of stalling
// one (100,000 events in one frame took 15 ms here, on top of drawing).
constexpr auto kIngestBudget = std::chrono::milliseconds(8);
constexpr std::size_t kQueueSlice = 8192;             // events, about 1 ms
constexpr std::size_t kFollowSlice = std::size_t{64} << 10;  // bytes, about 6,000 events

// Polls a follower (file or stream) a slice at a time until it has nothing more or the deadline passes; returns the
// events it emitted.
template <class Follower>
std::uint64_t poll_until(Follower& follower, TraceSink& sink, std::chrono::steady_clock::time_point deadline) {
  std::uint64_t events = 0;
  for (;;) {
    const std::uint64_t before = follower.received();
    events += follower.poll(sink, kFollowSlice);
    if (follower.received() - before < kFollowSlice || std::chrono::steady_clock::now() >= deadline) return events;
  }
}

}  // namespace

Session::~Session() {
  if (running_.valid()) running_.wait();
  std::error_code ignored;
  if (trace_file_is_recording_) std::filesystem::remove(trace_file_, ignored);
  if (!running_trace_file_.empty() && running_trace_file_ != trace_file_) std::filesystem::remove(running_trace_file_, ignored);
}

void Session::show_running_store() {
  store_ = running_store_;
  ++run_id_;
  std::error_code ignored;
  if (trace_file_is_recording_ && trace_file_ != running_trace_file_) std::filesystem::remove(trace_file_, ignored);
  trace_file_ = running_trace_file_;
  trace_file_is_recording_ = !trace_file_.empty();
}

void Session::run(const Scenario& scenario, RunMode mode) {
  stop_following();
  shown_complete_ = false;
  scenario_ = scenario;
  if (running_.valid()) waiting_ = Request{scenario, mode};
  else start({scenario, mode});
}

namespace {

Session::RunOutput execute_on(exec::BackendKind backend, const Scenario& scenario, TraceSink& store) {
  Session::RunOutput out;
  exec::ExecutionOptions options;
  options.backend = backend;
  const pipeline::ExecutedRun run = pipeline::execute_scenario(scenario, store, options);
  for (const auto& rank : run.predicted.ranks) {
    out.predicted_peaks.push_back(rank.peak_allocated);
    out.peak_tensors.push_back(rank.peak_tensors);
  }
  if (!run.result.ok) out.error = run.result.error;
  return out;
}

}  // namespace

void Session::start(const Request& request) {
  running_store_ = std::make_shared<TraceStore>();
  running_queue_ = std::make_shared<TraceQueue>();
  running_trace_file_ = (std::filesystem::temp_directory_path() /
                         ("shardscope-" + std::to_string(::getpid()) + "-run-" + std::to_string(++recordings_) + ".sstrace"))
                            .string();
  running_ = std::async(std::launch::async, [request, queue = running_queue_, file = running_trace_file_]() -> RunOutput {
    RunOutput out;
    try {
      // The window draws from the queue; the recording lets File → Save trace keep the run (a run goes on without
      // one when the temporary folder cannot be written).
      std::unique_ptr<TraceFileWriter> recording;
      try {
        recording = std::make_unique<TraceFileWriter>(file);
      } catch (const std::exception&) {
      }
      std::vector<TraceSink*> sinks{queue.get()};
      if (recording) sinks.push_back(recording.get());
      TeeTraceSink both(std::move(sinks));
      // A saved run says where and when it ran (no command line: the window's runs come from its controls).
      StampingTraceSink stamped(both, make_recording_stamp(""));
      TraceSink* store = &stamped;
      if (request.mode == RunMode::ExecuteCpu) return execute_on(exec::BackendKind::Cpu, request.scenario, *store);
      if (request.mode == RunMode::ExecuteGpu) return execute_on(exec::BackendKind::Cuda, request.scenario, *store);
      const pipeline::SimulatedRun run = pipeline::simulate_scenario(request.scenario, *store);
      out.result = run.result;
      const MemoryReport accounted = account_memory(run.plan, run.scenario.settings.accounting.mode,
                                                    run.scenario.device.capacity, /*keep_series=*/false);
      for (const auto& rank : accounted.ranks) out.peak_tensors.push_back(rank.peak_tensors);
      if (!out.result->error.empty()) out.error = out.result->error;
    } catch (const std::exception& error) {
      out.error = error.what();
    }
    return out;
  });
  mode_ = request.mode;
}

void Session::poll() {
  const auto deadline = std::chrono::steady_clock::now() + kIngestBudget;
  poll_followed(deadline);
  // The run's events so far move into the store the panels draw (a frame's budget of them); the run never waits for
  // this thread.
  bool drained = true;
  while (running_queue_ && running_queue_->drain_into(*running_store_, kQueueSlice) == kQueueSlice)
    if (std::chrono::steady_clock::now() >= deadline) {
      drained = false;
      break;
    }
  // A run replaces the picture once it has begun emitting (so a long simulation draws while it grows); a run
  // that fails before that leaves the previous picture on screen.
  if (running_store_ && running_store_ != store_ && running_store_->generation() > 0) show_running_store();
  if (!running_.valid() || running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  if (!drained) return;  // a finished run's backlog still moves in a frame's budget at a time
  RunOutput out = running_.get();
  running_queue_->drain_into(*running_store_);  // what arrived since the drain above
  if (running_store_->generation() > 0 && running_store_ != store_) show_running_store();
  std::error_code ignored;
  if (running_store_ != store_) std::filesystem::remove(running_trace_file_, ignored);  // a run that drew nothing
  error_ = out.error;
  warning_.clear();
  result_ = out.result;
  predicted_peaks_ = out.predicted_peaks;
  peak_tensors_ = out.peak_tensors;
  if (waiting_) {
    const Request next = *waiting_;
    waiting_.reset();
    start(next);
  }
}

bool Session::open_trace(const std::string& path) {
  stop_following();
  try {
    auto store = std::make_shared<TraceStore>();
    // A .sstrace (with its sibling rank files), or a profiler trace / memory snapshot converted as it is read.
    const OpenedRun opened = load_run(path, *store);
    const TraceReadResult& trace = opened.read;
    store_ = store;
    ++run_id_;
    std::error_code ignored;
    if (trace_file_is_recording_) std::filesystem::remove(trace_file_, ignored);
    trace_file_ = path;
    trace_file_is_recording_ = false;
    result_.reset();
    predicted_peaks_.clear();
    peak_tensors_.clear();
    error_.clear();
    warning_ = trace.truncated ? "the trace ends early (" + trace.problem + "); showing what was recorded" : "";
    for (const std::string& note : opened.notes) warning_ += (warning_.empty() ? "" : "; ") + note;
    cut_notice_ = describe_cut(trace);
    shown_complete_ = !trace.truncated;
    shown_events_ = trace.event_count;
    return true;
  } catch (const std::exception& error) {
    error_ = error.what();
    return false;
  }
}

void Session::show_store(std::shared_ptr<TraceStore> store) {
  stop_following();
  store_ = std::move(store);
  ++run_id_;
  std::error_code ignored;
  if (trace_file_is_recording_) std::filesystem::remove(trace_file_, ignored);
  trace_file_.clear();
  trace_file_is_recording_ = false;
  result_.reset();
  predicted_peaks_.clear();
  peak_tensors_.clear();
  error_.clear();
  warning_.clear();
  cut_notice_.clear();
  shown_complete_ = true;
  shown_events_ = store_->read([](const TraceData& data) { return data.event_count; });
}

void Session::start_following(const std::string& name) {
  stop_following();
  followed_ = name;
  followed_store_ = std::make_shared<TraceStore>();
  followed_events_ = 0;
  follow_done_ = false;
  follow_outcome_.clear();
  last_growth_ = std::chrono::steady_clock::now();
  shown_complete_ = false;
  error_.clear();
  warning_.clear();
}

void Session::stop_following() {
  file_follower_.reset();
  stream_follower_.reset();
  followed_.clear();
}

void Session::follow_file(const std::string& path) {
  start_following(path);
  file_follower_ = std::make_unique<TraceFileFollower>(path);
}

void Session::connect(const net::Endpoint& server, const std::string& token) {
  start_following(net::endpoint_text(server));
  stream_follower_ = std::make_unique<TraceStreamFollower>(server, token);
}

bool Session::following() const { return follows() && !follow_done_; }

void Session::poll_followed(std::chrono::steady_clock::time_point deadline) {
  if (!following()) return;
  const std::uint64_t before = followed_events_;
  bool header = false, finished = false, corrupt = false;
  std::string problem;
  try {
    if (file_follower_) {
      followed_events_ += poll_until(*file_follower_, *followed_store_, deadline);
      header = file_follower_->has_header();
      finished = file_follower_->finished();
      corrupt = file_follower_->corrupt();
      problem = file_follower_->problem();
    } else {
      followed_events_ += poll_until(*stream_follower_, *followed_store_, deadline);
      header = stream_follower_->has_header();
      finished = stream_follower_->finished();
      corrupt = stream_follower_->corrupt();
      problem = stream_follower_->problem();
      if (stream_follower_->refused()) {
        follow_done_ = true;
        follow_outcome_ = error_ = stream_follower_->status();
        return;
      }
    }
  } catch (const std::exception& error) {  // a header that is not a trace's (TraceFileError)
    follow_done_ = true;
    follow_outcome_ = error_ = error.what();
    return;
  }
  if (followed_events_ != before) last_growth_ = std::chrono::steady_clock::now();
  // The picture switches once the header is in, and then grows in place (same store, new generation).
  if (header && store_ != followed_store_) {
    store_ = followed_store_;
    ++run_id_;
    std::error_code ignored;
    if (trace_file_is_recording_) std::filesystem::remove(trace_file_, ignored);
    trace_file_ = file_follower_ ? followed_ : "";
    trace_file_is_recording_ = false;
    result_.reset();
    predicted_peaks_.clear();
    peak_tensors_.clear();
  }
  if (finished) {
    follow_done_ = true;
    shown_complete_ = true;
    shown_events_ = followed_events_;
  } else if (corrupt) {
    follow_done_ = true;
    follow_outcome_ = warning_ = followed_ + " is damaged: " + problem + "; showing what was recorded";
  }
}

std::string Session::finished_text() const {
  return shown_complete_ ? "the run finished: " + std::to_string(shown_events_) + " events" : "";
}

std::string Session::follow_status() const {
  if (!follows()) return "";
  if (!follow_outcome_.empty()) return follow_outcome_;
  const std::string events = std::to_string(followed_events_) + " events";
  if (follow_done_) return finished_text();
  if (stream_follower_ && !stream_follower_->has_header()) return stream_follower_->status();
  if (file_follower_ && !file_follower_->has_header()) return "waiting for " + followed_ + "…";
  // A file that stops growing without its End record: the recorder was killed, or is stuck.
  const auto quiet = std::chrono::steady_clock::now() - last_growth_;
  if (file_follower_ && quiet > std::chrono::seconds(5))
    return followed_ + " has not grown for " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(quiet).count()) +
           " s and has no end record: the run was cut short, or is paused (" + events + ")";
  if (stream_follower_) return stream_follower_->status() + ": " + events;
  return "following " + followed_ + ": " + events;
}

}  // namespace shardscope::gui
