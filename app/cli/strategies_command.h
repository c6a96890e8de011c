// `shardscope-cli strategies`: the strategy table (engine/strategy/registry.h) for people and scripts: name,
// counterpart, description and the options each strategy uses. Text or JSON.
#pragma once
#include <iosfwd>
#include <string>

namespace shardscope::cli {

void print_strategies_text(std::ostream& out);
// [{"name", "description", "counterpart", "batch", "options": ["strategy.bucket_cap_mb", ...]}, ...]
std::string strategies_json();

}  // namespace shardscope::cli
