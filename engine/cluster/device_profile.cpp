// Device profiles: strict reading of versions 1 and 2 (every point checked, every problem named by its JSON path),
// writing version 2, and finding a shipped profile by name under assets/devices.
#include "cluster/device_profile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/json_input.h"
#include "model/transformer.h"  // assets_dir()

namespace shardscope {

namespace {

using nlohmann::json;

// Profiles are a few hundred KiB (the H200 one 0.6 MB); the cap only keeps a wrong file from being read whole.
constexpr std::int64_t kMaxProfileBytes = 64 * 1024 * 1024;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw DeviceProfileError(source_ + ": " + where + ": " + problem);
  }

  const json& object(const json& parent, const std::string& key, const std::string& where) const {
    const auto it = parent.find(key);
    if (it == parent.end()) fail(where + key, "missing");
    if (!it->is_object()) fail(where + key, "must be an object (got " + describe_json_value(*it) + ")");
    return *it;
  }

  // A positive finite number; `allow_zero` for sizes that may be 0 (an overhead not measured).
  double number(const json& point, const std::string& key, const std::string& where, bool allow_zero = false) const {
    const auto it = point.find(key);
    if (it == point.end()) fail(where + "." + key, "missing");
    if (!it->is_number()) fail(where + "." + key, "must be a number (got " + describe_json_value(*it) + ")");
    const double value = it->get<double>();
    if (!std::isfinite(value) || value < 0 || (!allow_zero && value == 0))
      fail(where + "." + key, std::string("must be a ") + (allow_zero ? "non-negative" : "positive") +
                                  " finite number (got " + describe_json_value(*it) + ")");
    return value;
  }

  double optional_number(const json& point, const std::string& key, const std::string& where) const {
    return point.contains(key) ? number(point, key, where, /*allow_zero=*/true) : 0;
  }

  std::string text(const json& parent, const std::string& key, const std::string& where) const {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return "";
    if (!it->is_string()) fail(where + key, "must be a string (got " + describe_json_value(*it) + ")");
    return it->get<std::string>();
  }

  // The array of objects at `key`; `where` is its path.
  const json& points(const json& parent, const std::string& key, const std::string& where) const {
    const json& array = parent.at(key);
    if (!array.is_array()) fail(where, "must be an array of points (got " + describe_json_value(array) + ")");
    for (std::size_t i = 0; i < array.size(); ++i)
      if (!array[i].is_object()) fail(where + "[" + std::to_string(i) + "]", "must be an object (got " + describe_json_value(array[i]) + ")");
    return array;
  }

 private:
  std::string source_;
};

std::string at(const std::string& where, std::size_t i) { return where + "[" + std::to_string(i) + "]"; }

void read_gemm(const Reader& r, const json& root, DeviceProfile& p) {
  if (!root.contains("gemm")) return;
  const json& gemm = r.object(root, "gemm", "");
  for (const auto& [dtype, _] : gemm.items()) {
    const std::string where = "gemm." + dtype;
    const json& array = r.points(gemm, dtype, where);
    auto& curve = p.gemm[dtype];
    for (std::size_t i = 0; i < array.size(); ++i) {
      const json& point = array[i];
      ProfileGemmPoint g;
      g.layout = r.text(point, "layout", at(where, i) + ".");
      if (g.layout.empty()) r.fail(at(where, i) + ".layout", "missing");
      // The layouts the simulator looks up (sim/profile_costs.cpp); another name would be read and never used.
      if (g.layout != "forward" && g.layout != "input_grad" && g.layout != "weight_grad" && g.layout != "batched")
        r.fail(at(where, i) + ".layout", "must be forward, input_grad, weight_grad or batched (got \"" + g.layout + "\")");
      g.m = r.number(point, "m", at(where, i));
      g.n = r.number(point, "n", at(where, i));
      g.k = r.number(point, "k", at(where, i));
      g.batch = point.contains("batch") ? r.number(point, "batch", at(where, i)) : 1;
      if (g.batch < 1 || g.batch != std::floor(g.batch))
        r.fail(at(where, i) + ".batch", "must be a whole number of products, at least 1 (got " + describe_json_value(point["batch"]) + ")");
      g.seconds = r.number(point, "seconds", at(where, i));
      curve.push_back(std::move(g));
    }
  }
}

