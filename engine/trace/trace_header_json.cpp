// The .sstrace header record as JSON: run metadata, devices and the plan, so a trace is labelled from the file
// alone. Ops and tensors are stored as columns (a column whose values are all the default is left out), enums as
// indices into a legend of names written alongside, and a program identical to an earlier rank's is stored as
// {"rank": r, "same_as": earlier}. Op deps are not stored.
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "trace/trace_format.h"

namespace shardscope::trace_format {

namespace {

using nlohmann::json;

constexpr int kOpKindCount = 7, kComputeKindCount = 6;

json legend() {
  json l;
  for (int i = 0; i < kOpKindCount; ++i) l["op_kind"].push_back(op_kind_name(static_cast<OpKind>(i)));
  for (int i = 0; i < kStreamCount; ++i) l["stream"].push_back(stream_name(static_cast<Stream>(i)));
  for (int i = 0; i < kComputeKindCount; ++i) l["compute_kind"].push_back(compute_kind_name(static_cast<ComputeKind>(i)));
  for (int i = 0; i < kCollectiveKindCount; ++i)
    l["collective_kind"].push_back(collective_kind_name(static_cast<CollectiveKind>(i)));
  for (auto c : kAllCategories) l["category"].push_back(std::string(category_key(c)));
  return l;
}

// Maps the file's enum indices to this build's enums by name.
template <class Enum>
std::vector<Enum> legend_map(const json& file_legend, const char* key, int count, std::string (*name_of)(Enum)) {
  if (!file_legend.contains(key)) throw std::runtime_error(std::string("legend has no '") + key + "'");
  std::vector<Enum> map;
  for (const auto& name : file_legend.at(key)) {
    int found = -1;
    for (int i = 0; i < count; ++i)
      if (name_of(static_cast<Enum>(i)) == name.get<std::string>()) found = i;
    if (found < 0) throw std::runtime_error(std::string("unknown ") + key + " '" + name.get<std::string>() + "'");
    map.push_back(static_cast<Enum>(found));
  }
  return map;
}

// One column of ops or tensors: written only when some value differs from the default.
template <class T, class Row, class Get>
void put_column(json& table, const char* key, const std::vector<Row>& rows, T default_value, Get get) {
  bool any = false;
  for (const auto& r : rows) any = any || !(get(r) == default_value);
  if (!any) return;
  json column = json::array();
  for (const auto& r : rows) column.push_back(get(r));
  table[key] = std::move(column);
}

template <class T, class Row, class Set>
void get_column(const json& table, const char* key, std::vector<Row>& rows, Set set) {
  if (!table.contains(key)) return;
  const auto& column = table.at(key);
  if (!column.is_array() || column.size() != rows.size())
    throw std::runtime_error(std::string("column '") + key + "' has " + std::to_string(column.size()) + " values for " +
                             std::to_string(rows.size()) + " rows");
  for (std::size_t i = 0; i < rows.size(); ++i) set(rows[i], column[i].get<T>());
}

// Programs that differ only in their rank (data-parallel replicas) are stored once.
bool same_ops(const Op& a, const Op& b) {
  return a.kind == b.kind && a.stream == b.stream && a.label == b.label && a.step == b.step && a.layer == b.layer &&
         a.micro_batch == b.micro_batch && a.compute_kind == b.compute_kind && a.flops == b.flops &&
         a.bytes_accessed == b.bytes_accessed && a.collective_kind == b.collective_kind && a.group == b.group &&
         a.sequence == b.sequence && a.payload == b.payload && a.root == b.root && a.peer == b.peer && a.tensor == b.tensor &&
         a.phase == b.phase;
}

bool same_program(const Program& a, const Program& b) {
  if (a.ops.size() != b.ops.size() || a.tensors.size() != b.tensors.size()) return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.bytes != y.bytes || x.category != y.category || x.persistent != y.persistent) return false;
  }
  for (std::size_t i = 0; i < a.ops.size(); ++i)
    if (!same_ops(a.ops[i], b.ops[i])) return false;
  return true;
}

std::uint64_t program_hash(const Program& p) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(p.ops.size());
  mix(p.tensors.size());
  for (const auto& o : p.ops) {
    mix(static_cast<std::uint64_t>(o.kind) | static_cast<std::uint64_t>(o.stream) << 8);
    mix(o.label.size());
    mix(static_cast<std::uint64_t>(o.payload));
    mix(static_cast<std::uint64_t>(o.peer));
    mix(static_cast<std::uint64_t>(o.tensor));
  }
  for (const auto& t : p.tensors) mix(static_cast<std::uint64_t>(t.bytes));
  return h;
}

