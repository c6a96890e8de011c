// Reading .sstrace files: one record parser shared by read_trace_file and TraceFileFollower.
#include "trace/file/trace_file_reader.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <new>

#include "trace/file/trace_event_codec.h"
#include "trace/file/trace_format.h"

namespace shardscope {

namespace {

namespace tf = trace_format;

enum class Stop { NeedMore, End, Damaged };

}  // namespace

// What parsing a file has learnt so far: kept between the pieces a follower feeds.
struct TraceParseState {
  bool has_preamble = false;
  bool has_header = false;
  std::uint32_t version = 0;
  TimeNs previous_t_ns = 0;                 // version 1: the previous event's time
  trace_format::EventBlockDecoder blocks;   // version 2: the coding state of every block so far
  std::vector<TraceEvent> block_events;     // one block's events, handed on only once the whole block decodes
};

namespace {

using ParseState = TraceParseState;

std::string at_byte(std::uint64_t offset) { return "at byte " + std::to_string(offset); }

// Checks the preamble in data[0, size) and sets `version`. Returns false if more bytes are needed; throws if it is
// not a trace this build reads.
bool check_preamble(const std::string& path, const unsigned char* data, std::size_t size, bool at_eof, std::uint32_t& version) {
  const std::size_t n = std::min(size, sizeof tf::kMagic);
  if (std::memcmp(data, tf::kMagic, n) != 0) throw TraceFileError(path, "not a ShardScope trace (the file does not start with \"SSTRACE\")");
  if (size < tf::kPreambleBytes) {
    if (!at_eof) return false;
    if (size == 0) throw TraceFileError(path, "the file is empty");
    throw TraceFileError(path, "the file ends inside its " + std::to_string(tf::kPreambleBytes) + "-byte preamble", /*damaged=*/true);
  }
  version = tf::read_u32(data + 8);
  if (version == 0 || version > tf::kFormatVersion)
    throw TraceFileError(path, "format version " + std::to_string(version) + " is not one this build reads (it reads up to version " +
                                   std::to_string(tf::kFormatVersion) + "; a newer ShardScope wrote it?)");
  return true;
}

// Parses the complete records in data[0, size), which starts at file offset `base`. Returns the bytes consumed
// and why it stopped; `problem` says what is damaged when it returns Stop::Damaged.
template <class OnHeader, class OnEvent>
std::size_t parse_records(const std::string& path, const unsigned char* data, std::size_t size, std::uint64_t base, bool at_eof,
                          ParseState& state, Stop& stop, std::string& problem, OnHeader&& on_header, OnEvent&& on_event) {
  std::size_t pos = 0;
  if (!state.has_preamble) {
    if (!check_preamble(path, data, size, at_eof, state.version)) {
      stop = Stop::NeedMore;
      return 0;
    }
    state.has_preamble = true;
    pos = tf::kPreambleBytes;
  }
  const unsigned char* end = data + size;
  auto damaged = [&](const std::string& what) {
    if (!state.has_header) throw TraceFileError(path, "the header record is corrupt (" + what + ")", /*damaged=*/true);
    problem = "record " + at_byte(base + pos) + " is damaged (" + what + "); the records after it are ignored";
    stop = Stop::Damaged;
    return pos;
  };
  for (;;) {
    const unsigned char* p = data + pos;
    const unsigned char* q = p;
    std::uint64_t length = 0;
    if (p == end || !tf::read_varint(++q, end, length)) {
      if (p != end && q != end) return damaged("bad length");
      if (!state.has_header && at_eof)
        throw TraceFileError(path, pos == size ? "there is no header record" : "the file ends inside the header record", /*damaged=*/true);
      stop = Stop::NeedMore;
      return pos;
    }
    // Refused on the length alone, before the record is waited for (a follower would buffer it).
    const std::uint64_t cap = state.has_header ? tf::kMaxRecordBytes : tf::kMaxHeaderRecordBytes;
    if (length > cap)
      return damaged("a record of " + std::to_string(length) + " bytes, more than the " + std::to_string(cap) + " a trace's " +
                     (state.has_header ? "records may hold (kMaxRecordBytes)" : "header may hold (kMaxHeaderRecordBytes)"));
    const std::size_t framing = static_cast<std::size_t>(q - p);
    if (static_cast<std::uint64_t>(end - q) < length + 4) {
      if (!state.has_header && at_eof) throw TraceFileError(path, "the file ends inside the header record", /*damaged=*/true);
      stop = Stop::NeedMore;
      return pos;
    }
    const std::size_t payload_size = static_cast<std::size_t>(length);
    if (tf::crc32(p, framing + payload_size) != tf::read_u32(q + payload_size)) return damaged("checksum mismatch");
    const auto type = static_cast<tf::RecordType>(*p);
    if (!state.has_header) {
      if (type != tf::RecordType::Header) throw TraceFileError(path, "the first record is not a header", /*damaged=*/true);
      try {
        const std::string_view json(reinterpret_cast<const char*>(q), payload_size);
        on_header(tf::decode_header_json(json), json);
      } catch (const std::runtime_error& e) {
        throw TraceFileError(path, std::string("the header cannot be read: ") + e.what(), /*damaged=*/true);
      } catch (const std::bad_alloc&) {
        throw TraceFileError(path, "not enough memory for its " + std::to_string(payload_size) + "-byte header");
      }
      state.has_header = true;
    } else if (type == tf::RecordType::EventBlock && state.version >= tf::kBlockFormatVersion) {
      if (!state.blocks.decode(q, payload_size, state.block_events)) return damaged("malformed event block");
      for (TraceEvent& event : state.block_events) on_event(std::move(event));
    } else if (type == tf::RecordType::Event && state.version >= tf::kBlockFormatVersion) {
      return damaged("a version 1 event record in a version " + std::to_string(state.version) + " file");
    } else if (type == tf::RecordType::Event) {
      TraceEvent event;
      if (!tf::decode_event_payload(q, payload_size, state.previous_t_ns, event)) return damaged("malformed event");
      state.previous_t_ns = event.t_ns;
      on_event(std::move(event));
    } else if (type == tf::RecordType::End) {
      pos += framing + payload_size + 4;
      stop = Stop::End;
      return pos;
    } else if (type == tf::RecordType::Header) {
      return damaged("a second header");
    }  // other types: records of a later minor revision, skipped
    pos += framing + payload_size + 4;
  }
}

}  // namespace

namespace {

// Why a read that stopped at `stop` is incomplete: `consumed` bytes of `total` form complete records.
void describe_stop(TraceReadResult& result, Stop stop, std::string problem, std::uint64_t consumed, std::uint64_t total) {
  result.valid_bytes = consumed;
  if (stop == Stop::Damaged) {
    result.truncated = true;
    result.problem = std::move(problem);
  } else if (stop == Stop::NeedMore) {
    result.truncated = true;
    result.problem = consumed < total
                         ? "the file ends inside a record " + at_byte(consumed) + " (" + std::to_string(total - consumed) +
                               " bytes of it ignored): the writer stopped mid-record"
                         : "the file has no end record: the run was cut off or is still being written";
  }
}

}  // namespace

TraceReadResult read_trace_bytes(std::string_view bytes, const std::string& path) {
  try {
    TraceReadResult result;
    result.path = path;
    result.file_bytes = bytes.size();
    // An event takes about 8 bytes in an event block (more in a version 1 record): a reservation that a damaged
    // file cannot inflate; the vector grows past it when needed.
    result.events.reserve(bytes.size() / 12);
    ParseState state;
    Stop stop = Stop::NeedMore;
    std::string problem;
    const std::size_t consumed = parse_records(
        path, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 0, /*at_eof=*/true, state, stop, problem,
        [&](TraceHeader&& h, std::string_view json) {
          result.header = std::move(h);
          result.header_json = json;
        }, [&](TraceEvent&& e) { result.events.push_back(std::move(e)); });
    result.format_version = state.version;
    result.event_count = result.events.size();
    describe_stop(result, stop, std::move(problem), consumed, bytes.size());
    return result;
  } catch (const std::bad_alloc&) {
    throw TraceFileError(path, "not enough memory to read its " + std::to_string(bytes.size()) + " bytes");
  }
}

TraceReadResult load_trace_file(const std::string& path, TraceSink& sink) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw TraceFileError(path, std::string("cannot be opened: ") + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};
  TraceReadResult result;
  result.path = path;
  bool begun = false;
  std::uint64_t size_at_open = 0;  // bytes after an End record are never read, yet trace check reports them
  if (std::fseek(f, 0, SEEK_END) == 0) {
    const long size = std::ftell(f);
    if (size > 0) size_at_open = static_cast<std::uint64_t>(size);
    std::fseek(f, 0, SEEK_SET);
  }
  try {
    ParseState state;
    Stop stop = Stop::NeedMore;
    std::string problem;
    std::string pending;  // bytes read and not yet parsed: at most a chunk and one record
    std::vector<char> chunk(1 << 20);
    std::uint64_t offset = 0;
    for (;;) {
      const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), f);
      if (std::ferror(f)) throw TraceFileError(path, "cannot be read");
      pending.append(chunk.data(), n);
      result.file_bytes += n;
      const bool at_eof = n < chunk.size();
      const std::size_t consumed = parse_records(
          path, reinterpret_cast<const unsigned char*>(pending.data()), pending.size(), offset, at_eof, state, stop, problem,
          [&](TraceHeader&& h, std::string_view json) {
            result.header = std::move(h);
            result.header_json = json;
            sink.begin(result.header);
            begun = true;
          },
          [&](TraceEvent&& e) {
            sink.emit(e);
            ++result.event_count;
          });
      pending.erase(0, consumed);
      offset += consumed;
      if (stop != Stop::NeedMore || at_eof) break;
    }
    result.format_version = state.version;
    describe_stop(result, stop, std::move(problem), offset, result.file_bytes);
    result.file_bytes = std::max(result.file_bytes, size_at_open);
    if (begun) sink.end();
    return result;
  } catch (const std::bad_alloc&) {
    throw TraceFileError(path, "not enough memory to load its " + std::to_string(result.event_count) + " events");
  }
}