void read_attention(const Reader& r, const json& root, DeviceProfile& p) {
  if (!root.contains("attention")) return;
  const json& attention = r.object(root, "attention", "");
  for (const auto& [dtype, _] : attention.items()) {
    const std::string where = "attention." + dtype;
    const json& array = r.points(attention, dtype, where);
    auto& curve = p.attention[dtype];
    for (std::size_t i = 0; i < array.size(); ++i) {
      const json& point = array[i];
      ProfileAttentionPoint a;
      a.kernel = r.text(point, "kernel", at(where, i) + ".");
      a.batch_heads = r.number(point, "batch_heads", at(where, i));
      a.seq = r.number(point, "seq", at(where, i));
      a.head_dim = r.number(point, "head_dim", at(where, i));
      a.forward_s = r.number(point, "forward_s", at(where, i));
      // PyTorch's backward is (forward + backward) − forward, which a noisy small shape can leave at 0.
      a.backward_s = r.number(point, "backward_s", at(where, i), /*allow_zero=*/true);
      curve.push_back(std::move(a));
    }
  }
}

std::vector<ProfileSizePoint> read_sizes(const Reader& r, const json& parent, const std::string& key,
                                         const std::string& where, const char* size_key) {
  const json& array = r.points(parent, key, where);
  std::vector<ProfileSizePoint> curve;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const json& point = array[i];
    ProfileSizePoint s;
    s.size = r.number(point, size_key, at(where, i));
    s.seconds = r.number(point, "seconds", at(where, i));
    s.elements = r.optional_number(point, "elements", at(where, i));
    s.tensors = r.optional_number(point, "tensors", at(where, i));
    curve.push_back(s);
  }
  return curve;
}

void read_curves(const Reader& r, const json& root, DeviceProfile& p) {
  if (root.contains("elementwise")) {
    const json& elementwise = r.object(root, "elementwise", "");
    for (const auto& [op, _] : elementwise.items()) {
      const json& by_dtype = r.object(elementwise, op, "elementwise.");
      for (const auto& [dtype, __] : by_dtype.items())
        p.elementwise[op][dtype] = read_sizes(r, by_dtype, dtype, "elementwise." + op + "." + dtype, "bytes");
    }
  }
  if (root.contains("optimizer")) {
    const json& optimizer = r.object(root, "optimizer", "");
    for (const auto& [name, _] : optimizer.items())
      p.optimizer[name] = read_sizes(r, optimizer, name, "optimizer." + name, "parameters");
  }
  if (root.contains("copy")) {
    const json& copy = r.object(root, "copy", "");
    for (const auto& [name, _] : copy.items()) p.copy[name] = read_sizes(r, copy, name, "copy." + name, "bytes");
  }
}

void read_collectives(const Reader& r, const json& root, DeviceProfile& p) {
  if (!root.contains("collectives")) return;
  const json& collectives = r.object(root, "collectives", "");
  p.collective_backend = r.text(collectives, "backend", "collectives.");
  p.collective_note = r.text(collectives, "note", "collectives.");
  for (const auto& [kind, value] : collectives.items()) {
    if (kind == "backend" || kind == "note") continue;
    if (kind == "error") continue;  // calibrate.py keeps a failed rank's error text and the rest of the profile
    const std::string where = "collectives." + kind;
    const json& array = r.points(collectives, kind, where);
    auto& curve = p.collectives[kind];
    for (std::size_t i = 0; i < array.size(); ++i) {
      ProfileCollectivePoint c;
      c.ranks = r.number(array[i], "ranks", at(where, i));
      c.bytes = r.number(array[i], "bytes", at(where, i));
      c.seconds = r.number(array[i], "seconds", at(where, i));
      curve.push_back(c);
    }
  }
}

