// resolve_launch (flags, then torchrun, then SLURM) and the launch-check command.
#include "cli/launch_command.h"

#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>
#include <string>

#include "exec/cuda_host/tcp_rendezvous.h"
#include "scenario/scenario.h"

namespace shardscope::cli {

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

std::string visible_devices() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  return value == nullptr ? "(unset: every GPU)" : value;
}

}  // namespace

std::optional<exec::LaunchPlace> resolve_launch(exec::MultiNodeOptions& multinode, bool flags_given) {
  std::optional<exec::LaunchPlace> place;
  if (!flags_given) {
    try {
      const exec::EnvironmentLookup env = exec::process_environment();
      place = exec::launch_place_from_environment(env);
      if (place) {
        multinode.nnodes = place->processes;
        multinode.node_rank = place->process_rank;
        multinode.master = place->master;
        if (const auto pinned = exec::pinned_visible_devices(*place, env("CUDA_VISIBLE_DEVICES")))
          ::setenv("CUDA_VISIBLE_DEVICES", pinned->c_str(), 1);  // read by CUDA when it starts, later than here
      }
    } catch (const exec::LaunchEnvironmentError& error) {
      throw ScenarioError("launch environment", error.what());
    }
  }
  if (multinode.nnodes > 1 && multinode.master.empty()) throw ScenarioError("--master", "--nnodes > 1 needs --master HOST:PORT");
  if (const auto problem = exec::job_token_problem(multinode.token); problem && multinode.nnodes > 1)
    throw ScenarioError("--token", *problem + " (several processes share one secret: SHARDSCOPE_TOKEN or --token)");
  if (multinode.node_rank >= multinode.nnodes)
    throw ScenarioError("--node-rank", "must be below --nnodes (" + std::to_string(multinode.nnodes) + ")");
  return place;
}

void refuse_multi_process_launch(const std::string& backend) {
  std::optional<exec::LaunchPlace> place;
  try {
    place = exec::launch_place_from_environment(exec::process_environment());
  } catch (const exec::LaunchEnvironmentError&) {
    return;  // variables this backend does not use
  }
  if (place && place->processes > 1)
    throw ScenarioError("--backend", "the " + backend + " backend runs every rank in this one process, but " + place->source +
                                         " started " + std::to_string(place->processes) + " processes: start one");
}

int check_launch(const exec::MultiNodeOptions& multinode, const std::optional<exec::LaunchPlace>& place, bool json,
                 std::ostream& out, std::ostream& err) {
  nlohmann::json report = {{"source", place ? place->source : "flags"},
                           {"processes", multinode.nnodes},
                           {"process_rank", multinode.node_rank},
                           {"local_rank", place ? place->local_rank : 0},
                           {"local_processes", place ? place->local_processes : 1},
                           {"master", multinode.master},
                           {"host", host_name()},
                           {"cuda_visible_devices", visible_devices()},
                           {"joined", false}};
  if (place && !place->port_note.empty()) report["master_port_note"] = place->port_note;
  const std::string who = "process " + std::to_string(multinode.node_rank) + " of " + std::to_string(multinode.nnodes);
  try {
    exec::JoinSettings settings;
    settings.token = multinode.token;
    settings.timeout = multinode.join_timeout;
    if (multinode.nnodes <= 1) {
      report["joined"] = true;
      report["note"] = "a single process: nothing to join";
    } else if (multinode.node_rank == 0) {
      const exec::Endpoint listen = exec::master_listen_endpoint(multinode.master, multinode.nnodes);
      exec::RendezvousServer server(listen);
      report["listening_on"] = net::endpoint_text(server.bound());
      const std::string payload = host_name();
      const auto hellos = server.serve(multinode.nnodes, 0, {reinterpret_cast<const std::byte*>(payload.data()),
                                                             reinterpret_cast<const std::byte*>(payload.data()) + payload.size()},
                                       settings);
      report["refused"] = server.refused();
      // The text below says "all N processes joined": a short count is a failed check, not a quiet false.
      if (hellos.size() != static_cast<std::size_t>(multinode.nnodes))
        throw std::runtime_error(std::to_string(hellos.size()) + " of " + std::to_string(multinode.nnodes) +
                                 " processes joined");
      report["joined"] = true;
    } else {
      const auto payload = exec::fetch_from_master(exec::parse_endpoint(multinode.master), {multinode.node_rank, 0}, settings);
      report["joined"] = true;
      report["master_host"] = std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
  } catch (const std::exception& error) {  // RendezvousError, or an unparsable --master
    report["error"] = error.what();
    if (json) out << report.dump() << "\n";
    err << "error: " << who << ": " << error.what() << "\n";
    return 3;
  }
  if (json) {
    out << report.dump() << "\n";
    return 0;
  }
  out << who << " (" << report["source"].get<std::string>() << ", local " << report["local_rank"].get<int>() << " of "
      << report["local_processes"].get<int>() << ") on " << report["host"].get<std::string>()
      << ", CUDA_VISIBLE_DEVICES " << report["cuda_visible_devices"].get<std::string>() << "\n";
  if (multinode.nnodes <= 1) {
    out << "a single process: nothing to join\n";
  } else if (multinode.node_rank == 0) {
    out << "master listening on " << report["listening_on"].get<std::string>() << " (--master " << multinode.master
        << (place && !place->port_note.empty() ? "; " + place->port_note : "") << "): all " << multinode.nnodes
        << " processes joined\n";
  } else {
    out << "joined the master at " << multinode.master << " (host " << report["master_host"].get<std::string>() << ")\n";
  }
  return 0;
}

}  // namespace shardscope::cli