TraceReadResult read_trace_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw TraceFileError(path, std::string("cannot be opened: ") + std::strerror(errno));
  std::string bytes;
  bool failed = false;
  try {
    char chunk[1 << 16];
    std::size_t n = 0;
    if (std::fseek(f, 0, SEEK_END) == 0) {
      const long size = std::ftell(f);
      if (size > 0) bytes.reserve(static_cast<std::size_t>(size));
      std::fseek(f, 0, SEEK_SET);
    }
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.append(chunk, n);
    failed = std::ferror(f);
  } catch (const std::bad_alloc&) {
    std::fclose(f);
    throw TraceFileError(path, "not enough memory to read it");
  }
  std::fclose(f);
  if (failed) throw TraceFileError(path, "cannot be read");
  return read_trace_bytes(bytes, path);
}

std::string describe_cut(const TraceReadResult& trace) {
  if (!trace.truncated) return "";
  return "trace file '" + trace.path + "' is cut short at byte " + std::to_string(trace.valid_bytes) + " of " +
         std::to_string(trace.file_bytes) + ": " + trace.problem + "; showing the " + std::to_string(trace.event_count) +
         " events before it";
}

void replay_trace(const TraceReadResult& trace, TraceSink& sink) {
  try {
    sink.begin(trace.header);
    for (const auto& e : trace.events) sink.emit(e);
    sink.end();
  } catch (const std::bad_alloc&) {
    throw TraceFileError(trace.path, "not enough memory to replay its " + std::to_string(trace.events.size()) + " events");
  }
}

