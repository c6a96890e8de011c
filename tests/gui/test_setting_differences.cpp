// Two runs' settings, told apart field by field from their trace headers (logic/setting_differences.h).
#include <gtest/gtest.h>

#include "gui/logic/setting_differences.h"
#include "scenario/scenario.h"

namespace shardscope::gui {
namespace {

TraceHeader header_of(const Scenario& s) {
  TraceHeader h;
  h.scenario_json = scenario_to_json(s);
  return h;
}

TEST(SettingDifferences, NamesExactlyTheFieldsThatDiffer) {
  Scenario a = builtin_default_scenario();
  a.cluster.world = 2;
  Scenario b = a;
  b.name = "another name";  // names are not settings
  b.cluster.world = 4;
  b.strategy.gradient_as_bucket_view = !a.strategy.gradient_as_bucket_view;
  const auto differences = setting_differences(header_of(a), header_of(b));
  ASSERT_EQ(differences.size(), 2u);
  EXPECT_EQ(differences[0].key, "cluster.world");
  EXPECT_EQ(differences[0].first, std::to_string(a.cluster.world));
  EXPECT_EQ(differences[0].second, "4");
  EXPECT_EQ(differences[1].key, "strategy.gradient_as_bucket_view");
  EXPECT_EQ(describe_differences(header_of(a), header_of(a)), "the same settings");
  EXPECT_EQ(describe_differences(header_of(a), TraceHeader{}), "") << "a header without a scenario cannot be told";
  EXPECT_NE(describe_differences(header_of(a), header_of(b)).find("world 4 (a: 2)"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::gui