json sizes_json(const std::vector<ProfileSizePoint>& curve, const char* size_key) {
  json array = json::array();
  for (const auto& s : curve) {
    json point = {{size_key, s.size}, {"seconds", s.seconds}};
    if (s.elements > 0) point["elements"] = s.elements;
    if (s.tensors > 0) point["tensors"] = s.tensors;
    if (std::string(size_key) == "bytes" && s.seconds > 0) point["bytes_per_s"] = s.size / s.seconds;
    array.push_back(std::move(point));
  }
  return array;
}

}  // namespace

std::string profile_dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::Fp32: return "float32";
    case Dtype::Bf16: return "bfloat16";
    case Dtype::Fp16: return "float16";
  }
  return "float32";
}

DeviceProfile parse_device_profile(const std::string& text, const std::string& source) {
  json root;
  try {
    root = parse_json_input(text, source);
  } catch (const JsonInputError& error) {
    throw DeviceProfileError(error.what());
  }
  const Reader r(source);
  if (!root.is_object()) r.fail("the file", "must be a JSON object (got " + describe_json_value(root) + ")");
  if (r.text(root, "format", "") != kDeviceProfileFormat)
    r.fail("format", std::string("must be \"") + kDeviceProfileFormat + "\" (is this a device profile?)");
  DeviceProfile p;
  if (!root.contains("version") || !root["version"].is_number_integer()) r.fail("version", "missing or not an integer");
  p.version = root["version"].get<int>();
  if (p.version < 1 || p.version > kDeviceProfileVersion)
    r.fail("version", std::to_string(p.version) + " is not one this build reads (1 to " +
                          std::to_string(kDeviceProfileVersion) + ")");
  p.source = r.text(root, "source", "");
  p.date = r.text(root, "date", "");
  if (root.contains("machine")) {
    const json& machine = r.object(root, "machine", "");
    p.machine_json = machine.dump();
    p.machine_name = r.text(machine, "name", "machine.");
    p.backend = r.text(machine, "device", "machine.");
  }
  if (root.contains("settings")) p.settings_json = r.object(root, "settings", "").dump();
  if (root.contains("backend")) p.backend = r.text(root, "backend", "");
  if (root.contains("seconds_taken")) p.seconds_taken = r.number(root, "seconds_taken", "", /*allow_zero=*/true);
  if (root.contains("overheads")) {
    const json& o = r.object(root, "overheads", "");
    p.launch_s = r.optional_number(o, "launch_s", "overheads");
    p.synchronize_s = r.optional_number(o, "synchronize_s", "overheads");
    p.executor_op_s = r.optional_number(o, "executor_op_s", "overheads");
  }
  if (root.contains("concurrency")) {
    const json& concurrency = r.object(root, "concurrency", "");
    for (const auto& [kind, _] : concurrency.items()) {
      const std::string where = "concurrency." + kind;
      const json& array = r.points(concurrency, kind, where);
      for (std::size_t i = 0; i < array.size(); ++i)
        p.concurrency[kind].push_back({r.number(array[i], "threads", at(where, i)), r.number(array[i], "slowdown", at(where, i))});
    }
  }
  read_gemm(r, root, p);
  read_attention(r, root, p);
  read_curves(r, root, p);
  read_collectives(r, root, p);
  return p;
}

DeviceProfile load_device_profile_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, kMaxProfileBytes);
  } catch (const JsonInputError& error) {
    throw DeviceProfileError(error.what());
  }
  DeviceProfile profile = parse_device_profile(text, path);
  profile.path = path;
  return profile;
}