json program_json(const Program& p) {
  json ops = json::object();
  const Op d{};
  ops["count"] = p.ops.size();
  put_column(ops, "kind", p.ops, static_cast<int>(d.kind), [](const Op& o) { return static_cast<int>(o.kind); });
  put_column(ops, "stream", p.ops, static_cast<int>(d.stream), [](const Op& o) { return static_cast<int>(o.stream); });
  put_column(ops, "label", p.ops, d.label, [](const Op& o) { return o.label; });
  put_column(ops, "step", p.ops, d.step, [](const Op& o) { return o.step; });
  put_column(ops, "layer", p.ops, d.layer, [](const Op& o) { return o.layer; });
  put_column(ops, "micro_batch", p.ops, d.micro_batch, [](const Op& o) { return o.micro_batch; });
  put_column(ops, "compute_kind", p.ops, static_cast<int>(d.compute_kind), [](const Op& o) { return static_cast<int>(o.compute_kind); });
  put_column(ops, "flops", p.ops, d.flops, [](const Op& o) { return o.flops; });
  put_column(ops, "bytes_accessed", p.ops, d.bytes_accessed, [](const Op& o) { return o.bytes_accessed; });
  put_column(ops, "collective_kind", p.ops, static_cast<int>(d.collective_kind),
             [](const Op& o) { return static_cast<int>(o.collective_kind); });
  put_column(ops, "group", p.ops, d.group, [](const Op& o) { return o.group; });
  put_column(ops, "sequence", p.ops, d.sequence, [](const Op& o) { return o.sequence; });
  put_column(ops, "payload", p.ops, d.payload, [](const Op& o) { return o.payload; });
  put_column(ops, "root", p.ops, d.root, [](const Op& o) { return o.root; });
  put_column(ops, "peer", p.ops, d.peer, [](const Op& o) { return o.peer; });
  put_column(ops, "tensor", p.ops, d.tensor, [](const Op& o) { return o.tensor; });
  put_column(ops, "phase", p.ops, d.phase, [](const Op& o) { return o.phase; });

  json tensors = json::object();
  const TensorInfo t{};
  tensors["count"] = p.tensors.size();
  put_column(tensors, "name", p.tensors, t.name, [](const TensorInfo& x) { return x.name; });
  put_column(tensors, "bytes", p.tensors, t.bytes, [](const TensorInfo& x) { return x.bytes; });
  put_column(tensors, "category", p.tensors, static_cast<int>(t.category),
             [](const TensorInfo& x) { return static_cast<int>(x.category); });
  put_column(tensors, "persistent", p.tensors, t.persistent, [](const TensorInfo& x) { return x.persistent; });
  return json{{"ops", std::move(ops)}, {"tensors", std::move(tensors)}};
}

template <class Enum>
Enum mapped(const std::vector<Enum>& map, int index, const char* what) {
  if (index < 0 || static_cast<std::size_t>(index) >= map.size())
    throw std::runtime_error(std::string(what) + " index " + std::to_string(index) + " is outside the legend");
  return map[static_cast<std::size_t>(index)];
}

// The file's enum indices mapped to this build's enums, by name.
struct Legend {
  std::vector<OpKind> op_kinds;
  std::vector<Stream> streams;
  std::vector<ComputeKind> compute_kinds;
  std::vector<CollectiveKind> collective_kinds;
  std::vector<Category> categories;

  explicit Legend(const json& l)
      : op_kinds(legend_map<OpKind>(l, "op_kind", kOpKindCount, op_kind_name)),
        streams(legend_map<Stream>(l, "stream", kStreamCount, stream_name)),
        compute_kinds(legend_map<ComputeKind>(l, "compute_kind", kComputeKindCount, compute_kind_name)),
        collective_kinds(legend_map<CollectiveKind>(l, "collective_kind", kCollectiveKindCount, collective_kind_name)) {
    for (const auto& key : l.at("category")) {
      const auto c = category_from_key(key.get<std::string>());
      if (!c) throw std::runtime_error("unknown category '" + key.get<std::string>() + "'");
      categories.push_back(*c);
    }
  }
};

Program program_from_json(const json& j, const Legend& legend) {
  const auto& [op_kinds, streams, compute_kinds, collective_kinds, categories] = legend;
  Program p;
  const auto& ops = j.at("ops");
  p.ops.resize(ops.at("count").get<std::size_t>());
  get_column<int>(ops, "kind", p.ops, [&](Op& o, int v) { o.kind = mapped(op_kinds, v, "op kind"); });
  get_column<int>(ops, "stream", p.ops, [&](Op& o, int v) { o.stream = mapped(streams, v, "stream"); });
  get_column<std::string>(ops, "label", p.ops, [](Op& o, std::string v) { o.label = std::move(v); });
  get_column<int>(ops, "step", p.ops, [](Op& o, int v) { o.step = v; });
  get_column<int>(ops, "layer", p.ops, [](Op& o, int v) { o.layer = v; });
  get_column<int>(ops, "micro_batch", p.ops, [](Op& o, int v) { o.micro_batch = v; });
  get_column<int>(ops, "compute_kind", p.ops, [&](Op& o, int v) { o.compute_kind = mapped(compute_kinds, v, "compute kind"); });
  get_column<double>(ops, "flops", p.ops, [](Op& o, double v) { o.flops = v; });
  get_column<Bytes>(ops, "bytes_accessed", p.ops, [](Op& o, Bytes v) { o.bytes_accessed = v; });
  get_column<int>(ops, "collective_kind", p.ops,
                  [&](Op& o, int v) { o.collective_kind = mapped(collective_kinds, v, "collective kind"); });
  get_column<int>(ops, "group", p.ops, [](Op& o, int v) { o.group = v; });
  get_column<std::int64_t>(ops, "sequence", p.ops, [](Op& o, std::int64_t v) { o.sequence = v; });
  get_column<Bytes>(ops, "payload", p.ops, [](Op& o, Bytes v) { o.payload = v; });
  get_column<int>(ops, "root", p.ops, [](Op& o, int v) { o.root = v; });
  get_column<int>(ops, "peer", p.ops, [](Op& o, int v) { o.peer = v; });
  get_column<TensorId>(ops, "tensor", p.ops, [](Op& o, TensorId v) { o.tensor = v; });
  get_column<std::string>(ops, "phase", p.ops, [](Op& o, std::string v) { o.phase = std::move(v); });

  const auto& tensors = j.at("tensors");
  p.tensors.resize(tensors.at("count").get<std::size_t>());
  get_column<std::string>(tensors, "name", p.tensors, [](TensorInfo& t, std::string v) { t.name = std::move(v); });
  get_column<Bytes>(tensors, "bytes", p.tensors, [](TensorInfo& t, Bytes v) { t.bytes = v; });
  get_column<int>(tensors, "category", p.tensors, [&](TensorInfo& t, int v) { t.category = mapped(categories, v, "category"); });
  get_column<bool>(tensors, "persistent", p.tensors, [](TensorInfo& t, bool v) { t.persistent = v; });
  return p;
}

}  // namespace

