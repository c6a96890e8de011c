// Chrome trace event JSON (see chrome_trace_export.h), written by hand so a million spans stream out quickly.
#include "trace/export/chrome_trace_export.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace shardscope {

namespace {

void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out += buf;
}

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  ~Writer() { out_ << buffer_; }

  // Starts one event object: {"ph":"X","pid":1,"tid":0 ... (the caller closes it with close()).
  std::string& open(char ph, int pid, int tid) {
    buffer_ += first_ ? "\n" : ",\n";
    first_ = false;
    buffer_ += "{\"ph\":\"";
    buffer_ += ph;
    buffer_ += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
    return buffer_;
  }
  void close() {
    buffer_ += '}';
    if (buffer_.size() > (1 << 20)) {
      out_ << buffer_;
      buffer_.clear();
    }
  }
  std::string& raw() { return buffer_; }

 private:
  std::ostream& out_;
  std::string buffer_;
  bool first_ = true;
};

void metadata(Writer& w, const char* name, int pid, int tid, const std::string& value) {
  std::string& b = w.open('M', pid, tid);
  b += ",\"name\":\"";
  b += name;
  b += "\",\"args\":{\"name\":";
  append_escaped(b, value);
  b += '}';
  w.close();
}

void int_arg(std::string& b, const char* key, std::int64_t v) {
  b += ",\"";
  b += key;
  b += "\":" + std::to_string(v);
}

void span_event(Writer& w, const TraceData& d, const RankTimeline& r, Stream stream, const TraceSpan& s) {
  const Op* op = nullptr;
  if (d.header.plan && static_cast<std::size_t>(r.rank) < d.header.plan->programs.size()) {
    const auto& ops = d.header.plan->programs[static_cast<std::size_t>(r.rank)].ops;
    if (s.op >= 0 && static_cast<std::size_t>(s.op) < ops.size()) op = &ops[static_cast<std::size_t>(s.op)];
  }
  const TimeNs end = s.open() ? std::max(d.t_max, s.begin_ns) : s.end_ns;
  std::string& b = w.open('X', r.rank, static_cast<int>(stream));
  b += ",\"ts\":" + chrome_trace_us(s.begin_ns) + ",\"dur\":" + chrome_trace_us(end - s.begin_ns) + ",\"name\":";
  // A plan-less trace (recorded from PyTorch, imported) names its spans in their text, and the text their kind.
  const std::string_view text = op ? std::string_view{} : d.op_text(r.rank, s.op);
  append_escaped(b, op ? op->label.str() : !text.empty() ? std::string(text) : "op " + std::to_string(s.op));
  b += ",\"cat\":";
  const std::optional<SpanKind> kind = d.span_kind(r.rank, s.op);
  append_escaped(b, kind ? span_kind_name(*kind) : "unknown");
  b += ",\"args\":{\"op\":" + std::to_string(s.op);
  int_arg(b, "step", s.step);
  if (op) {
    if (op->layer >= 0) int_arg(b, "layer", op->layer);
    if (op->micro_batch >= 0) int_arg(b, "micro_batch", op->micro_batch);
    if (op->kind == OpKind::Compute) {
      b += ",\"flops\":";
      append_number(b, op->flops);
      int_arg(b, "bytes_accessed", op->bytes_accessed);
    } else if (op->kind == OpKind::Collective || op->kind == OpKind::Send || op->kind == OpKind::Recv) {
      int_arg(b, "payload_bytes", op->payload);
      if (op->group >= 0) int_arg(b, "group", op->group);
      if (op->root >= 0) int_arg(b, "root", op->root);
      if (op->peer >= 0) int_arg(b, "peer", op->peer);
    }
  }
  if (s.open()) b += ",\"unfinished\":true";
  b += '}';
  w.close();
}

void instant(Writer& w, int pid, bool global, TimeNs t, const std::string& name, int step) {
  std::string& b = w.open('i', pid, 0);
  b += ",\"s\":\"";
  b += global ? 'g' : 'p';
  b += "\",\"ts\":" + chrome_trace_us(t) + ",\"name\":";
  append_escaped(b, name);
  b += ",\"args\":{\"step\":" + std::to_string(step) + "}";
  w.close();
}

}  // namespace

std::string chrome_trace_us(TimeNs ns) {
  const bool negative = ns < 0;
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s%llu.%03llu", negative ? "-" : "", static_cast<unsigned long long>(magnitude / 1000),
                static_cast<unsigned long long>(magnitude % 1000));
  return buf;
}

void write_chrome_trace(const TraceStore& store, std::ostream& out) {
  store.read([&](const TraceData& d) {
    Writer w(out);
    std::string& head = w.raw();
    head += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool_version\":";
    append_escaped(head, d.header.tool_version);
    head += ",\"source\":";
    append_escaped(head, d.header.source);
    head += ",\"accounting_rules\":";
    append_escaped(head, d.header.accounting_rules);
    if (d.header.plan) {
      head += ",\"strategy\":";
      append_escaped(head, d.header.plan->strategy);
    }
    head += "},\"traceEvents\":[";

    for (const auto& r : d.ranks) {
      std::string device = "device";
      for (const auto& dev : d.header.devices)
        if (dev.rank == r.rank) device = dev.name;
      metadata(w, "process_name", r.rank, 0, "rank " + std::to_string(r.rank) + " (" + device + ")");
      for (int s = 0; s < kStreamCount; ++s)
        if (!r.streams[static_cast<std::size_t>(s)].spans.empty()) metadata(w, "thread_name", r.rank, s, stream_name(static_cast<Stream>(s)));
    }
    for (const auto& r : d.ranks) {
      for (int s = 0; s < kStreamCount; ++s)
        for (const auto& span : r.streams[static_cast<std::size_t>(s)].spans) span_event(w, d, r, static_cast<Stream>(s), span);
      for (const auto& m : r.memory) {
        std::string& b = w.open('C', r.rank, 0);
        b += ",\"ts\":" + chrome_trace_us(m.t_ns) + ",\"name\":\"memory (bytes)\",\"args\":{";
        bool first = true;
        for (auto c : kAllCategories) {
          if (!first) b += ',';
          first = false;
          append_escaped(b, category_key(c));
          b += ':' + std::to_string(m.by_category[c]);
        }
        b += '}';
        w.close();
      }
      for (const auto& m : r.device_memory) {
        std::string& b = w.open('C', r.rank, 0);
        b += ",\"ts\":" + chrome_trace_us(m.t_ns) + ",\"name\":\"device memory used (bytes)\",\"args\":{\"used\":" +
             std::to_string(m.used) + "}";
        w.close();
      }
      for (const auto& p : r.phases) instant(w, r.rank, false, p.t_ns, p.name, p.step);
    }
    for (const auto& e : d.errors) instant(w, std::max(e.rank, 0), e.rank < 0, e.t_ns, "error: " + e.message, e.step);
    if (d.run_end) instant(w, 0, true, d.run_end->t_ns, "run end: " + d.run_end->text, 0);
    w.raw() += "\n]}\n";
  });
}

}  // namespace shardscope
