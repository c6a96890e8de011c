// What the window shows: the current scenario, simulated in the background into a TraceStore, or a trace file.
// Re-running never blocks the frame loop: a run in flight finishes while the next waits, and the newest
// request wins. The panels only read the TraceStore.
// Thread contract: every member function is called from the GUI thread; the worker only writes the store of the
// run it was given and the run's status (under a mutex).
#pragma once
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gui/logic/run_mode.h"
#include "run/simulation_result.h"
#include "memory/accounting.h"
#include "scenario/scenario.h"
#include "net/endpoint.h"
#include "trace/file/trace_file_reader.h"
#include "trace/events/trace_queue.h"
#include "trace/store/trace_store.h"
#include "trace/stream/trace_stream_follower.h"

namespace shardscope::gui {

class Session {
 public:
  ~Session();

  // Runs `scenario` in `mode` (after any run in flight). Errors (a bad field, an impossible plan, a plan the CPU
  // backend cannot execute, a failed run) are kept in error() and the previous picture stays on screen.
  void run(const Scenario& scenario, RunMode mode);
  void simulate(const Scenario& scenario) { run(scenario, RunMode::Simulate); }
  // Opens a recorded or simulated trace; returns false and sets error() when the file cannot be read.
  bool open_trace(const std::string& path);
  // Shows a store filled elsewhere, as open_trace shows a file's (benchmarks draw traces too large to write and read
  // back); there is no file to save.
  void show_store(std::shared_ptr<TraceStore> store);
  // Follows a trace while it is written: a file another process appends to (`shardscope-cli run --out FILE`), or a
  // run served over TCP (`--serve`, with its token). Each poll() moves the records that arrived into the store the
  // panels draw; the store replaces the picture once the header is in. A file not there yet is waited for.
  void follow_file(const std::string& path);
  void connect(const net::Endpoint& server, const std::string& token);
  // True while a followed trace has not finished (no End record yet, not refused, not damaged).
  bool following() const;
  bool follows() const { return file_follower_ || stream_follower_; }  // a followed source, finished or not
  const std::string& followed() const { return followed_; }  // its path or HOST:PORT
  // One line on the followed source: "waiting for FILE…", "following FILE: 1234 events", "the run finished", ...
  std::string follow_status() const;
  // "the run finished: N events" while a whole trace is on screen (opened complete, or followed to its End); "" else.
  std::string finished_text() const;
  // Once a frame: starts a waiting run when the previous one is done, collects finished results, polls a followed trace.
  // Events are moved into the store for at most about 8 ms a call: a source faster than that catches up over frames.
  void poll();

  std::shared_ptr<const TraceStore> store() const { return store_; }
  const Scenario& scenario() const { return scenario_; }
  bool busy() const { return running_.valid(); }
  // Trace events the run in flight has produced so far (progress for long simulations); 0 when idle.
  std::uint64_t progress_events() const { return running_queue_ && busy() ? running_queue_->produced() : 0; }
  const std::string& error() const { return error_; }
  const std::string& warning() const { return warning_; }  // e.g. a truncated trace file
  // After open_trace of a file cut short: "trace file 'x' is cut short at byte N of M: ...; showing the K events
  // before it" (describe_cut), for stderr; "" otherwise.
  const std::string& cut_notice() const { return cut_notice_; }
  const std::optional<SimulationResult>& result() const { return result_; }
  // Executed runs: per rank, the peak the accounting predicts for the plan (exact on the CPU, pytorch-2 on GPUs;
  // empty for simulations).
  const std::vector<Bytes>& predicted_peaks() const { return predicted_peaks_; }
  // Per rank, the largest tensors live at its peak, from the plan's accounting (what sets the peak); empty for traces.
  const std::vector<std::vector<LiveTensor>>& peak_tensors() const { return peak_tensors_; }
  RunMode mode() const { return mode_; }
  // The .sstrace of what store() shows: a recording the session made of its last run (complete once !busy()), or
  // the file opened; "" when there is none. File → Save trace copies it.
  const std::string& trace_file() const { return trace_file_; }
  std::uint64_t run_id() const { return run_id_; }  // changes whenever store() is replaced

  // What a background run hands back to the GUI thread.
  struct RunOutput {
    std::optional<SimulationResult> result;
    std::vector<Bytes> predicted_peaks;
    std::vector<std::vector<LiveTensor>> peak_tensors;
    std::string error;
  };

 private:
  struct Request {
    Scenario scenario;
    RunMode mode;
  };
  void start(const Request& request);

  Scenario scenario_ = builtin_default_scenario();
  std::optional<Request> waiting_;
  RunMode mode_ = RunMode::Simulate;
  std::vector<Bytes> predicted_peaks_;
  std::vector<std::vector<LiveTensor>> peak_tensors_;
  std::future<RunOutput> running_;
  std::shared_ptr<TraceQueue> running_queue_;  // the run in flight writes here, from its own threads
  std::shared_ptr<TraceStore> running_store_;  // poll() drains the queue into it on this thread
  std::shared_ptr<TraceStore> store_ = std::make_shared<TraceStore>();
  std::optional<SimulationResult> result_;
  std::string error_, warning_, cut_notice_;
  std::uint64_t run_id_ = 0;
  // Recordings: each run also writes its trace to a temporary file, removed when a newer run replaces it.
  std::string running_trace_file_, trace_file_;
  bool trace_file_is_recording_ = false;
  std::uint64_t recordings_ = 0;
  void show_running_store();  // the run in flight's store (and recording) becomes what the panels draw

  // A followed trace (follow_file / connect): one of the two followers, the store it fills, what it has said.
  void start_following(const std::string& name);
  void stop_following();
  void poll_followed(std::chrono::steady_clock::time_point deadline);
  std::unique_ptr<TraceFileFollower> file_follower_;
  std::unique_ptr<TraceStreamFollower> stream_follower_;
  std::shared_ptr<TraceStore> followed_store_;
  std::string followed_;
  std::uint64_t followed_events_ = 0;
  bool follow_done_ = false;     // End read, refused, damaged or unreadable: nothing more will come
  std::string follow_outcome_;   // why follow_done_ when not a clean End ("" for a finished run)
  std::chrono::steady_clock::time_point last_growth_;
  bool shown_complete_ = false;     // the store holds a whole trace, End record included
  std::uint64_t shown_events_ = 0;  // its events
};

}  // namespace shardscope::gui
