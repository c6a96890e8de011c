// run_rank_files, recording_info, read_trace_header, load_rank_files (see rank_files.h).
#include "trace/file/rank_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

namespace shardscope {

namespace fs = std::filesystem;

namespace {

// "<stem>.rank<N><ext>" -> (stem, N, ext)
bool split_rank_name(const std::string& name, std::string& stem, int& rank, std::string& ext) {
  static const std::regex pattern(R"(^(.*)\.rank([0-9]{1,5})(\.[^.]*)?$)");
  std::smatch m;
  if (!std::regex_match(name, m, pattern)) return false;
  stem = m[1];
  rank = std::stoi(m[2]);
  ext = m[3];
  return true;
}

std::vector<std::string> ordered(const std::map<int, std::string>& by_rank) {
  std::vector<std::string> out;
  for (const auto& [rank, path] : by_rank) out.push_back(path);
  return out;
}

// Forwards events shifted in time; swallows begin / end and keeps RunEnd back.
class ShiftingSink : public TraceSink {
 public:
  explicit ShiftingSink(TraceSink& next) : next_(next) {}
  void begin(const TraceHeader&) override {}
  void emit(const TraceEvent& event) override {
    if (event.kind == TraceEventKind::RunEnd) {
      run_end_t_ = std::max(run_end_t_, event.t_ns + shift_);
      if (event.text != "ok" && run_end_text_.empty()) run_end_text_ = event.text;
      ++run_ends_;
      return;
    }
    TraceEvent e = event;
    e.t_ns += shift_;
    next_.emit(e);
  }
  bool keeps_events() const override { return next_.keeps_events(); }

  TimeNs shift_ = 0;
  TimeNs run_end_t_ = 0;
  std::string run_end_text_;
  std::size_t run_ends_ = 0;

 private:
  TraceSink& next_;
};

}  // namespace

std::vector<std::string> run_rank_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::map<int, std::string> plain;                        // rank<N>.sstrace
    std::map<std::string, std::map<int, std::string>> stems;  // <stem>.rank<N>.<ext>
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (!entry.is_regular_file(ec)) continue;
      const std::string name = entry.path().filename().string();
      std::string stem, ext;
      int rank = 0;
      if (std::smatch m; std::regex_match(name, m, std::regex(R"(^rank([0-9]{1,5})\.sstrace$)"))) plain[std::stoi(m[1])] = entry.path().string();
      else if (split_rank_name(name, stem, rank, ext) && ext == ".sstrace") stems[stem][rank] = entry.path().string();
    }
    if (!plain.empty()) return ordered(plain);
    if (stems.size() == 1) return ordered(stems.begin()->second);
    throw TraceFileError(path, stems.empty() ? "a directory without rank files (rank0.sstrace, ... or NAME.rank0.sstrace, ...)"
                                             : "a directory with the rank files of several runs: open one of them");
  }
  const fs::path p(path);
  std::string stem, ext;
  int rank = 0;
  if (!split_rank_name(p.filename().string(), stem, rank, ext)) return {path};
  std::map<int, std::string> by_rank;
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string s, e;
    int r = 0;
    if (entry.is_regular_file(ec) && split_rank_name(entry.path().filename().string(), s, r, e) && s == stem && e == ext)
      by_rank[r] = (p.has_parent_path() ? entry.path() : entry.path().filename()).string();
  }
  if (by_rank.empty()) return {path};
  return ordered(by_rank);
}

RecordingInfo recording_info(const std::string& header_json) {
  RecordingInfo info;
  const nlohmann::json header = nlohmann::json::parse(header_json, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return info;
  const auto rec = header.find("recording");
  if (rec == header.end() || !rec->is_object()) return info;
  auto int_of = [&](const char* key, std::int64_t fallback) {
    const auto it = rec->find(key);
    return it != rec->end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
  };
  const std::int64_t rank = int_of("rank", -1), world = int_of("world_size", -1);
  info.rank = rank >= 0 && rank < kMaxTraceRanks ? static_cast<int>(rank) : -1;
  info.world_size = world > 0 && world <= kMaxTraceRanks ? static_cast<int>(world) : -1;
  info.t0_unix_ns = std::max<std::int64_t>(-1, int_of("t0_unix_ns", -1));
  return info;
}

TraceReadResult read_trace_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceFileError(path, "cannot open it");
  std::string bytes;
  for (std::size_t want = 64 * 1024;; want *= 4) {
    bytes.resize(want);
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(want));
    bytes.resize(static_cast<std::size_t>(in.gcount()));
    in.clear();
    try {
      return read_trace_bytes(bytes, path);  // the events read are a prefix: only the header is wanted
    } catch (const TraceFileError& error) {
      if (bytes.size() < want || !error.damaged()) throw;  // the whole file was read, or it is not a trace at all
    }
  }
}

TraceReadResult load_rank_files(const std::vector<std::string>& files, TraceSink& sink) {
  if (files.size() == 1) return load_trace_file(files.front(), sink);
  std::vector<TraceReadResult> headers;
  std::vector<RecordingInfo> recordings;
  for (const std::string& f : files) {
    headers.push_back(read_trace_header(f));
    recordings.push_back(recording_info(headers.back().header_json));
  }
  const bool timed = std::all_of(recordings.begin(), recordings.end(), [](const RecordingInfo& r) { return r.t0_unix_ns >= 0; });
  std::int64_t t0 = 0;
  if (timed) {
    t0 = recordings.front().t0_unix_ns;
    for (const RecordingInfo& r : recordings) t0 = std::min(t0, r.t0_unix_ns);
  }
  TraceHeader header = headers.front().header;
  for (const TraceReadResult& h : headers)  // every rank a file names, each once
    for (const TraceDevice& d : h.header.devices)
      if (std::none_of(header.devices.begin(), header.devices.end(), [&](const TraceDevice& x) { return x.rank == d.rank; }))
        header.devices.push_back(d);
  std::sort(header.devices.begin(), header.devices.end(), [](const TraceDevice& a, const TraceDevice& b) { return a.rank < b.rank; });

  TraceReadResult merged = headers.front();
  merged.header = header;
  merged.events.clear();
  merged.event_count = 0;
  merged.file_bytes = merged.valid_bytes = 0;
  sink.begin(header);
  ShiftingSink shifting(sink);
  for (std::size_t k = 0; k < files.size(); ++k) {
    shifting.shift_ = timed ? static_cast<TimeNs>(recordings[k].t0_unix_ns - t0) : 0;
    const TraceReadResult r = load_trace_file(files[k], shifting);
    merged.event_count += r.event_count;
    merged.file_bytes += r.file_bytes;
    merged.valid_bytes += r.valid_bytes;
    if (r.truncated) {
      merged.truncated = true;
      merged.problem += (merged.problem.empty() ? "" : "; ") + files[k] + ": " + r.problem;
    }
  }
  if (shifting.run_ends_ > 0) {
    TraceEvent end;
    end.kind = TraceEventKind::RunEnd;
    end.rank = -1;
    end.t_ns = shifting.run_end_t_;
    end.text = shifting.run_end_text_.empty() ? "ok" : shifting.run_end_text_;
    sink.emit(end);
  }
  sink.end();
  return merged;
}

}  // namespace shardscope
