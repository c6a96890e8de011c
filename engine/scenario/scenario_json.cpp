// Scenario <-> JSON. Every field is optional (defaults are the built-in scenario); unknown keys and wrong
// types are errors that name the field, so a typo never silently falls back to a default.
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "scenario/scenario.h"

namespace shardscope {

using nlohmann::json;

namespace {

// Reads one JSON object section, checking types and rejecting keys it was not asked about.
class Section {
 public:
  Section(const json& parent, const std::string& key, std::string path) : path_(std::move(path)) {
    if (!parent.contains(key)) return;
    node_ = &parent.at(key);
    if (!node_->is_object()) throw ScenarioError(path_, "must be an object");
  }
  explicit Section(const json& root) : path_(""), node_(&root) {}

  // A key handled elsewhere (a nested section): accepted here.
  void allow(const std::string& key) { known_.insert(key); }

  template <typename T>
  std::optional<T> get(const std::string& key) {
    known_.insert(key);
    if (!node_ || !node_->contains(key)) return std::nullopt;
    const json& value = node_->at(key);
    check_type<T>(key, value);
    return value.get<T>();
  }

  void reject_unknown() const {
    if (!node_) return;
    for (const auto& [key, value] : node_->items())
      if (!known_.count(key)) {
        std::string allowed;
        for (const auto& k : known_) allowed += (allowed.empty() ? "" : ", ") + k;
        throw ScenarioError(field(key), "unknown key; expected one of: " + allowed);
      }
  }

  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  template <typename T>
  void check_type(const std::string& key, const json& value) const {
    if constexpr (std::is_same_v<T, bool>) {
      if (!value.is_boolean()) throw ScenarioError(field(key), "must be true or false");
    } else if constexpr (std::is_same_v<T, int>) {
      if (!value.is_number_integer()) throw ScenarioError(field(key), "must be an integer");
      const auto v = value.get<std::int64_t>();
      if (v < -2147483647 || v > 2147483647) throw ScenarioError(field(key), "is out of range");
    } else if constexpr (std::is_same_v<T, double>) {
      if (!value.is_number()) throw ScenarioError(field(key), "must be a number");
    } else {
      if (!value.is_string()) throw ScenarioError(field(key), "must be a string");
    }
  }

