// The .sstrace header record as JSON: run metadata, devices and the plan, so a trace is labelled from the file
// alone. Ops and tensors are stored as columns (a column whose values are all the default is left out), enums as
// indices into a legend of names written alongside, and a program identical to an earlier rank's is stored as
// {"rank": r, "same_as": earlier}. Op deps are not stored.
// Forward compatibility (engine/trace/file/FORMAT.md): keys this build does not know are ignored, so a later version may
// add header keys without breaking older readers; keys added after the first version (host, recorded_at,
// command_line, the runtime versions) are optional, so older files still read.
#include <limits>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

#include <unistd.h>

#include "core/json_input.h"
#include "trace/file/trace_format.h"

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

// A header value as T, or a runtime_error naming `what`: integers must be integers that fit T (a float, or a value
// out of range, is refused rather than converted), strings strings, booleans booleans.
template <class T>
T as(const json& v, const std::string& what) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
    throw std::runtime_error(what + " is not true or false");
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const auto i = v.get<std::int64_t>();
      if constexpr (std::is_signed_v<T>) {
        if (i >= std::numeric_limits<T>::min() && i <= std::numeric_limits<T>::max()) return static_cast<T>(i);
      } else if (i >= 0 && static_cast<std::uint64_t>(i) <= std::numeric_limits<T>::max()) {
        return static_cast<T>(i);
      }
    }
    throw std::runtime_error(what + " is not an integer in range (" + v.dump() + ")");
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) return v.get<T>();
    throw std::runtime_error(what + " is not a number");
  } else {
    if (v.is_string()) return v.get<std::string>();
    throw std::runtime_error(what + " is not a string");
  }
}

// A byte count: within ±kMaxTraceBytes, as an event's (readers add and scale them).
Bytes bytes_as(const json& v, const std::string& what) {
  const auto b = as<Bytes>(v, what);
  if (b > kMaxTraceBytes || b < -kMaxTraceBytes) throw std::runtime_error(what + " " + std::to_string(b) + " is past ±2^56 bytes");
  return b;
}

const json& array_at(const json& object, const char* key, const std::string& what) {
  const json& v = object.at(key);
  if (!v.is_array()) throw std::runtime_error(what + "." + key + " is not an array");
  return v;
}

// Maps the file's enum indices to this build's enums by name.
template <class Enum>
std::vector<Enum> legend_map(const json& file_legend, const char* key, int count, std::string (*name_of)(Enum)) {
  if (!file_legend.is_object() || !file_legend.contains(key)) throw std::runtime_error(std::string("legend has no '") + key + "'");
  std::vector<Enum> map;
  for (const auto& entry : array_at(file_legend, key, "legend")) {
    const std::string name = as<std::string>(entry, std::string("legend.") + key + " entry");
    int found = -1;
    for (int i = 0; i < count; ++i)
      if (name_of(static_cast<Enum>(i)) == name) found = i;
    if (found < 0) throw std::runtime_error(std::string("unknown ") + key + " '" + name + "'");
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

struct ByteCount {};  // get_column's T for byte counts (range-checked by bytes_as)

template <class T, class Row, class Set>
void get_column(const json& table, const char* key, std::vector<Row>& rows, Set set) {
  if (!table.contains(key)) return;
  const auto& column = table.at(key);
  if (!column.is_array() || column.size() != rows.size())
    throw std::runtime_error(std::string("column '") + key + "' has " + std::to_string(column.size()) + " values for " +
                             std::to_string(rows.size()) + " rows");
  const std::string what = std::string("column '") + key + "'";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if constexpr (std::is_same_v<T, ByteCount>) {
      set(rows[i], bytes_as(column[i], what));
    } else {
      set(rows[i], as<T>(column[i], what));
    }
  }
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
    if (x.name != y.name || x.bytes != y.bytes || x.category != y.category || x.persistent != y.persistent ||
        x.free_completes_late != y.free_completes_late)
      return false;
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
  put_column(ops, "label", p.ops, d.label.str(), [](const Op& o) { return o.label.str(); });
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
  put_column(ops, "phase", p.ops, d.phase.str(), [](const Op& o) { return o.phase.str(); });

  json tensors = json::object();
  const TensorInfo t{};
  tensors["count"] = p.tensors.size();
  put_column(tensors, "name", p.tensors, t.name, [](const TensorInfo& x) { return x.name; });
  put_column(tensors, "bytes", p.tensors, t.bytes, [](const TensorInfo& x) { return x.bytes; });
  put_column(tensors, "category", p.tensors, static_cast<int>(t.category),
             [](const TensorInfo& x) { return static_cast<int>(x.category); });
  put_column(tensors, "persistent", p.tensors, t.persistent, [](const TensorInfo& x) { return x.persistent; });
  put_column(tensors, "free_completes_late", p.tensors, t.free_completes_late,
             [](const TensorInfo& x) { return x.free_completes_late; });
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
    for (const auto& entry : array_at(l, "category", "legend")) {
      const std::string key = as<std::string>(entry, "legend.category entry");
      const auto c = category_from_key(key);
      if (!c) throw std::runtime_error("unknown category '" + key + "'");
      categories.push_back(*c);
    }
  }
};

