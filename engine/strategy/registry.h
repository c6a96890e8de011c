// TEMPORARY stand-in for the strategy registry being written on another branch; replaced at merge.
#pragma once
#include <string_view>

#include "scenario/scenario.h"

namespace shardscope {
bool strategy_accepts(StrategyKind kind, std::string_view field_key);
}  // namespace shardscope