std::string encode_header_json(const TraceHeader& h) {
  json j;
  j["format"] = "shardscope-trace";
  j["format_version"] = kFormatVersion;
  j["tool_version"] = h.tool_version;
  j["source"] = h.source;
  j["scenario_json"] = h.scenario_json;
  j["accounting_rules"] = h.accounting_rules;
  j["devices"] = json::array();
  for (const auto& d : h.devices)
    j["devices"].push_back({{"rank", d.rank}, {"name", d.name}, {"capacity", d.capacity}, {"physical_device", d.physical_device}});
  if (h.plan) {
    const Plan& plan = *h.plan;
    json p;
    p["legend"] = legend();
    p["strategy"] = plan.strategy;
    p["behaviour"] = plan.behaviour;
    p["groups"] = plan.groups;
    p["notes"] = plan.notes;
    p["programs"] = json::array();
    std::multimap<std::uint64_t, const Program*> stored;  // by program_hash
    for (const auto& program : plan.programs) {
      const std::uint64_t hash = program_hash(program);
      const Program* same = nullptr;
      for (auto [it, last] = stored.equal_range(hash); it != last && !same; ++it)
        if (same_program(*it->second, program)) same = it->second;
      if (same) {
        p["programs"].push_back({{"rank", program.rank}, {"same_as", same->rank}});
      } else {
        stored.emplace(hash, &program);
        json body = program_json(program);
        body["rank"] = program.rank;
        p["programs"].push_back(std::move(body));
      }
    }
    j["plan"] = std::move(p);
  } else {
    j["plan"] = nullptr;
  }
  return j.dump();
}

TraceHeader decode_header_json(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::runtime_error("header is not valid JSON");
  if (!j.is_object() || j.value("format", "") != "shardscope-trace") throw std::runtime_error("header is not a ShardScope trace header");
  try {
    TraceHeader h;
    h.format_version = j.at("format_version").get<int>();
    h.tool_version = j.at("tool_version").get<std::string>();
    h.source = j.at("source").get<std::string>();
    h.scenario_json = j.at("scenario_json").get<std::string>();
    h.accounting_rules = j.at("accounting_rules").get<std::string>();
    for (const auto& d : j.at("devices"))
      h.devices.push_back({d.at("rank").get<int>(), d.at("name").get<std::string>(), d.at("capacity").get<Bytes>(),
                           d.at("physical_device").get<int>()});
    const auto& p = j.at("plan");
    if (!p.is_null()) {
      auto plan = std::make_shared<Plan>();
      plan->strategy = p.at("strategy").get<std::string>();
      plan->behaviour = p.at("behaviour").get<std::string>();
      plan->groups = p.at("groups").get<std::vector<std::vector<int>>>();
      plan->notes = p.at("notes").get<std::vector<std::string>>();
      const Legend file_legend(p.at("legend"));
      std::map<int, std::size_t> index_of_rank;
      for (const auto& program : p.at("programs")) {
        Program decoded;
        if (program.contains("same_as")) {
          const auto it = index_of_rank.find(program.at("same_as").get<int>());
          if (it == index_of_rank.end()) throw std::runtime_error("program refers to a rank stored after it");
          decoded = plan->programs[it->second];
        } else {
          decoded = program_from_json(program, file_legend);
        }
        decoded.rank = program.at("rank").get<int>();
        index_of_rank[decoded.rank] = plan->programs.size();
        plan->programs.push_back(std::move(decoded));
      }
      h.plan = std::move(plan);
    }
    return h;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("header field missing or of the wrong type (") + e.what() + ")");
  }
}

}  // namespace shardscope::trace_format
