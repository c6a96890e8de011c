// import_profiler_trace: Kineto's Chrome trace (torch/csrc/profiler/kineto_shim / libkineto's ChromeTraceLogger:
// "traceEvents" with cat "cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset", and "[memory]"
// instant events) or the legacy profiler's array (torch/autograd/profiler_util.py EventList.export_chrome_trace)
// turned into trace events (see profiler_trace_import.h).
#include "trace/import/profiler_trace_import.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/json_input.h"
#include "trace/import/import_input.h"

namespace shardscope {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxSpanText = 200;  // kernel names are whole template instantiations

struct Span {
  std::string name;
  double ts = 0, dur = 0;
  std::string thread;  // pid / tid as the file spells them
  int rank = 0;
  Stream stream = Stream::Compute;
  std::optional<std::int64_t> correlation;  // a kernel's, memcpy's or memset's: its launch's
};

// The host ops open around an instant on one thread.
struct HostContext {
  bool in_backward = false, in_zero_grad = false;
  std::optional<double> optimizer_step_end;  // inside Optimizer.step#...: when that step ends
  const Span* op = nullptr;                  // the innermost op
};

// An instant whose host context is wanted: a [memory] event, a kernel's launch.
struct HostProbe {
  const std::string* thread;
  double ts;
  std::size_t order;  // ties keep it
  HostContext* out;
};

struct MemoryEvent {
  double ts = 0;
  std::size_t order = 0;  // position in the file: ties keep it
  Bytes bytes = 0;
  std::optional<Bytes> total_allocated, total_reserved;
  std::uint64_t address = 0;
  std::string thread;
  int device_type = 0, device_id = 0;
  HostContext context;  // the ops around it on its thread; the innermost names the allocation
};

std::optional<double> number(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<std::int64_t> integer(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::string thread_key(const json& e) {
  const auto pid = e.find("pid");
  const auto tid = e.find("tid");
  return (pid == e.end() ? std::string("?") : pid->dump()) + "/" + (tid == e.end() ? std::string("?") : tid->dump());
}

std::string cut_text(std::string s) {
  if (s.size() <= kMaxSpanText) return s;
  std::size_t n = kMaxSpanText;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 sequence
  s.resize(n);
  return s + "…";
}

bool is_backward(std::string_view name) { return name.starts_with("autograd::engine::evaluate_function"); }

class ProfilerImport {
 public:
  explicit ProfilerImport(std::string source) : source_(std::move(source)) {}

  ImportedRun run(const json& root) {
    const json* events = &root;
    legacy_ = root.is_array();
    if (root.is_object()) {
      const auto it = root.find("traceEvents");
      if (it == root.end() || !it->is_array()) throw ImportError(source_ + ": not a profiler trace: no \"traceEvents\" array");
      events = &*it;
      if (const auto props = root.find("deviceProperties"); props != root.end() && props->is_array())
        for (const json& p : *props)
          if (p.is_object() && integer(p, "id")) device_props_[static_cast<int>(*integer(p, "id"))] = &p;
    } else if (!root.is_array()) {
      throw ImportError(source_ + ": not a profiler trace: the JSON is neither an object with \"traceEvents\" nor an array of events");
    }
    std::size_t order = 0;
    for (const json& e : *events) read_event(e, order++);
    if (host_spans_.empty() && gpu_spans_.empty() && memory_.empty())
      throw ImportError(source_ + ": the profiler trace holds no CPU ops, kernels or [memory] events");
    assign_ranks();
    classify_by_host_ops();
    ImportedRun out;
    build(out);
    return out;
  }

 private:
  void read_event(const json& e, std::size_t order) {
    if (!e.is_object()) return;
    const auto name_it = e.find("name");
    if (name_it == e.end() || !name_it->is_string()) return;
    const std::string& name = name_it->get_ref<const std::string&>();
    const auto ph = e.find("ph");
    const std::string phase = ph != e.end() && ph->is_string() ? ph->get<std::string>() : "";
    const auto cat_it = e.find("cat");
    const std::string cat = cat_it != e.end() && cat_it->is_string() ? cat_it->get<std::string>() : "";
    const auto ts = number(e, "ts");
    if (!ts) return;
    const json empty = json::object();
    const auto args_it = e.find("args");
    const json& args = args_it != e.end() && args_it->is_object() ? *args_it : empty;
    if (name == "[memory]") {
      MemoryEvent m;
      m.ts = *ts;
      m.order = order;
      const auto bytes = integer(args, "Bytes");
      if (!bytes) return;
      if (*bytes > kMaxTraceBytes || *bytes < -kMaxTraceBytes) throw ImportError(source_ + ": a [memory] event's Bytes is out of range");
      m.bytes = *bytes;
      m.total_allocated = integer(args, "Total Allocated");
      m.total_reserved = integer(args, "Total Reserved");
      m.address = static_cast<std::uint64_t>(integer(args, "Addr").value_or(0));
      m.device_type = static_cast<int>(std::clamp<std::int64_t>(integer(args, "Device Type").value_or(0), -1, 1 << 20));
      m.device_id = static_cast<int>(std::clamp<std::int64_t>(integer(args, "Device Id").value_or(0), -1, kMaxTraceRanks));
      m.thread = thread_key(e);
      note_time(m.ts);
      memory_.push_back(std::move(m));
      return;
    }
    if (phase != "X") return;
    const double dur = std::max(0.0, number(e, "dur").value_or(0));
    Span s{cut_text(name), *ts, dur, thread_key(e), 0, Stream::Compute, std::nullopt};
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      // A launch (cudaLaunchKernel, cudaMemcpyAsync, ...): its kernel names the same correlation id.
      if (const auto id = integer(args, "correlation")) launches_[*id] = {thread_key(e), *ts};
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      const auto device = integer(args, "device");
      if (!device || *device < 0 || *device >= kMaxTraceRanks) return;
      s.rank = static_cast<int>(*device);
      s.correlation = integer(args, "correlation");
      s.stream = cat != "kernel" ? Stream::Copy : name.find("nccl") != std::string::npos ? Stream::Communication : Stream::Compute;
      gpu_ids_.insert(s.rank);
      note_time(s.ts);
      note_time(s.ts + s.dur);
      gpu_spans_.push_back(std::move(s));
    } else if (cat == "cpu_op" || cat == "user_annotation" || (legacy_ && cat.empty())) {
      note_time(s.ts);
      note_time(s.ts + s.dur);
      host_ops_.push_back(s);  // every op, nested too: the memory events' context
      if (!name.starts_with("ProfilerStep#")) host_spans_.push_back(std::move(s));
    }
  }

  void note_time(double ts) {
    t_min_ = std::min(t_min_, ts);
    t_max_ = std::max(t_max_, ts);
  }

  void assign_ranks() {
    for (const MemoryEvent& m : memory_)
      if (!on_host(m)) gpu_ids_.insert(m.device_id);
    if (gpu_ids_.size() >= static_cast<std::size_t>(kMaxTraceRanks)) throw ImportError(source_ + ": names more devices than a trace may hold");
    int r = 0;
    for (int id : gpu_ids_) rank_of_gpu_[id] = r++;
    host_rank_ = r;
  }

  // c10::DeviceType 0 is the CPU; an accelerator event without a device index is counted on the host too.
  static bool on_host(const MemoryEvent& m) { return m.device_type == 0 || m.device_id < 0; }
  int rank_of(const MemoryEvent& m) const { return on_host(m) ? host_rank_ : rank_of_gpu_.at(m.device_id); }

  // The host ops around each probe on its thread, by one sweep per thread over ops sorted by start (outer first).
  void find_host_contexts(std::vector<HostProbe>& probes) const {
    std::map<std::string, std::vector<const Span*>> ops;
    for (const Span& s : host_ops_) ops[s.thread].push_back(&s);
    for (auto& [thread, list] : ops)
      std::sort(list.begin(), list.end(), [](const Span* a, const Span* b) { return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur; });
    std::sort(probes.begin(), probes.end(), [](const HostProbe& a, const HostProbe& b) { return a.ts != b.ts ? a.ts < b.ts : a.order < b.order; });
    std::map<std::string, std::pair<std::size_t, std::vector<const Span*>>> sweep;  // thread -> (next op, open ops)
    for (const HostProbe& probe : probes) {
      const auto list = ops.find(*probe.thread);
      if (list == ops.end()) continue;
      auto& [next, open] = sweep[*probe.thread];
      while (next < list->second.size() && list->second[next]->ts <= probe.ts) {
        const Span* op = list->second[next++];
        while (!open.empty() && open.back()->ts + open.back()->dur < op->ts) open.pop_back();
        open.push_back(op);
      }
      while (!open.empty() && open.back()->ts + open.back()->dur < probe.ts) open.pop_back();
      HostContext& c = *probe.out;
      if (!open.empty()) c.op = open.back();
      for (const Span* op : open) {
        if (op->name.starts_with("Optimizer.step#")) c.optimizer_step_end = op->ts + op->dur;
        if (op->name.starts_with("Optimizer.zero_grad#")) c.in_zero_grad = true;
        if (is_backward(op->name)) c.in_backward = true;
      }
    }
  }

  void classify_by_host_ops() {
    std::vector<HostProbe> probes;
    for (MemoryEvent& m : memory_) probes.push_back({&m.thread, m.ts, m.order, &m.context});
    // A kernel's (memcpy's, memset's) context is its launch's: what the host was running when it queued it.
    launch_contexts_.assign(gpu_spans_.size(), HostContext{});
    for (std::size_t i = 0; i < gpu_spans_.size(); ++i)
      if (const auto& id = gpu_spans_[i].correlation)
        if (const auto launch = launches_.find(*id); launch != launches_.end())
          probes.push_back({&launch->second.first, launch->second.second, i, &launch_contexts_[i]});
    find_host_contexts(probes);
    for (const Span& s : host_ops_)
      if (s.name.starts_with("Optimizer.step#")) optimizer_steps_.push_back({s.ts, s.ts + s.dur});
    std::sort(optimizer_steps_.begin(), optimizer_steps_.end());
    for (const auto& [begin, end] : optimizer_steps_) optimizer_ends_.push_back(end);
    std::sort(optimizer_ends_.begin(), optimizer_ends_.end());
  }

  // The training step a host instant belongs to: step k ends with the k-th Optimizer.step; after the last, none (0).
  int step_at(double ts) const {
    const auto done = std::lower_bound(optimizer_ends_.begin(), optimizer_ends_.end(), ts) - optimizer_ends_.begin();
    return static_cast<std::size_t>(done) < optimizer_ends_.size() ? static_cast<int>(done) + 1 : 0;
  }

  // A kernel's phase, from its launch's host ops, in front of its name so the window colours it (span_kind.h).
  static std::string phase_prefix(const HostContext& c) {
    if (c.in_backward) return "backward · ";
    if (c.optimizer_step_end) return "optimizer step · ";
    if (c.in_zero_grad || c.op == nullptr) return "";
    return "forward · ";
  }

  TimeNs time_ns(double ts) const {
    const double ns = (ts - t_min_) * 1000.0;
    if (!(ns <= static_cast<double>(kMaxTraceTimeNs))) throw ImportError(source_ + ": event times span more than a trace may hold");
    return static_cast<TimeNs>(std::llround(ns));
  }

  struct Item {  // one event to emit, sorted by time within its rank
    TimeNs t = 0;
    int order = 0;  // at one time: ends (0), then memory (1), then begins (2)
    std::size_t seq = 0;
    TraceEvent event;
  };

  // steps[i]: spans[i]'s training step.
  void add_spans(std::vector<Item>& items, const std::vector<Span>& spans, const std::vector<int>& steps, std::vector<OpIndex>& next_op) {
    for (std::size_t i = 0; i < spans.size(); ++i) {
      const Span& s = spans[i];
      const OpIndex op = next_op[static_cast<std::size_t>(s.rank)]++;
      TraceEvent begin;
      begin.kind = TraceEventKind::OpBegin;
      begin.rank = s.rank;
      begin.step = steps[i];
      begin.op = op;
      begin.stream = s.stream;
      begin.t_ns = time_ns(s.ts);
      begin.text = s.name;
      TraceEvent end = begin;
      end.kind = TraceEventKind::OpEnd;
      end.t_ns = time_ns(s.ts + s.dur);
      end.text.clear();
      // A span that took no time ends right after it begins (sorted as a begin, then its end next).
      items.push_back({begin.t_ns, 2, items.size(), std::move(begin)});
      items.push_back({end.t_ns, end.t_ns == items.back().t ? 2 : 0, items.size(), std::move(end)});
    }
  }

  // Host: the outermost op of each thread (ops sorted by start, longer first; one inside the last kept is dropped).
  std::vector<Span> outermost_host_spans() const {
    std::map<std::string, std::vector<Span>> by_thread;
    for (const Span& s : host_spans_) by_thread[s.thread].push_back(s);
    std::vector<Span> out;
    for (auto& [thread, list] : by_thread) {
      std::sort(list.begin(), list.end(), [](const Span& a, const Span& b) { return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur; });
      double reach = -std::numeric_limits<double>::infinity();
      for (Span& s : list) {
        if (s.ts < reach) continue;
        reach = s.ts + s.dur;
        s.rank = host_rank_;
        out.push_back(std::move(s));
      }
    }
    return out;
  }

  void add_memory(std::vector<Item>& items, ImportedRun& out) {
    std::map<int, std::vector<MemoryEvent*>> by_rank;
    for (MemoryEvent& m : memory_) by_rank[rank_of(m)].push_back(&m);
    std::size_t mismatched = 0;
    for (auto& entry : by_rank) {
      const int rank = entry.first;  // not a structured binding: lambdas below capture it (clang 14 refuses those)
      std::vector<MemoryEvent*>& list = entry.second;
      std::sort(list.begin(), list.end(), [](const MemoryEvent* a, const MemoryEvent* b) { return a->ts != b->ts ? a->ts < b->ts : a->order < b->order; });
      // Each allocation's free (by address), for the categories that depend on what happens later.
      std::vector<std::optional<std::size_t>> freed_at(list.size());
      std::unordered_map<std::uint64_t, std::size_t> open;
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i]->bytes > 0) open[list[i]->address] = i;
        else if (list[i]->bytes < 0)
          if (auto it = open.find(list[i]->address); it != open.end()) {
            freed_at[it->second] = i;
            open.erase(it);
          }
      }
      Bytes allocated = list.front()->total_allocated ? *list.front()->total_allocated - list.front()->bytes : 0;
      allocated = std::clamp<Bytes>(allocated, 0, kMaxTraceBytes);
      Bytes reserved = 0;
      auto emit = [&](const MemoryEvent& m, TraceEventKind kind, Bytes bytes, Category category, TensorId tensor, std::string text) {
        allocated += kind == TraceEventKind::Alloc ? bytes : -bytes;
        if (allocated > kMaxTraceBytes || allocated < -kMaxTraceBytes) throw ImportError(source_ + ": memory events add up past what a trace may hold");
        if (m.total_reserved) reserved = std::clamp<Bytes>(*m.total_reserved, 0, kMaxTraceBytes);
        TraceEvent e;
        e.kind = kind;
        e.rank = rank;
        e.step = step_at(m.ts);
        e.t_ns = time_ns(m.ts);
        e.bytes = bytes;
        e.category = category;
        e.tensor = tensor;
        e.allocated_after = allocated;
        e.reserved_after = reserved;
        e.text = std::move(text);
        items.push_back({e.t_ns, 1, items.size(), std::move(e)});
      };
      if (allocated > 0) {
        const Bytes before = allocated;
        allocated = 0;
        emit(*list.front(), TraceEventKind::Alloc, before, Category::Temporaries, -1, "allocated before the profiler started");
      }
      std::unordered_map<std::uint64_t, std::pair<Category, TensorId>> live;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const MemoryEvent& m = *list[i];
        if (m.bytes > 0) {
          const Category category = category_of(list, i, freed_at[i]);
          live[m.address] = {category, static_cast<TensorId>(i)};
          emit(m, TraceEventKind::Alloc, m.bytes, category, static_cast<TensorId>(i), m.context.op ? m.context.op->name : "");
        } else if (m.bytes < 0) {
          const auto it = live.find(m.address);
          const auto [category, tensor] = it != live.end() ? it->second : std::pair{Category::Temporaries, TensorId{-1}};
          if (it != live.end()) live.erase(it);
          emit(m, TraceEventKind::Free, -m.bytes, category, tensor, "");
        } else {
          continue;
        }
        if (m.total_allocated && *m.total_allocated != allocated) ++mismatched;
      }
    }
    if (mismatched > 0)
      out.notes.push_back(std::to_string(mismatched) + " [memory] events' \"Total Allocated\" differ from the running sum of \"Bytes\" "
                          "(events lost, or several allocators on one device)");
  }

  Category category_of(const std::vector<MemoryEvent*>& list, std::size_t i, std::optional<std::size_t> freed) const {
    const MemoryEvent& m = *list[i];
    if (m.context.optimizer_step_end)
      return !freed || list[*freed]->ts > *m.context.optimizer_step_end ? Category::OptimizerState : Category::Temporaries;
    if (m.context.in_backward) {
      if (!freed || list[*freed]->context.in_zero_grad) return Category::Gradients;
      // The first Optimizer.step to start after it (optimizer_steps_ is sorted by start).
      const auto next_step = std::upper_bound(optimizer_steps_.begin(), optimizer_steps_.end(), m.ts,
                                              [](double ts, const std::pair<double, double>& step) { return ts < step.first; });
      return next_step != optimizer_steps_.end() && list[*freed]->ts > next_step->first ? Category::Gradients : Category::Temporaries;
    }
    if (freed && list[*freed]->context.in_backward) return Category::Activations;
    return Category::Temporaries;
  }

  // ShardScope's phases on every rank, at host times (the [memory] events' clock): each Optimizer.step's begin and end
  // are its step's before_step and after_step, the step's first backward op its forward (the forward has ended).
  void add_phases(std::vector<Item>& items, const std::vector<TraceDevice>& devices) const {
    std::vector<double> backward_starts;
    for (const Span& s : host_ops_)
      if (is_backward(s.name)) backward_starts.push_back(s.ts);
    std::sort(backward_starts.begin(), backward_starts.end());
    double step_begin = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < optimizer_steps_.size(); ++k) {
      const auto [begin, end] = optimizer_steps_[k];
      std::vector<std::pair<const char*, double>> phases;
      const auto backward = std::upper_bound(backward_starts.begin(), backward_starts.end(), step_begin);
      if (backward != backward_starts.end() && *backward < begin) phases.push_back({"forward", *backward});
      phases.push_back({"before_step", begin});
      phases.push_back({"after_step", end});
      for (const auto& [name, ts] : phases)
        for (const TraceDevice& d : devices) {
          TraceEvent e;
          e.kind = TraceEventKind::Phase;
          e.rank = d.rank;
          e.step = static_cast<int>(k) + 1;
          e.t_ns = time_ns(ts);
          e.text = name;
          items.push_back({e.t_ns, 1, items.size(), std::move(e)});
        }
      step_begin = end;
    }
  }

  void build(ImportedRun& out) {
    TraceHeader& h = out.header;
    h.format_version = 2;
    h.source = std::string("pytorch profiler trace") + (legacy_ ? " (legacy)" : "");
    h.accounting_rules = gpu_ids_.empty() ? "PyTorch profiler [memory] events (CPU allocator)" : "PyTorch profiler [memory] events (caching allocator)";
    h.scenario_json = json{{"name", std::filesystem::path(source_).filename().string()}}.dump();
    for (const auto& [id, rank] : rank_of_gpu_) {
      TraceDevice d{rank, "CUDA device " + std::to_string(id), 0, id};
      if (const auto p = device_props_.find(id); p != device_props_.end()) {
        if (const auto n = p->second->find("name"); n != p->second->end() && n->is_string()) d.name = n->get<std::string>();
        d.capacity = std::clamp<Bytes>(integer(*p->second, "totalGlobalMem").value_or(0), 0, kMaxTraceBytes);
      }
      h.devices.push_back(d);
    }
    const bool host_used = !host_spans_.empty() || std::any_of(memory_.begin(), memory_.end(), [](const MemoryEvent& m) { return on_host(m); });
    if (host_used) h.devices.push_back(TraceDevice{host_rank_, gpu_ids_.empty() ? "CPU" : "CPU (host: PyTorch ops)", 0, -1});

    std::vector<Item> items;
    std::vector<OpIndex> next_op(h.devices.size() + 1, 0);
    std::vector<Span> gpu = gpu_spans_;
    std::vector<int> gpu_steps;
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      Span& s = gpu[i];
      s.rank = rank_of_gpu_.at(s.rank);
      const bool launched = s.correlation && launches_.count(*s.correlation) > 0;
      if (s.stream == Stream::Compute) s.name = phase_prefix(launch_contexts_[i]) + s.name;
      gpu_steps.push_back(step_at(launched ? launches_.at(*s.correlation).second : s.ts));
    }
    add_spans(items, gpu, gpu_steps, next_op);
    const std::vector<Span> host = outermost_host_spans();
    std::vector<int> host_steps;
    for (const Span& s : host) host_steps.push_back(step_at(s.ts));
    add_spans(items, host, host_steps, next_op);
    add_memory(items, out);
    add_phases(items, h.devices);
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.event.rank != b.event.rank) return a.event.rank < b.event.rank;
      if (a.t != b.t) return a.t < b.t;
      if (a.order != b.order) return a.order < b.order;
      return a.seq < b.seq;
    });
    TimeNs t_end = 0;
    for (Item& item : items) {
      t_end = std::max(t_end, item.t);
      out.events.push_back(std::move(item.event));
    }
    TraceEvent end;
    end.kind = TraceEventKind::RunEnd;
    end.rank = -1;
    end.t_ns = t_end;
    end.text = "ok";
    out.events.push_back(std::move(end));
    if (memory_.empty())
      out.notes.push_back(legacy_ ? "a legacy profiler trace (PyTorch without Kineto): it holds ops only, no [memory] events"
                                  : "no [memory] events: record with torch.profiler.profile(profile_memory=True) to see memory");
  }

  std::string source_;
  bool legacy_ = false;
  std::vector<Span> host_spans_, host_ops_, gpu_spans_;
  std::vector<MemoryEvent> memory_;
  std::set<int> gpu_ids_;
  std::map<int, int> rank_of_gpu_;
  std::map<int, const json*> device_props_;
  std::unordered_map<std::int64_t, std::pair<std::string, double>> launches_;  // correlation -> (host thread, ts)
  std::vector<HostContext> launch_contexts_;                                  // per gpu_spans_ entry
  std::vector<std::pair<double, double>> optimizer_steps_;                    // Optimizer.step# (begin, end), by begin
  std::vector<double> optimizer_ends_;                                         // their ends, sorted
  int host_rank_ = 0;
  double t_min_ = std::numeric_limits<double>::infinity();
  double t_max_ = -std::numeric_limits<double>::infinity();
};

}  // namespace

ImportedRun import_profiler_trace(const std::string& text, const std::string& source) {
  json root;
  try {
    root = parse_json_input(text, source);
  } catch (const JsonInputError& error) {
    throw ImportError(error.what());
  }
  return ProfilerImport(source).run(root);
}

}  // namespace shardscope
