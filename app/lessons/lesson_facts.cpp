// The figures of one lesson scenario and their names (lesson_facts.h).
#include "lessons/lesson_facts.h"

#include "core/untrusted_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/units.h"
#include "lessons/expression.h"
#include "lessons/lesson.h"
#include "model/transformer.h"
#include "pipeline/run_pipeline.h"
#include "scenario/scenario_fields.h"
#include "scenario/tensor_parallel.h"
#include "trace/events/trace_sink.h"

namespace shardscope::lessons {

namespace {

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot; (dot = path.find('.', start)) != std::string::npos; start = dot + 1) parts.push_back(path.substr(start, dot - start));
  parts.push_back(path.substr(start));
  return parts;
}

[[noreturn]] void unknown(const ScenarioFacts& facts, const std::string& path, const std::string& why) {
  throw ExpressionError(facts.id + "." + path + ": " + why);
}

int rank_of(const ScenarioFacts& facts, const std::string& path, const std::string& part, int ranks) {
  const std::optional<int> rank = part.rfind("rank", 0) == 0 ? parse_count(std::string_view(part).substr(4)) : std::nullopt;
  if (!rank) unknown(facts, path, "expected rankN, got '" + printable(part, 40) + "'");
  if (*rank >= ranks) unknown(facts, path, "the run has " + std::to_string(ranks) + " ranks");
  return *rank;
}

std::optional<TransformerConfig> transformer_of(const std::string& spec) {
  if (spec.rfind("hf:", 0) == 0) return read_hf_config_file(spec.substr(3));
  if (const auto path = model_preset_config_path(spec)) return read_hf_config_file(*path);
  return std::nullopt;
}

// Bytes a rank's blocks keep for backward, summed over the transformer blocks, for `batch` samples, under the
// model's recomputation mode (Korthikanti et al. Table 2 rows: none, selective, full).
double block_activation_bytes(const Model& model, std::int64_t batch) {
  double bytes = 0;
  for (const Layer& layer : model.layers) {
    if (layer.kind != LayerKind::TransformerBlock) continue;
    double kept = static_cast<double>(layer.in_numel * model.activation_element_bytes);
    if (model.checkpoint != CheckpointMode::Full) kept += static_cast<double>(layer.extra_saved_bytes_per_sample);
    if (model.checkpoint == CheckpointMode::None) kept += static_cast<double>(layer.attention_saved_bytes_per_sample);
    bytes += kept * static_cast<double>(batch);
  }
  return bytes;
}

const PhaseMemory& phase_of(const ScenarioFacts& facts, const std::string& path, const RankMemory& rank,
                            const std::vector<std::string>& parts, std::size_t at) {
  // PHASE is model_created / wrapped, or stepK.name (two parts).
  std::string name = parts[at];
  int step = 0;
  if (name.rfind("step", 0) == 0 && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[4]))) {
    const std::optional<int> count = parse_count(std::string_view(name).substr(4));
    if (!count) unknown(facts, path, "expected stepK with K a step number, got '" + printable(name, 40) + "'");
    step = *count;
    if (at + 1 >= parts.size()) unknown(facts, path, "expected stepK.PHASE");
    name = parts[at + 1];
  }
  for (const PhaseMemory& phase : rank.phases)
    if (phase.name == name && phase.step == step) return phase;
  unknown(facts, path, "no phase '" + name + "' in step " + std::to_string(step));
}

std::size_t phase_parts(const std::vector<std::string>& parts, std::size_t at) {
  return parts[at].rfind("step", 0) == 0 && parts[at].size() > 4 && std::isdigit(static_cast<unsigned char>(parts[at][4])) ? 2 : 1;
}