  std::string path_;
  const json* node_ = nullptr;
  std::set<std::string> known_;
};

template <typename Enum>
Enum parse_enum(const std::optional<std::string>& text, Enum fallback, std::optional<Enum> (*parse)(const std::string&),
                const std::string& field, const std::string& allowed) {
  if (!text) return fallback;
  auto value = parse(*text);
  if (!value) throw ScenarioError(field, "unknown value '" + *text + "'; one of " + allowed);
  return *value;
}

}  // namespace

Scenario parse_scenario_json(const std::string& text, const std::string& source_name) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& error) {
    throw ScenarioError(source_name, std::string("is not valid JSON: ") + error.what());
  }
  if (!root.is_object()) throw ScenarioError(source_name, "must hold a JSON object");

  Scenario s;
  Section top(root);
  if (auto name = top.get<std::string>("name")) s.name = *name;
  top.get<std::string>("description");  // free text for people; accepted and ignored

  Section model(root, "model", "model");
  top.allow("model");
  if (auto spec = model.get<std::string>("spec")) s.model.spec = *spec;
  if (auto inplace = model.get<bool>("inplace_relu")) s.model.inplace_relu = *inplace;
  model.reject_unknown();

  Section training(root, "training", "training");
  top.allow("training");
  if (auto v = training.get<int>("batch")) s.training.batch = *v;
  s.training.loss = parse_enum(training.get<std::string>("loss"), s.training.loss, parse_loss, "training.loss", "mse, cross-entropy");
  s.training.optimizer = parse_enum(training.get<std::string>("optimizer"), s.training.optimizer, parse_optimizer,
                                    "training.optimizer", "sgd, momentum, adam, adamw");
  if (auto v = training.get<double>("weight_decay")) s.training.weight_decay = *v;
  if (auto v = training.get<std::string>("dtype")) s.training.dtype = *v;
  if (auto v = training.get<int>("steps")) s.training.steps = *v;
  if (auto v = training.get<int>("seq")) s.training.seq = *v;
  s.training.checkpoint = parse_enum(training.get<std::string>("checkpoint"), s.training.checkpoint, parse_checkpoint,
                                     "training.checkpoint", "none, selective, full");
  if (auto v = training.get<bool>("no_grad")) s.training.no_grad = *v;
  training.reject_unknown();

  Section cluster(root, "cluster", "cluster");
  top.allow("cluster");
  if (auto v = cluster.get<int>("world")) {
    if (*v < 1) throw ScenarioError("cluster.world", "must be at least 1 (got " + std::to_string(*v) + ")");
    s.cluster.world = *v;
  }
  if (auto v = cluster.get<std::string>("device")) s.cluster.device = *v;
  if (auto v = cluster.get<double>("capacity_gib")) s.cluster.capacity_gib = *v;
  cluster.reject_unknown();

  Section strategy(root, "strategy", "strategy");
  top.allow("strategy");
  s.strategy.kind = parse_enum(strategy.get<std::string>("name"), s.strategy.kind, parse_strategy, "strategy.name", all_strategy_names());
  if (auto v = strategy.get<double>("bucket_cap_mb")) s.strategy.bucket_cap_mb = *v;
  if (auto v = strategy.get<bool>("gradient_as_bucket_view")) s.strategy.gradient_as_bucket_view = *v;
  if (auto v = strategy.get<int>("gpu0_batch")) s.strategy.gpu0_batch = *v;
  if (auto v = strategy.get<int>("stages")) s.strategy.stages = *v;
  if (auto v = strategy.get<int>("micro_batches")) s.strategy.micro_batches = *v;
  if (auto v = strategy.get<int>("dp")) s.strategy.dp = *v;
  if (auto v = strategy.get<int>("dp_zero_stage")) s.strategy.dp_zero_stage = *v;
  if (auto v = strategy.get<int>("prefetch")) s.strategy.prefetch = *v;
  if (auto v = strategy.get<double>("reduce_bucket_mb")) s.strategy.reduce_bucket_mb = *v;
  if (auto v = strategy.get<double>("allgather_bucket_mb")) s.strategy.allgather_bucket_mb = *v;
  strategy.reject_unknown();

  Section accounting(root, "accounting", "accounting");
  top.allow("accounting");
  s.accounting.mode = parse_enum(accounting.get<std::string>("mode"), s.accounting.mode, parse_accounting, "accounting.mode",
                                 "exact, pytorch-1.8, pytorch-2");
  if (auto v = accounting.get<std::string>("gpu_arch")) s.accounting.gpu_arch = *v;
  accounting.reject_unknown();

  Section simulation(root, "simulation", "simulation");
  top.allow("simulation");
  if (auto v = simulation.get<std::string>("intra_node_link")) s.simulation.intra_node_link = *v;
  if (auto v = simulation.get<std::string>("inter_node_link")) s.simulation.inter_node_link = *v;
  if (auto v = simulation.get<int>("gpus_per_node")) {
    if (*v < 1) throw ScenarioError("simulation.gpus_per_node", "must be at least 1 (got " + std::to_string(*v) + ")");
    s.simulation.gpus_per_node = *v;
  }
  if (auto v = simulation.get<double>("link_gbps")) s.simulation.link_gbps = *v;
  if (auto v = simulation.get<double>("link_latency_us")) s.simulation.link_latency_us = *v;
  if (auto v = simulation.get<double>("inter_node_gbps")) s.simulation.inter_node_gbps = *v;
  if (auto v = simulation.get<double>("inter_node_latency_us")) s.simulation.inter_node_latency_us = *v;
  if (auto v = simulation.get<double>("compute_efficiency")) s.simulation.compute_efficiency = *v;
  if (auto v = simulation.get<double>("memory_efficiency")) s.simulation.memory_efficiency = *v;
  if (auto v = simulation.get<double>("kernel_overhead_us")) s.simulation.kernel_overhead_us = *v;
  simulation.reject_unknown();

  top.reject_unknown();
  return s;
}