std::size_t TraceFileFollower::poll(TraceSink& sink, std::size_t max_bytes) {
  if (finished() || corrupt()) return 0;
  std::FILE* f = std::fopen(path_.c_str(), "rb");
  if (!f) return 0;
  std::string appended;
  if (std::fseek(f, static_cast<long>(bytes_.received()), SEEK_SET) == 0) {
    char chunk[1 << 16];
    std::size_t n = 0;
    while (appended.size() < max_bytes &&
           (n = std::fread(chunk, 1, std::min(sizeof chunk, max_bytes - appended.size()), f)) > 0)
      appended.append(chunk, n);
  }
  std::fclose(f);
  return bytes_.feed(appended, sink);
}

bool looks_like_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof trace_format::kMagic] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == static_cast<std::streamsize>(sizeof magic) &&
         std::equal(magic, magic + sizeof magic, trace_format::kMagic);
}

TraceBytesFollower::TraceBytesFollower(std::string name) : name_(std::move(name)) {}
TraceBytesFollower::~TraceBytesFollower() = default;
TraceBytesFollower::TraceBytesFollower(TraceBytesFollower&&) noexcept = default;
TraceBytesFollower& TraceBytesFollower::operator=(TraceBytesFollower&&) noexcept = default;

bool TraceBytesFollower::has_header() const { return state_ && state_->has_header; }

std::size_t TraceBytesFollower::feed(std::string_view bytes, TraceSink& sink) {
  if (finished_ || corrupt()) return 0;
  pending_.append(bytes);
  if (pending_.empty()) return 0;
  if (!state_) state_ = std::make_unique<TraceParseState>();
  TraceParseState& state = *state_;
  Stop stop = Stop::NeedMore;
  std::size_t events = 0;
  const std::size_t consumed = parse_records(
      name_, reinterpret_cast<const unsigned char*>(pending_.data()), pending_.size(), offset_, /*at_eof=*/false, state, stop,
      problem_, [&](TraceHeader&& h, std::string_view) { sink.begin(h); },
      [&](TraceEvent&& e) {
        sink.emit(e);
        ++events;
      });
  pending_.erase(0, consumed);
  offset_ += consumed;
  if (stop == Stop::End) {
    finished_ = true;
    sink.end();
  }
  return events;
}

}  // namespace shardscope