Value memory_value(const ScenarioFacts& facts, const std::string& path, const std::vector<std::string>& parts) {
  const int ranks = static_cast<int>(facts.memory.ranks.size());
  const std::string& what = parts[0];
  auto rank_at_end = [&]() -> const RankMemory& {
    return facts.memory.ranks[static_cast<std::size_t>(rank_of(facts, path, parts.back(), ranks))];
  };
  auto bytes = [](Bytes b) { return Value{static_cast<double>(b), Unit::Bytes}; };
  if (what == "peak" && parts.size() == 2) return bytes(rank_at_end().peak_allocated);
  if (what == "peak_reserved" && parts.size() == 2) return bytes(rank_at_end().peak_reserved);
  if (what == "category" && parts.size() == 3) {
    const auto category = category_from_key(parts[1]);
    if (!category) unknown(facts, path, "unknown category '" + parts[1] + "'");
    return bytes(rank_at_end().peak_by_category[*category]);
  }
  if ((what == "allocated" || what == "max_allocated" || what == "reserved") && parts.size() >= 3) {
    if (1 + phase_parts(parts, 1) + 1 != parts.size()) unknown(facts, path, "expected " + what + ".PHASE.rankN");
    const PhaseMemory& phase = phase_of(facts, path, rank_at_end(), parts, 1);
    return bytes(what == "allocated" ? phase.allocated : what == "max_allocated" ? phase.max_allocated : phase.reserved);
  }
  if (what == "held" && parts.size() >= 4) {
    const auto category = category_from_key(parts[1]);
    if (!category) unknown(facts, path, "unknown category '" + parts[1] + "'");
    if (2 + phase_parts(parts, 2) + 1 != parts.size()) unknown(facts, path, "expected held.CATEGORY.PHASE.rankN");
    return bytes(phase_of(facts, path, rank_at_end(), parts, 2).by_category[*category]);
  }
  if (what == "capacity" && parts.size() == 1) return bytes(facts.memory.capacity);
  if (what == "oom" && parts.size() == 2) {
    for (const RankMemory& rank : facts.memory.ranks) {
      if (!rank.oom) continue;
      if (parts[1] == "rank") return {static_cast<double>(rank.rank), Unit::Count};
      if (parts[1] == "requested") return bytes(rank.oom->requested);
      if (parts[1] == "allocated") return bytes(rank.oom->allocated_before);
      unknown(facts, path, "oom.rank, oom.requested or oom.allocated");
    }
    if (parts[1] == "rank") return {-1, Unit::Count};
    unknown(facts, path, "no rank runs out of memory");
  }
  if (what == "oom_ranks" && parts.size() == 1) {
    int count = 0;
    for (const RankMemory& rank : facts.memory.ranks) count += rank.oom ? 1 : 0;
    return {static_cast<double>(count), Unit::Count};
  }
  unknown(facts, path, "not a known value");
}

Value timing_value(const ScenarioFacts& facts, const std::string& path, const std::vector<std::string>& parts) {
  const SimulationResult& t = facts.timing;
  auto ns = [](TimeNs v) { return Value{static_cast<double>(v), Unit::Nanoseconds}; };
  const std::string& what = parts[0];
  if (parts.size() == 1) {
    if (what == "step_time") return ns(t.step_time_ns);
    if (what == "run_time") return ns(t.run_time_ns);
    if (what == "comm") return ns(t.total_comm_ns);
    if (what == "exposed_comm") return ns(t.exposed_comm_ns);
    if (what == "bubble") return {t.bubble_fraction, Unit::Fraction};
    if (what == "schedule_bubble") return {t.schedule_bubble_fraction, Unit::Fraction};
  }
  if (parts.size() == 2 && (what == "utilisation" || what == "compute_busy" || what == "rank_comm")) {
    const RankTiming& rank = t.ranks[static_cast<std::size_t>(rank_of(facts, path, parts[1], static_cast<int>(t.ranks.size())))];
    if (what == "utilisation") return {rank.utilisation, Unit::Fraction};
    if (what == "compute_busy") return ns(rank.compute_busy_ns);
    return ns(rank.comm_ns);
  }
  if (what == "collective" && parts.size() == 3) {
    for (const CollectiveTiming& c : t.collectives) {
      std::string key = c.kind;
      for (char& ch : key) if (ch == '-' || ch == '/') ch = '_';
      if (key != parts[1]) continue;
      if (parts[2] == "time") return ns(c.time_ns);
      if (parts[2] == "size") return {static_cast<double>(c.size_bytes), Unit::Bytes};
      if (parts[2] == "count") return {static_cast<double>(c.count), Unit::Count};
      if (parts[2] == "busbw") return {c.busbw_gbps, Unit::Number};
      unknown(facts, path, "collective.KIND.time, .size, .count or .busbw");
    }
    if (parts[2] == "count") return {0, Unit::Count};
    unknown(facts, path, "no " + parts[1] + " in the step");
  }
  unknown(facts, path, "not a known value");
}