Scenario load_scenario_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw ScenarioError(path, "cannot be opened");
  std::stringstream buffer;
  buffer << file.rdbuf();
  return parse_scenario_json(buffer.str(), path);
}

std::string scenario_to_json(const Scenario& s) {
  json root;
  root["name"] = s.name;
  root["model"]["spec"] = s.model.spec;
  if (s.model.inplace_relu) root["model"]["inplace_relu"] = *s.model.inplace_relu;
  root["training"] = {{"batch", s.training.batch},          {"loss", loss_name(s.training.loss)},
                      {"optimizer", optimizer_name(s.training.optimizer)}, {"dtype", s.training.dtype},
                      {"steps", s.training.steps},          {"no_grad", s.training.no_grad},
                      {"checkpoint", checkpoint_name(s.training.checkpoint)}};
  if (s.training.seq > 0) root["training"]["seq"] = s.training.seq;
  if (s.training.weight_decay) root["training"]["weight_decay"] = *s.training.weight_decay;
  root["cluster"] = {{"device", s.cluster.device}};
  if (s.cluster.world > 0) root["cluster"]["world"] = s.cluster.world;
  if (s.cluster.capacity_gib) root["cluster"]["capacity_gib"] = *s.cluster.capacity_gib;
  root["strategy"] = {{"name", strategy_name(s.strategy.kind)},
                      {"bucket_cap_mb", s.strategy.bucket_cap_mb},
                      {"gradient_as_bucket_view", s.strategy.gradient_as_bucket_view}};
  if (s.strategy.gpu0_batch) root["strategy"]["gpu0_batch"] = *s.strategy.gpu0_batch;
  if (s.strategy.stages > 0) root["strategy"]["stages"] = s.strategy.stages;
  if (s.strategy.micro_batches != 1) root["strategy"]["micro_batches"] = s.strategy.micro_batches;
  if (s.strategy.dp > 0) root["strategy"]["dp"] = s.strategy.dp;
  if (s.strategy.dp_zero_stage != 0) root["strategy"]["dp_zero_stage"] = s.strategy.dp_zero_stage;
  if (s.strategy.prefetch != 1) root["strategy"]["prefetch"] = s.strategy.prefetch;
  if (s.strategy.reduce_bucket_mb) root["strategy"]["reduce_bucket_mb"] = *s.strategy.reduce_bucket_mb;
  if (s.strategy.allgather_bucket_mb) root["strategy"]["allgather_bucket_mb"] = *s.strategy.allgather_bucket_mb;
  root["accounting"] = {{"mode", accounting_name(s.accounting.mode)}};
  if (!s.accounting.gpu_arch.empty()) root["accounting"]["gpu_arch"] = s.accounting.gpu_arch;
  const auto& sim = s.simulation;
  root["simulation"] = {{"compute_efficiency", sim.compute_efficiency},
                        {"memory_efficiency", sim.memory_efficiency},
                        {"kernel_overhead_us", sim.kernel_overhead_us}};
  if (!sim.intra_node_link.empty()) root["simulation"]["intra_node_link"] = sim.intra_node_link;
  if (!sim.inter_node_link.empty()) root["simulation"]["inter_node_link"] = sim.inter_node_link;
  if (sim.gpus_per_node > 0) root["simulation"]["gpus_per_node"] = sim.gpus_per_node;
  if (sim.link_gbps) root["simulation"]["link_gbps"] = *sim.link_gbps;
  if (sim.link_latency_us) root["simulation"]["link_latency_us"] = *sim.link_latency_us;
  if (sim.inter_node_gbps) root["simulation"]["inter_node_gbps"] = *sim.inter_node_gbps;
  if (sim.inter_node_latency_us) root["simulation"]["inter_node_latency_us"] = *sim.inter_node_latency_us;
  return root.dump(2);
}

}  // namespace shardscope
