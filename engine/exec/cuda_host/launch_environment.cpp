// The torchrun and SLURM rules of launch_environment.h.
#include "exec/cuda_host/launch_environment.h"

#include <charconv>
#include <cstdlib>

namespace shardscope::exec {

namespace {

constexpr int kMaxProcesses = 65536;  // --nnodes' own limit

// A variable that must hold a whole number in [min, max]; the message names the variable and its value.
int whole_number(std::string_view name, const std::string& value, int min, int max) {
  int parsed = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end || parsed < min || parsed > max)
    throw LaunchEnvironmentError(std::string(name) + "='" + value + "' is not a whole number from " +
                                 std::to_string(min) + " to " + std::to_string(max));
  return parsed;
}

std::string required(const EnvironmentLookup& env, std::string_view name, std::string_view launcher) {
  if (auto value = env(name)) return *value;
  throw LaunchEnvironmentError(std::string(launcher) + " launch: " + std::string(name) + " is not set");
}

void check_below(std::string_view rank_name, int rank, std::string_view size_name, int size) {
  if (rank >= size)
    throw LaunchEnvironmentError(std::string(rank_name) + "=" + std::to_string(rank) + " is not below " +
                                 std::string(size_name) + "=" + std::to_string(size));
}

std::string master_address(const std::string& host, int port) {
  // An IPv6 address goes in brackets, as parse_endpoint expects.
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// The place's source, process count and this process's rank from a launcher's pair of variables.
LaunchPlace ranked_place(const EnvironmentLookup& env, const char* source, const char* launcher, const char* rank_name,
                         const char* size_name) {
  LaunchPlace place;
  place.source = source;
  place.processes = whole_number(size_name, required(env, size_name, launcher), 1, kMaxProcesses);
  place.process_rank = whole_number(rank_name, required(env, rank_name, launcher), 0, kMaxProcesses);
  check_below(rank_name, place.process_rank, size_name, place.processes);
  return place;
}

LaunchPlace torchrun_place(const EnvironmentLookup& env) {
  LaunchPlace place = ranked_place(env, "torchrun", "torchrun", "RANK", "WORLD_SIZE");
  if (auto local = env("LOCAL_WORLD_SIZE")) place.local_processes = whole_number("LOCAL_WORLD_SIZE", *local, 1, kMaxProcesses);
  if (auto local = env("LOCAL_RANK")) place.local_rank = whole_number("LOCAL_RANK", *local, 0, kMaxProcesses);
  check_below("LOCAL_RANK", place.local_rank, "LOCAL_WORLD_SIZE", place.local_processes);
  const std::string host = env("MASTER_ADDR").value_or("127.0.0.1");
  int port = whole_number("MASTER_PORT", env("MASTER_PORT").value_or(std::to_string(kDefaultMasterPort)), 1, 65535);
  if (env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True") {
    if (port == 65535) throw LaunchEnvironmentError("MASTER_PORT=65535 is held by torchrun's store and has no next port: pass --master HOST:PORT");
    ++port;
    place.port_note = "MASTER_PORT + 1: torchrun's agent holds MASTER_PORT for its own store";
  }
  place.master = master_address(host, port);
  return place;
}

LaunchPlace slurm_place(const EnvironmentLookup& env) {
  LaunchPlace place = ranked_place(env, "slurm", "SLURM", "SLURM_PROCID", "SLURM_NTASKS");
  if (auto local = env("SLURM_LOCALID")) place.local_rank = whole_number("SLURM_LOCALID", *local, 0, kMaxProcesses);
  if (auto per_node = env("SLURM_NTASKS_PER_NODE")) {
    place.local_processes = whole_number("SLURM_NTASKS_PER_NODE", *per_node, 1, kMaxProcesses);
  } else if (auto tasks = env("SLURM_TASKS_PER_NODE")) {
    const int node_id = whole_number("SLURM_NODEID", env("SLURM_NODEID").value_or("0"), 0, kMaxProcesses);
    place.local_processes = slurm_tasks_on_node(*tasks, node_id);
  }
  check_below("SLURM_LOCALID", place.local_rank, "the tasks on this node", place.local_processes);
  const std::string nodelist = required(env, "SLURM_JOB_NODELIST", "SLURM");
  const std::string host = first_slurm_host(nodelist);
  if (host.empty()) throw LaunchEnvironmentError("SLURM_JOB_NODELIST='" + nodelist + "' names no host");
  const auto given_port = env("MASTER_PORT");
  const int port = whole_number("MASTER_PORT", given_port.value_or(std::to_string(kDefaultMasterPort)), 1, 65535);
  if (!given_port) place.port_note = "the default port (MASTER_PORT is not set)";
  place.master = master_address(host, port);
  return place;
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<LaunchPlace> launch_place_from_environment(const EnvironmentLookup& env) {
  if (env("RANK") || env("WORLD_SIZE")) return torchrun_place(env);
  if (env("SLURM_PROCID") && env("SLURM_NTASKS")) return slurm_place(env);
  return std::nullopt;
}

std::string first_slurm_host(std::string_view nodelist) {
  // The first entry ends at the first comma outside brackets; each bracket group stands for its first value.
  std::string host;
  bool in_brackets = false;
  bool first_value_done = false;
  for (char c : nodelist) {
    if (!in_brackets && c == ',') break;
    if (c == '[') {
      in_brackets = true;
      first_value_done = false;
    } else if (c == ']') {
      in_brackets = false;
    } else if (in_brackets) {
      if (c == '-' || c == ',') first_value_done = true;
      if (!first_value_done) host += c;
    } else {
      host += c;
    }
  }
  return host;
}

int slurm_tasks_on_node(std::string_view tasks_per_node, int node_id) {
  // Entries "N" or "N(xK)", comma-separated: N tasks on each of the next K nodes.
  const auto bad = [&] {
    return LaunchEnvironmentError("SLURM_TASKS_PER_NODE='" + std::string(tasks_per_node) + "' is not a list of N or N(xK)");
  };
  int node = 0;
  std::size_t at = 0;
  while (at < tasks_per_node.size()) {
    std::size_t end = tasks_per_node.find(',', at);
    if (end == std::string_view::npos) end = tasks_per_node.size();
    const std::string_view entry = tasks_per_node.substr(at, end - at);
    const std::size_t paren = entry.find("(x");
    int tasks = 0, repeat = 1;
    auto parse = [&](std::string_view text, int& out) {
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
      if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || out < 1) throw bad();
    };
    if (paren == std::string_view::npos) {
      parse(entry, tasks);
    } else {
      if (entry.back() != ')') throw bad();
      parse(entry.substr(0, paren), tasks);
      parse(entry.substr(paren + 2, entry.size() - paren - 3), repeat);
    }
    if (node_id < node + repeat) return tasks;
    node += repeat;
    at = end + 1;
  }
  throw LaunchEnvironmentError("SLURM_TASKS_PER_NODE='" + std::string(tasks_per_node) + "' has no entry for SLURM_NODEID=" +
                               std::to_string(node_id));
}

std::optional<std::string> pinned_visible_devices(const LaunchPlace& place, const std::optional<std::string>& visible) {
  if (place.local_processes <= 1) return std::nullopt;
  if (!visible) return std::to_string(place.local_rank);
  std::vector<std::string> devices;
  std::size_t at = 0;
  while (at <= visible->size()) {
    std::size_t end = visible->find(',', at);
    if (end == std::string::npos) end = visible->size();
    if (end > at) devices.push_back(visible->substr(at, end - at));
    at = end + 1;
  }
  if (devices.size() == 1) return std::nullopt;  // the launcher pinned this process already
  if (static_cast<int>(devices.size()) < place.local_processes)
    throw LaunchEnvironmentError("CUDA_VISIBLE_DEVICES='" + *visible + "' lists " + std::to_string(devices.size()) +
                                 " GPUs for " + std::to_string(place.local_processes) + " " + place.source +
                                 " processes on this machine: one GPU per process");
  return devices[static_cast<std::size_t>(place.local_rank)];
}

}  // namespace shardscope::exec