// Half the machine's memory: a header whose plan would need more is refused before it is decoded (each program is
// a separate allocation that succeeds on its own, so without this the kernel's OOM killer, not bad_alloc, would stop
// a reader of a header whose "same_as" copies add up to more than the machine holds).
std::uint64_t plan_memory_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2;
}

std::uint64_t memory_of(std::uint64_t ops, std::uint64_t tensors) { return ops * sizeof(Op) + tensors * sizeof(TensorInfo); }

// A program's op or tensor count: at most `limit` (the header's bytes: a header cannot describe more ops than it
// has bytes, so a count cannot make the reader allocate what the file does not hold).
std::size_t row_count(const json& table, const char* what, std::size_t limit) {
  const auto n = as<std::size_t>(table.at("count"), std::string(what) + ".count");
  if (n > limit)
    throw std::runtime_error(std::string(what) + ".count " + std::to_string(n) + " is more than the header's " + std::to_string(limit) +
                             " bytes could describe");
  return n;
}

Program program_from_json(const json& j, const Legend& legend, std::size_t limit) {
  // References, not a structured binding: clang 14 cannot capture those in the lambdas below.
  const auto& op_kinds = legend.op_kinds;
  const auto& streams = legend.streams;
  const auto& compute_kinds = legend.compute_kinds;
  const auto& collective_kinds = legend.collective_kinds;
  const auto& categories = legend.categories;
  Program p;
  const auto& ops = j.at("ops");
  p.ops.resize(row_count(ops, "ops", limit));
  get_column<int>(ops, "kind", p.ops, [&](Op& o, int v) { o.kind = mapped(op_kinds, v, "op kind"); });
  get_column<int>(ops, "stream", p.ops, [&](Op& o, int v) { o.stream = mapped(streams, v, "stream"); });
  get_column<std::string>(ops, "label", p.ops, [](Op& o, std::string v) { o.label = std::move(v); });
  get_column<int>(ops, "step", p.ops, [](Op& o, int v) { o.step = v; });
  get_column<int>(ops, "layer", p.ops, [](Op& o, int v) { o.layer = v; });
  get_column<int>(ops, "micro_batch", p.ops, [](Op& o, int v) { o.micro_batch = v; });
  get_column<int>(ops, "compute_kind", p.ops, [&](Op& o, int v) { o.compute_kind = mapped(compute_kinds, v, "compute kind"); });
  get_column<double>(ops, "flops", p.ops, [](Op& o, double v) { o.flops = v; });
  get_column<ByteCount>(ops, "bytes_accessed", p.ops, [](Op& o, Bytes v) { o.bytes_accessed = v; });
  get_column<int>(ops, "collective_kind", p.ops,
                  [&](Op& o, int v) { o.collective_kind = mapped(collective_kinds, v, "collective kind"); });
  get_column<int>(ops, "group", p.ops, [](Op& o, int v) { o.group = v; });
  get_column<std::int32_t>(ops, "sequence", p.ops, [](Op& o, std::int32_t v) { o.sequence = v; });
  get_column<ByteCount>(ops, "payload", p.ops, [](Op& o, Bytes v) { o.payload = v; });
  get_column<int>(ops, "root", p.ops, [](Op& o, int v) { o.root = v; });
  get_column<int>(ops, "peer", p.ops, [](Op& o, int v) { o.peer = v; });
  get_column<TensorId>(ops, "tensor", p.ops, [](Op& o, TensorId v) { o.tensor = v; });
  get_column<std::string>(ops, "phase", p.ops, [](Op& o, std::string v) { o.phase = std::move(v); });

  const auto& tensors = j.at("tensors");
  p.tensors.resize(row_count(tensors, "tensors", limit));
  get_column<std::string>(tensors, "name", p.tensors, [](TensorInfo& t, std::string v) { t.name = std::move(v); });
  get_column<ByteCount>(tensors, "bytes", p.tensors, [](TensorInfo& t, Bytes v) { t.bytes = v; });
  get_column<int>(tensors, "category", p.tensors, [&](TensorInfo& t, int v) { t.category = mapped(categories, v, "category"); });
  get_column<bool>(tensors, "persistent", p.tensors, [](TensorInfo& t, bool v) { t.persistent = v; });
  get_column<bool>(tensors, "free_completes_late", p.tensors, [](TensorInfo& t, bool v) { t.free_completes_late = v; });
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
  // Recording metadata (format.md "Header"): null when not known.
  const auto string_or_null = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
  const auto optional_or_null = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
  j["host"] = string_or_null(h.host);
  j["recorded_at"] = string_or_null(h.recorded_at);
  j["command_line"] = string_or_null(h.command_line);
  j["driver_version"] = optional_or_null(h.driver_version);
  j["cuda_runtime_version"] = optional_or_null(h.cuda_runtime_version);
  j["nccl_version"] = optional_or_null(h.nccl_version);
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
  // Bounded like every JSON reader (nesting depth, no NUL, no trailing bytes): a header nested 100,000 deep would
  // otherwise cost `trace info --json` quadratic output when it is printed back indented.
  json j;
  try {
    j = parse_json_input(std::string(text), "header");
  } catch (const JsonInputError& error) {
    throw std::runtime_error(error.what());
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != "shardscope-trace")
    throw std::runtime_error("header is not a ShardScope trace header");
  // Limits for untrusted files: no more ranks than a scenario can have; no program with more ops or tensors than
  // the header has bytes; and, as programs stored once may be copied to many ranks ("same_as"), no more ops and
  // tensors in all than kPlanRowsPerHeaderByte per header byte (the largest plans ShardScope writes use well under
  // a tenth of that).
  const std::size_t limit = text.size();
  const std::uint64_t total_limit = std::uint64_t{kPlanRowsPerHeaderByte} * text.size();
  try {
    TraceHeader h;
    h.format_version = as<int>(j.at("format_version"), "format_version");
    h.tool_version = as<std::string>(j.at("tool_version"), "tool_version");
    h.source = as<std::string>(j.at("source"), "source");
    h.scenario_json = as<std::string>(j.at("scenario_json"), "scenario_json");
    h.accounting_rules = as<std::string>(j.at("accounting_rules"), "accounting_rules");
    const auto& devices = array_at(j, "devices", "header");
    if (devices.size() > static_cast<std::size_t>(kMaxTraceRanks))
      throw std::runtime_error(std::to_string(devices.size()) + " devices, more than " + std::to_string(kMaxTraceRanks));
    for (const auto& d : devices)
      h.devices.push_back({as<int>(d.at("rank"), "devices[].rank"), as<std::string>(d.at("name"), "devices[].name"),
                           bytes_as(d.at("capacity"), "devices[].capacity"), as<int>(d.at("physical_device"), "devices[].physical_device")});
    // Optional keys (absent in traces written before them): a string or null.
    const auto optional_string = [&](const char* key) -> std::optional<std::string> {
      if (!j.contains(key) || j[key].is_null()) return std::nullopt;
      return as<std::string>(j[key], key);
    };
    h.host = optional_string("host").value_or("");
    h.recorded_at = optional_string("recorded_at").value_or("");
    h.command_line = optional_string("command_line").value_or("");
    h.driver_version = optional_string("driver_version");
    h.cuda_runtime_version = optional_string("cuda_runtime_version");
    h.nccl_version = optional_string("nccl_version");
    const auto& p = j.at("plan");
    if (!p.is_null()) {
      auto plan = std::make_shared<Plan>();
      plan->strategy = as<std::string>(p.at("strategy"), "plan.strategy");
      plan->behaviour = as<std::string>(p.at("behaviour"), "plan.behaviour");
      for (const auto& group : array_at(p, "groups", "plan")) {
        if (!group.is_array()) throw std::runtime_error("plan.groups[] is not an array");
        auto& ranks = plan->groups.emplace_back();
        for (const auto& rank : group) ranks.push_back(as<int>(rank, "plan.groups[][]"));
      }
      for (const auto& note : array_at(p, "notes", "plan")) plan->notes.push_back(as<std::string>(note, "plan.notes[]"));
      const Legend file_legend(p.at("legend"));
      const auto& programs = array_at(p, "programs", "plan");
      if (programs.size() > static_cast<std::size_t>(kMaxTraceRanks))
        throw std::runtime_error(std::to_string(programs.size()) + " programs, more than " + std::to_string(kMaxTraceRanks));
      // Every program's size first, copies included, then the limits, and only then anything allocated: a header
      // whose "same_as" copies add up to more than a trace may hold is refused in a pass over its counts (a 1.1 MB
      // header copying one program 40,000 times asked for 78 M ops, 9 GiB and 25 s before it was refused).
      std::vector<std::pair<std::uint64_t, std::uint64_t>> sizes;  // (ops, tensors) of each program
      sizes.reserve(programs.size());
      std::uint64_t ops = 0, tensors = 0;
      for (const auto& program : programs) {
        const int rank = as<int>(program.at("rank"), "plan.programs[].rank");
        if (rank != static_cast<int>(sizes.size()))
          throw std::runtime_error("program " + std::to_string(sizes.size()) + " says it is rank " + std::to_string(rank));
        if (program.contains("same_as")) {
          const int same = as<int>(program.at("same_as"), "plan.programs[].same_as");
          if (same < 0 || same >= rank) throw std::runtime_error("program " + std::to_string(rank) + " refers to a rank stored after it");
          sizes.push_back(sizes[static_cast<std::size_t>(same)]);
        } else {
          const auto count_of = [&](const char* table) { return row_count(program.at(table), table, limit); };
          sizes.emplace_back(count_of("ops"), count_of("tensors"));
        }
        ops += sizes.back().first;
        tensors += sizes.back().second;
      }
      if (ops > kMaxTracePlanOps || tensors > kMaxTracePlanOps)
        throw std::runtime_error("the plan's programs hold " + std::to_string(ops) + " ops and " + std::to_string(tensors) +
                                 " tensors in all (copies of programs stored once included), more than the " +
                                 std::to_string(kMaxTracePlanOps) + " of each a trace may hold (kMaxTracePlanOps)");
      if (ops + tensors > total_limit)
        throw std::runtime_error("the plan's programs hold " + std::to_string(ops + tensors) + " ops and tensors in all, more than its " +
                                 std::to_string(text.size()) + "-byte header could describe (" + std::to_string(kPlanRowsPerHeaderByte) +
                                 " a byte)");
      const std::uint64_t memory_budget = plan_memory_budget();
      if (memory_of(ops, tensors) > memory_budget)
        throw std::runtime_error("not enough memory: its plan needs more than half of this machine's " +
                                 std::to_string(memory_budget / (std::uint64_t{1} << 29)) + " GiB");
      plan->programs.reserve(programs.size());
      for (const auto& program : programs) {
        Program decoded;
        if (program.contains("same_as")) {
          decoded = plan->programs[static_cast<std::size_t>(as<int>(program.at("same_as"), "plan.programs[].same_as"))];
        } else {
          decoded = program_from_json(program, file_legend, limit);
        }
        decoded.rank = static_cast<int>(plan->programs.size());
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