std::string device_profile_to_json(const DeviceProfile& p) {
  json root;
  root["format"] = kDeviceProfileFormat;
  root["version"] = kDeviceProfileVersion;
  root["source"] = p.source;
  root["backend"] = p.backend;
  root["machine"] = p.machine_json.empty() ? json::object() : json::parse(p.machine_json);
  if (!p.machine_name.empty()) root["machine"]["name"] = p.machine_name;
  root["date"] = p.date;
  root["settings"] = p.settings_json.empty() ? json::object() : json::parse(p.settings_json);
  root["seconds_taken"] = p.seconds_taken;
  root["overheads"] = {{"launch_s", p.launch_s}, {"synchronize_s", p.synchronize_s}, {"executor_op_s", p.executor_op_s}};
  json concurrency = json::object();
  for (const auto& [kind, curve] : p.concurrency) {
    json array = json::array();
    for (const auto& c : curve) array.push_back({{"threads", c.threads}, {"slowdown", c.slowdown}});
    concurrency[kind] = std::move(array);
  }
  root["concurrency"] = std::move(concurrency);
  json gemm = json::object();
  for (const auto& [dtype, curve] : p.gemm) {
    json array = json::array();
    for (const auto& g : curve)
      array.push_back({{"layout", g.layout}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"batch", g.batch}, {"seconds", g.seconds},
                       {"flop_per_s", 2 * g.batch * g.m * g.n * g.k / g.seconds}});
    gemm[dtype] = std::move(array);
  }
  root["gemm"] = std::move(gemm);
  json attention = json::object();
  for (const auto& [dtype, curve] : p.attention) {
    json array = json::array();
    for (const auto& a : curve)
      array.push_back({{"kernel", a.kernel}, {"batch_heads", a.batch_heads}, {"seq", a.seq}, {"head_dim", a.head_dim},
                       {"forward_s", a.forward_s}, {"backward_s", a.backward_s}});
    attention[dtype] = std::move(array);
  }
  root["attention"] = std::move(attention);
  json elementwise = json::object();
  for (const auto& [op, by_dtype] : p.elementwise)
    for (const auto& [dtype, curve] : by_dtype) elementwise[op][dtype] = sizes_json(curve, "bytes");
  root["elementwise"] = std::move(elementwise);
  json optimizer = json::object();
  for (const auto& [name, curve] : p.optimizer) optimizer[name] = sizes_json(curve, "parameters");
  root["optimizer"] = std::move(optimizer);
  json copy = json::object();
  for (const auto& [name, curve] : p.copy) copy[name] = sizes_json(curve, "bytes");
  root["copy"] = std::move(copy);
  json collectives = {{"backend", p.collective_backend}, {"note", p.collective_note}};
  for (const auto& [kind, curve] : p.collectives) {
    json array = json::array();
    for (const auto& c : curve) array.push_back({{"ranks", c.ranks}, {"bytes", c.bytes}, {"seconds", c.seconds}});
    collectives[kind] = std::move(array);
  }
  root["collectives"] = std::move(collectives);
  return root.dump(1);
}

std::string device_profile_path(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_regular_file(name_or_path, error)) return name_or_path;
  // A bare name (no directory part) may be a shipped profile.
  if (fs::path(name_or_path).parent_path().empty()) {
    const std::string file = name_or_path.ends_with(".json") ? name_or_path : name_or_path + ".json";
    const fs::path shipped = fs::path(assets_dir()) / "devices" / file;
    if (fs::is_regular_file(shipped, error)) return shipped.string();
  }
  std::string shipped;
  for (const auto& name : shipped_device_profiles()) shipped += (shipped.empty() ? "" : ", ") + name;
  throw DeviceProfileError(name_or_path + ": no such file, nor a profile shipped under assets/devices (" +
                           (shipped.empty() ? std::string("none found") : shipped) + ")");
}

std::shared_ptr<const DeviceProfile> cached_device_profile(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  const std::string path = device_profile_path(name_or_path);
  std::error_code error;
  const auto size = fs::file_size(path, error);
  const auto written = fs::last_write_time(path, error).time_since_epoch().count();
  using Key = std::tuple<std::string, std::uintmax_t, std::int64_t>;
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const DeviceProfile>> cache;
  const Key key{fs::absolute(path, error).string(), size, static_cast<std::int64_t>(written)};
  std::lock_guard lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  auto profile = std::make_shared<const DeviceProfile>(load_device_profile_file(path));
  if (cache.size() > 16) cache.clear();  // a window that tries many profiles keeps only recent ones
  cache[key] = profile;
  return profile;
}

std::vector<std::string> shipped_device_profiles() {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(fs::path(assets_dir()) / "devices", error), end; !error && it != end; it.increment(error))
    if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace shardscope
