// The scenario's simulation section: device defaults, overrides, strict parsing and validation messages.
#include <gtest/gtest.h>

#include "scenario/scenario.h"

namespace shardscope {
namespace {

ResolvedScenario resolve_json(const std::string& text) { return resolve_scenario(parse_scenario_json(text, "test.json")); }

std::string error_of(const std::string& text) {
  try {
    resolve_json(text);
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

TEST(SimulationSettings, DeviceDefaults) {
  const auto h100 = resolve_json(R"({"cluster": {"device": "H100-80"}})").links;
  EXPECT_EQ(h100.intra_node.name, "nvlink4");
  EXPECT_EQ(h100.inter_node.name, "ib-ndr");
  EXPECT_EQ(h100.gpus_per_node, 8);
  // NVLink 4: 18 links × 25 GB/s per direction; NDR: 400 Gb/s / 8.
  EXPECT_DOUBLE_EQ(h100.intra_node.gbps, 18 * 25.0);
  EXPECT_DOUBLE_EQ(h100.inter_node.gbps, 400 / 8.0);
  const auto a100 = resolve_json(R"({"cluster": {"device": "A100-80"}})").links;
  EXPECT_EQ(a100.intra_node.name, "nvlink3");
  EXPECT_EQ(a100.inter_node.name, "ib-hdr");
  const auto rtx = resolve_json(R"({"strategy": {"name": "single"}, "cluster": {"device": "RTX-4090"}})").links;
  EXPECT_EQ(rtx.intra_node.name, "pcie4");
  EXPECT_EQ(rtx.inter_node.name, "ethernet");
  EXPECT_DOUBLE_EQ(rtx.inter_node.gbps, 100 / 8.0);  // 100 GbE
}

TEST(SimulationSettings, OverridesApplyInOrder) {
  const auto links = resolve_json(R"({"simulation": {"intra_node_link": "pcie5", "inter_node_link": "ethernet",
      "gpus_per_node": 4, "link_latency_us": 3, "inter_node_gbps": 10}})").links;
  EXPECT_EQ(links.intra_node.name, "pcie5");
  EXPECT_DOUBLE_EQ(links.intra_node.gbps, 63);     // the preset's, not overridden
  EXPECT_DOUBLE_EQ(links.intra_node.latency_us, 3);  // link_latency_us: both links
  EXPECT_DOUBLE_EQ(links.inter_node.latency_us, 3);
  EXPECT_DOUBLE_EQ(links.inter_node.gbps, 10);
  EXPECT_EQ(links.gpus_per_node, 4);
  const auto uniform = resolve_json(R"({"simulation": {"link_gbps": 7.5}})").links;
  EXPECT_DOUBLE_EQ(uniform.intra_node.gbps, 7.5);
  EXPECT_DOUBLE_EQ(uniform.inter_node.gbps, 7.5);
}

TEST(SimulationSettings, RoundTripsThroughJson) {
  Scenario s;
  s.simulation.intra_node_link = "nvlink3";
  s.simulation.link_gbps = 123.5;
  s.simulation.compute_efficiency = 0.42;
  s.simulation.gpus_per_node = 2;
  const Scenario back = parse_scenario_json(scenario_to_json(s), "round trip");
  EXPECT_EQ(back.simulation.intra_node_link, "nvlink3");
  EXPECT_EQ(back.simulation.link_gbps, 123.5);
  EXPECT_DOUBLE_EQ(back.simulation.compute_efficiency, 0.42);
  EXPECT_EQ(back.simulation.gpus_per_node, 2);
  EXPECT_FALSE(back.simulation.link_latency_us.has_value());
}

TEST(SimulationSettings, BadValuesNameTheField) {
  EXPECT_NE(error_of(R"({"simulation": {"intra_node_link": "nvlink9"}})").find("simulation.intra_node_link: unknown link preset 'nvlink9'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"link_gbps": -1}})").find("simulation.link_gbps: must be at least 0.001 (got -1)"), std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"link_latency_us": -0.5}})").find("simulation.link_latency_us"), std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"compute_efficiency": 1.5}})").find("simulation.compute_efficiency"), std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"memory_efficiency": 0}})").find("simulation.memory_efficiency"), std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"kernel_overhead_us": -1}})").find("simulation.kernel_overhead_us"), std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"gpus_per_node": 0}})").find("simulation.gpus_per_node"), std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"link_gbs": 5}})").find("simulation.link_gbs: unknown key"), std::string::npos);
  EXPECT_NE(error_of(R"({"simulation": {"link_gbps": "fast"}})").find("simulation.link_gbps: must be a number"), std::string::npos);
  // A subnormal passes any "(0, X]" rule by value; refused wherever it comes from (issue 41).
  EXPECT_NE(error_of(R"({"strategy": {"name": "zero2", "allgather_bucket_mb": 1e-320}})").find("strategy.allgather_bucket_mb: is too small to mean anything"),
            std::string::npos);
}

}  // namespace
}  // namespace shardscope
