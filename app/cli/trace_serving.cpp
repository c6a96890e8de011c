// --serve: the address rules, the announcement line and the linger after the run.
#include "cli/trace_serving.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <ostream>

#include "scenario/scenario.h"

namespace shardscope::cli {

namespace {

std::atomic<bool> stop_lingering{false};
extern "C" void on_stop_signal(int) { stop_lingering = true; }

int parse_port(std::string_view text, std::string_view whole) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string_view::npos)
    throw ScenarioError("--serve", "expected PORT or HOST:PORT with a port in 0..65535, got '" + std::string(whole) + "'");
  const int port = std::stoi(std::string(text));
  if (port > 65535) throw ScenarioError("--serve", "the port in '" + std::string(whole) + "' must be in 0..65535 (0 picks a free one)");
  return port;
}

}  // namespace

net::Endpoint parse_serve_address(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return {"127.0.0.1", parse_port(text, text)};
  std::string host(text.substr(0, colon));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) throw ScenarioError("--serve", "expected PORT or HOST:PORT, got '" + std::string(text) + "'");
  return {host, parse_port(text.substr(colon + 1), text)};
}

TraceServing::TraceServing(std::string_view address, const std::string& token, double linger_seconds, std::ostream& log)
    : linger_seconds_(linger_seconds) {
  const net::Endpoint endpoint = parse_serve_address(address);
  TraceStreamSettings settings;
  settings.token = token.empty() ? net::random_token() : token;
  if (const auto problem = net::job_token_problem(settings.token)) throw ScenarioError("--token", *problem);
  try {
    server_ = std::make_unique<TraceStreamServer>(endpoint, settings);
  } catch (const TraceStreamError& error) {
    throw ScenarioError("--serve", error.what());
  }
  log << "serving on " << net::endpoint_text(server_->bound()) << " token " << settings.token << std::endl;
}

TraceServing::~TraceServing() = default;

void TraceServing::linger(std::ostream& log) {
  if (linger_seconds_ <= 0) return;
  log << "run finished; serving it " << linger_seconds_ << " s more for viewers (--serve-linger; Ctrl-C stops)" << std::endl;
  stop_lingering = false;
  auto previous_int = std::signal(SIGINT, on_stop_signal);
  auto previous_term = std::signal(SIGTERM, on_stop_signal);
  server_->linger(std::chrono::milliseconds(static_cast<long long>(linger_seconds_ * 1000)), stop_lingering);
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  log << "served " << server_->viewers_served() << " viewer connection" << (server_->viewers_served() == 1 ? "" : "s") << std::endl;
}

}  // namespace shardscope::cli