Value model_value(const ScenarioFacts& facts, const std::string& path, const std::vector<std::string>& parts) {
  const Model& model = facts.scenario->model;
  const std::string& what = parts[1];
  auto count = [](double v) { return Value{v, Unit::Count}; };
  if (parts.size() != 2) unknown(facts, path, "not a known value");
  if (what == "parameters") return count(static_cast<double>(model.parameter_count()));
  if (what == "blocks") return count(model.transformer_block_count());
  if (what == "seq") return count(model.seq);
  if (what == "block_parameters") {
    double n = 0;
    for (const Layer& layer : model.layers)
      if (layer.kind == LayerKind::TransformerBlock) n += static_cast<double>(layer.param_numel());
    return count(n);
  }
  if (what == "block_activations") return {block_activation_bytes(model, facts.scenario->settings.training.batch), Unit::Bytes};
  // memory --json's model.activation_bytes_per_layer: one block's saved bytes on one rank under its tp, sp and
  // recomputation (Korthikanti et al. 2022, Table 2).
  if (what == "activation_bytes_per_layer")
    if (const auto bytes = activation_bytes_per_layer(*facts.scenario)) return {static_cast<double>(*bytes), Unit::Bytes};
  if (facts.transformer) {
    const TransformerConfig& c = *facts.transformer;
    if (what == "hidden") return count(static_cast<double>(c.hidden));
    if (what == "heads") return count(c.heads);
    if (what == "layers") return count(c.layers);
    if (what == "intermediate") return count(static_cast<double>(c.intermediate));
    if (what == "vocab") return count(static_cast<double>(c.vocab));
  }
  unknown(facts, path, "not a known value" + std::string(facts.transformer ? "" : " (hidden, heads, layers: transformers only)"));
}

Value demo_value(const ScenarioFacts& facts, const std::string& path, const std::vector<std::string>& parts) {
  const RingDemo& demo = *facts.demo;
  if (parts.size() == 2 && parts[1] == "ranks") return {static_cast<double>(demo.ranks), Unit::Count};
  if (parts.size() == 2 && parts[1] == "steps") return {static_cast<double>(demo.steps.size() - 1), Unit::Count};
  if (parts.size() == 4 && (parts[1] == "result" || parts[1] == "input")) {
    const auto& buffers = parts[1] == "result" ? demo.result() : demo.steps.front().buffers;
    const auto& buffer = buffers[static_cast<std::size_t>(rank_of(facts, path, parts[2], demo.ranks))];
    const std::optional<int> index = parse_count(parts[3]);
    if (!index || static_cast<std::size_t>(*index) >= buffer.size()) unknown(facts, path, "no element " + printable(parts[3], 40));
    return {buffer[static_cast<std::size_t>(*index)], Unit::Number};
  }
  unknown(facts, path, "ring.ranks, ring.steps, ring.result.rankN.I or ring.input.rankN.I");
}

// A numeric scenario setting by its file key ("training.batch", "strategy.micro_batches"), as resolved.
std::optional<Value> setting_value(const ScenarioFacts& facts, const std::string& path) {
  const ScenarioField* field = find_scenario_field(path);
  if (!field) return std::nullopt;
  const FieldValue value = field->get(facts.scenario->settings);
  if (const auto* i = std::get_if<std::int64_t>(&value)) return Value{static_cast<double>(*i), Unit::Count};
  if (const auto* d = std::get_if<double>(&value)) return Value{*d, Unit::Number};
  if (const auto* b = std::get_if<bool>(&value)) return Value{*b ? 1.0 : 0.0, Unit::Count};
  unknown(facts, path, "not a number (unset, or text)");
}

// A number that a format shows whole: finite and within ±2^63, where std::llround is defined (past it, its result is
// unspecified: {1e300|int} showed "−0" and {1e19|bytes} a negative size). A double under 2^63 is at most 2^63 − 1024,
// so the rounded value and its negation both fit.
long long whole(double value, const char* format) {
  if (!std::isfinite(value) || std::abs(value) >= 9223372036854775808.0)
    throw ExpressionError(fmt::format("{:g} cannot be shown in format '{}', which shows whole numbers within ±2^63", value, format));
  return std::llround(value);
}

