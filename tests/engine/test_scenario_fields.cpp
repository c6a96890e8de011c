// The scenario-field table: it covers the scenario file format exactly, its reader and writer round-trip every
// field, and ranges give messages naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "scenario/scenario_fields.h"
#include "scenario_field_values.h"

namespace shardscope {
namespace {

using testing::other_value;

// The scenario file format as the README documents it (its "Scenario files" example), written out by hand.
const std::set<std::string> kDocumentedKeys = {
    "name", "description",
    "model.spec", "model.inplace_relu", "model.implementation", "model.attention", "model.make_vocab_size_divisible_by",
    "training.batch", "training.loss", "training.optimizer", "training.weight_decay", "training.dtype",
    "training.precision",
    "training.steps", "training.no_grad", "training.seq", "training.checkpoint",
    "cluster.world", "cluster.device", "cluster.capacity_gib", "cluster.device_profile",
    "strategy.name", "strategy.bucket_cap_mb", "strategy.gradient_as_bucket_view", "strategy.gpu0_batch",
    "strategy.stages", "strategy.micro_batches", "strategy.dp", "strategy.dp_zero_stage", "strategy.tp",
    "strategy.sequence_parallel", "strategy.prefetch",
    "strategy.reduce_bucket_mb", "strategy.allgather_bucket_mb", "strategy.zero2_reduce", "strategy.zero3_init",
    "strategy.fsdp_units", "strategy.reshard_after_forward", "strategy.fsdp_param_dtype", "strategy.fsdp_reduce_dtype",
    "strategy.process_group",
    "accounting.mode", "accounting.gpu_arch", "accounting.cublas_workspaces", "accounting.record_function_bytes",
    "simulation.intra_node_link", "simulation.inter_node_link", "simulation.gpus_per_node", "simulation.link_gbps",
    "simulation.link_latency_us", "simulation.inter_node_gbps", "simulation.inter_node_latency_us",
    "simulation.compute_efficiency", "simulation.memory_efficiency", "simulation.kernel_overhead_us"};

// The file's values are checked as it is read, so the message also names the file.
std::string range_error(const std::string& json) {
  try {
    check_field_ranges(parse_scenario_json(json, "test.json"));
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

TEST(ScenarioFields, CoverTheDocumentedFormatExactly) {
  std::set<std::string> keys, flags;
  for (const auto& field : scenario_fields()) {
    EXPECT_TRUE(keys.emplace(field.key).second) << "duplicate key " << field.key;
    if (!field.flag.empty()) {
      EXPECT_TRUE(flags.emplace(field.flag).second) << "duplicate flag " << field.flag;
    }
    EXPECT_FALSE(field.help.empty()) << field.key;
    EXPECT_FALSE(field.label.empty()) << field.key;
    if (field.kind == FieldKind::Choice) {
      EXPECT_NE(field.choices, nullptr) << field.key;  // a choice lists its names
    }
  }
  EXPECT_EQ(keys, kDocumentedKeys);
  EXPECT_EQ(flags.size(), keys.size() - 2);  // every setting has a flag; the name and description do not
}

TEST(ScenarioFields, EveryFieldRoundTripsThroughJson) {
  for (const auto& field : scenario_fields()) {
    Scenario s;
    const FieldValue value = other_value(field);
    set_field(s, field, value, field.key);
    EXPECT_TRUE(field_is_set(s, field)) << field.key;
    const Scenario back = parse_scenario_json(scenario_to_json(s), "x");
    EXPECT_EQ(field.get(back), value) << field.key;
    // Nothing else moved.
    for (const auto& other : scenario_fields()) {
      if (&other != &field) {
        EXPECT_EQ(other.get(back), other.get(s)) << field.key << " moved " << other.key;
      }
    }
  }
}

// What the writer put in every file before the table existed: these keys always, the others only when changed.
TEST(ScenarioFields, DefaultsWriteTheKeysEveryFileShows) {
  std::set<std::string> written;
  const auto root = nlohmann::json::parse(scenario_to_json(Scenario{}));
  for (const auto& [key, value] : root.items()) {
    if (!value.is_object()) written.insert(key);
    else
      for (const auto& [inner, ignored] : value.items()) written.insert(key + "." + inner);
  }
  const std::set<std::string> always = {
      "name", "model.spec", "training.batch", "training.loss", "training.optimizer", "training.dtype",
      "training.steps", "training.no_grad", "training.checkpoint", "cluster.device", "strategy.name",
      "strategy.gradient_as_bucket_view", "accounting.mode",
      "simulation.compute_efficiency", "simulation.memory_efficiency", "simulation.kernel_overhead_us"};
  EXPECT_EQ(written, always);
}

TEST(ScenarioFields, RangesNameTheFieldAndTheRule) {
  EXPECT_EQ(range_error(R"({"training": {"batch": 0}})"), "training.batch: must be at least 1 (got 0) (in test.json)");
  EXPECT_EQ(range_error(R"({"training": {"steps": 1001}})"), "training.steps: must be at most 1000 (got 1001) (in test.json)");
  EXPECT_EQ(range_error(R"({"simulation": {"compute_efficiency": 0}})"),
            "simulation.compute_efficiency: must be at least 0.001 (got 0) (in test.json)");
  EXPECT_EQ(range_error(R"({"simulation": {"link_latency_us": -1}})"),
            "simulation.link_latency_us: must not be negative (got -1) (in test.json)");
  EXPECT_EQ(range_error(R"({"cluster": {"capacity_gib": 0}})"), "cluster.capacity_gib: must be positive (got 0) (in test.json)");
  EXPECT_EQ(range_error(R"({"strategy": {"prefetch": 9}})"), "strategy.prefetch: must be at most 8 (got 9) (in test.json)");
  EXPECT_EQ(range_error(R"({"strategy": {"micro_batches": 4, "stages": 0}, "training": {"seq": 0}})"), "");
}

// 0 stores "derive it" for world: written 0 is refused where it is written, not taken as the default.
TEST(ScenarioFields, AnExplicitZeroWorldIsRefused) {
  try {
    parse_scenario_json(R"({"cluster": {"world": 0}})", "x");
    FAIL() << "world 0 accepted";
  } catch (const ScenarioError& error) {
    EXPECT_EQ(std::string(error.what()), "cluster.world: must be at least 1 (got 0) (in x)");
  }
  const Scenario derived = parse_scenario_json(R"({"strategy": {"stages": 0}})", "x");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(find_scenario_field("strategy.stages")->get(derived)));
}

TEST(ScenarioFields, ChoicesRefuseOtherNames) {
  Scenario s;
  EXPECT_THROW(set_field(s, *find_scenario_field("training.dtype"), std::string("fp8"), "--dtype"), ScenarioError);
  EXPECT_THROW(set_field(s, *find_scenario_field("training.batch"), std::string("8"), "--batch"), ScenarioError);
  set_field(s, *find_scenario_field("training.dtype"), std::string("bf16"), "--dtype");
  EXPECT_EQ(s.training.dtype, Dtype::Bf16);
}


// Issue 18: every number is finite and bounded, in one place. Each Number row has both bounds, and inf / NaN are
// refused by set_field whatever the source (a flag, a file, the form), with the field named as the user spelled it.
TEST(ScenarioFields, EveryNumberIsBoundedAndFinite) {
  for (const auto& field : scenario_fields()) {
    if (field.kind != FieldKind::Number) continue;
    EXPECT_TRUE(field.min.has_value()) << field.key;
    EXPECT_TRUE(field.max.has_value()) << field.key;
    for (const double bad : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN()}) {
      Scenario s;
      try {
        set_field(s, field, bad, field.flag);
        ADD_FAILURE() << field.key << " accepted " << bad;
      } catch (const ScenarioError& error) {
        EXPECT_EQ(std::string(error.what()), std::string(field.flag) + ": must be a finite number (got " + field_value_text(bad) + ")");
      }
    }
  }
}

// Past its max, a field names that bound in a short form: the rule's own number, never hundreds of digits.
TEST(ScenarioFields, ValuesPastTheMaxNameTheBound) {
  for (const auto& field : scenario_fields()) {
    if (field.kind != FieldKind::Number && field.kind != FieldKind::Integer) continue;
    const double max = field.max.value_or(2147483647.0);
    const FieldValue bound = field.kind == FieldKind::Integer ? FieldValue{static_cast<std::int64_t>(max)} : FieldValue{max};
    const FieldValue over = field.kind == FieldKind::Integer ? FieldValue{static_cast<std::int64_t>(max) + 1} : FieldValue{max * 10};
    Scenario s;
    std::string message;
    try {
      set_field(s, field, over, field.key);
      check_field_ranges(s);
    } catch (const ScenarioError& error) {
      message = error.what();
    }
    EXPECT_EQ(message, std::string(field.key) + ": must be at most " + field_value_text(bound) + " (got " + field_value_text(over) + ")");
    EXPECT_LT(message.size(), 120u) << message;
  }
  EXPECT_EQ(field_range_violation(*find_scenario_field("simulation.link_latency_us"), 1e300), "must be at most 1e+06");
  EXPECT_EQ(field_range_rule(*find_scenario_field("simulation.compute_efficiency")), "must be between 0.001 and 1");
  EXPECT_EQ(field_range_rule(*find_scenario_field("training.batch")), "must be between 1 and 16777216");
}

// Bounds a simulated time can be computed from: a link at least 1 MB/s, latencies and kernel overheads at most 1 s,
// efficiencies at least 0.1 % (scenario_fields.cpp explains each).
TEST(ScenarioFields, SimulationBoundsKeepTimesComputable) {
  EXPECT_EQ(*find_scenario_field("simulation.link_gbps")->min, 1e-3);
  EXPECT_EQ(*find_scenario_field("simulation.inter_node_gbps")->min, 1e-3);
  EXPECT_EQ(*find_scenario_field("simulation.link_latency_us")->max, 1e6);
  EXPECT_EQ(*find_scenario_field("simulation.inter_node_latency_us")->max, 1e6);
  EXPECT_EQ(*find_scenario_field("simulation.kernel_overhead_us")->max, 1e6);
  EXPECT_EQ(*find_scenario_field("simulation.compute_efficiency")->min, 1e-3);
  EXPECT_EQ(*find_scenario_field("simulation.memory_efficiency")->min, 1e-3);
  EXPECT_EQ(*find_scenario_field("cluster.capacity_gib")->max, 65536);
}

std::string json_error(const std::string& json) {
  try {
    parse_scenario_json(json, "test.json");
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

// A file's problems name the file: values of the wrong type (described, never dumped), integers past 64 bits,
// numbers past a double, duplicate keys, nesting.
TEST(ScenarioFields, FileErrorsNameTheFileAndTheProblem) {
  const ScenarioField& batch = *find_scenario_field("training.batch");
  EXPECT_EQ(json_error(R"({"training": {"batch": 18446744073709551615}})"),
            "training.batch: " + field_range_violation(batch, 1.8e19) + " (got 18446744073709551615) (in test.json)");
  EXPECT_EQ(json_error(R"({"training": {"batch": [[1]]}})"), "training.batch: must be an integer (got an array of 1 item) (in test.json)");
  EXPECT_EQ(json_error(R"({"training": {"batch": 8, "batch": 9}})").rfind("test.json: training.batch: duplicate key", 0), 0u);
  EXPECT_EQ(json_error(R"({"simulation": {"link_gbps": 1e400}})").rfind("test.json: is not valid JSON: line 1, column ", 0), 0u);
  const std::string deep = json_error(std::string(100000, '['));
  EXPECT_EQ(deep.rfind("test.json: [0][0]", 0), 0u) << deep.substr(0, 200);
  EXPECT_NE(deep.find(": nested more than 64 levels deep"), std::string::npos) << deep.substr(0, 200);
  EXPECT_EQ(json_error("[1, 2]"), "test.json: must hold a JSON object (got an array of 2 items)");
}

}  // namespace
}  // namespace shardscope
