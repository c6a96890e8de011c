// Background simulation runs and trace loading for the window.
#include "gui/session.h"

#include <chrono>

#include "sim/simulator.h"
#include "strategy/lower.h"
#include "trace/trace_file_reader.h"

namespace shardscope::gui {

Session::~Session() {
  if (running_.valid()) running_.wait();
}

void Session::simulate(const Scenario& scenario) {
  scenario_ = scenario;
  if (running_.valid()) waiting_ = scenario;
  else start(scenario);
}

void Session::start(const Scenario& scenario) {
  running_store_ = std::make_shared<TraceStore>();
  running_ = std::async(std::launch::async, [scenario, store = running_store_]() -> RunOutput {
    RunOutput out;
    try {
      const ResolvedScenario resolved = resolve_scenario(scenario);
      const Plan plan = lower_validated_plan(resolved);
      out.result = shardscope::simulate(resolved, plan, *store);
      if (!out.result->error.empty()) out.error = out.result->error;
    } catch (const std::exception& error) {
      out.error = error.what();
    }
    return out;
  });
}

void Session::poll() {
  // A run replaces the picture once it has begun emitting (so a long simulation draws while it grows); a run
  // that fails before that leaves the previous picture on screen.
  if (running_store_ && running_store_ != store_ && running_store_->generation() > 0) {
    store_ = running_store_;
    ++run_id_;
  }
  if (!running_.valid() || running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  RunOutput out = running_.get();
  if (running_store_->generation() > 0 && running_store_ != store_) {
    store_ = running_store_;
    ++run_id_;
  }
  error_ = out.error;
  warning_.clear();
  if (out.result) result_ = out.result;
  if (waiting_) {
    Scenario next = *waiting_;
    waiting_.reset();
    start(next);
  }
}

bool Session::open_trace(const std::string& path) {
  try {
    const TraceReadResult trace = read_trace_file(path);
    auto store = std::make_shared<TraceStore>();
    replay_trace(trace, *store);
    store_ = store;
    ++run_id_;
    result_.reset();
    error_.clear();
    warning_ = trace.truncated ? "the trace ends early (" + trace.problem + "); showing what was recorded" : "";
    return true;
  } catch (const std::exception& error) {
    error_ = error.what();
    return false;
  }
}

}  // namespace shardscope::gui