std::string grouped(double value, const char* format = "int") {
  const long long v = whole(value, format);
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "−" : "") + out;
}

}  // namespace

ScenarioFacts compute_facts(const LessonScenario& scenario) {
  ScenarioFacts facts;
  facts.id = scenario.id;
  if (scenario.is_demo()) {
    facts.demo = run_ring_all_reduce(scenario.all_reduce_demo);
    return facts;
  }
  DiscardTraceSink discard;
  pipeline::SimulatedRun run = pipeline::simulate_scenario(*scenario.scenario, discard);
  facts.memory = account_memory(run.plan, run.scenario.settings.accounting.mode, run.scenario.device.capacity, /*keep_series=*/false);
  facts.transformer = transformer_of(run.scenario.settings.model.spec);
  facts.timing = std::move(run.result);
  facts.plan = std::move(run.plan);
  facts.scenario = std::move(run.scenario);
  return facts;
}

Value fact_value(const ScenarioFacts& facts, const std::string& path) {
  const std::vector<std::string> parts = split(path);
  if (facts.demo) {
    if (parts[0] != "ring") unknown(facts, path, "an all-reduce demo has only ring.* values");
    return demo_value(facts, path, parts);
  }
  if (parts[0] == "ring") unknown(facts, path, "not an all-reduce demo");
  if (parts[0] == "model") return model_value(facts, path, parts);
  if (parts[0] == "link" && parts.size() == 2) {
    const LinkPreset& link = facts.scenario->links.intra_node;
    if (parts[1] == "gbps") return {link.gbps, Unit::Number};
    if (parts[1] == "latency_us") return {link.latency_us, Unit::Number};
    unknown(facts, path, "link.gbps or link.latency_us (within a node)");
  }
  if (const auto setting = setting_value(facts, path)) return *setting;
  static const std::vector<std::string> kTiming = {"step_time", "run_time", "comm", "exposed_comm", "bubble",
                                                   "schedule_bubble", "utilisation", "compute_busy", "rank_comm", "collective"};
  if (std::find(kTiming.begin(), kTiming.end(), parts[0]) != kTiming.end()) return timing_value(facts, path, parts);
  return memory_value(facts, path, parts);
}

namespace {

// Three significant digits in fixed notation, thousands grouped: 0.00123, 1.23, 123, 1,230, 12,300.
std::string significant(double value, const char* format) {
  if (!std::isfinite(value)) whole(value, format);  // throws
  if (value == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::abs(value))));
  const int decimals = std::max(0, 2 - magnitude);
  if (decimals > 0) return fmt::format("{:.{}f}", value, decimals);
  return grouped(std::round(value / std::pow(10.0, magnitude - 2)) * std::pow(10.0, magnitude - 2), format);
}

}  // namespace

std::string format_value(double number, Unit unit, const std::string& format) {
  std::string f = format;
  if (f.empty()) {
    switch (unit) {
      case Unit::Bytes: f = "bytes"; break;
      case Unit::Nanoseconds: f = "duration"; break;
      case Unit::Fraction: f = "percent"; break;
      case Unit::Count: f = "int"; break;
      case Unit::Number: f = "num"; break;
    }
  }
  if (f == "bytes") {
    const long long b = whole(number, "bytes");
    return b < 0 ? "−" + format_bytes(static_cast<Bytes>(-b)) : format_bytes(static_cast<Bytes>(b));
  }
  if (f == "B") return grouped(number, "B") + " B";
  if (f == "GB") return fmt::format("{:.3g} GB", number / 1e9);
  if (f == "duration") return format_duration(static_cast<TimeNs>(whole(number, "duration")));
  // Three significant digits, never in scientific notation ("1,070 µs", not "1.07e+03 µs"): a class reads these aloud.
  if (f == "ms") return significant(number / 1e6, "ms") + " ms";
  if (f == "us") return significant(number / 1e3, "us") + " µs";
  if (f == "percent") return fmt::format("{:.1f} %", number * 100);
  if (f == "int") return grouped(number);
  if (f == "x") return fmt::format("{:.2f}×", number);
  if (f == "num") return fmt::format("{:.4g}", number);
  throw ExpressionError("unknown format '" + format + "' (bytes, B, GB, ms, us, percent, int, x, num)");
}

}  // namespace shardscope::lessons
