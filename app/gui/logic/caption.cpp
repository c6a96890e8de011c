// Captions from the spans covering an instant.
#include "gui/logic/caption.h"
#include "gui/logic/drawable_text.h"

#include <algorithm>
#include <limits>
#include <map>

namespace shardscope::gui {

namespace {

// The rank's program in the trace header, or nullptr (no plan, or none for that rank).
const Program* program_of(const TraceData& data, int rank) {
  if (!data.header.plan || rank < 0 || static_cast<std::size_t>(rank) >= data.header.plan->programs.size()) return nullptr;
  return &data.header.plan->programs[static_cast<std::size_t>(rank)];
}

const Op* active_op(const TraceData& data, int rank, Stream stream, TimeNs t) {
  const RankTimeline* timeline = data.rank(rank);
  const Program* program = program_of(data, rank);
  if (!timeline || !program) return nullptr;
  const Op* found = nullptr;
  // [begin, end): an op that ends exactly at t is over. A span naming an op the plan lacks (TraceStore ignores
  // such events; a TraceData filled otherwise might not) names nothing.
  timeline->stream(stream).for_each_overlapping(t, t, [&](const TraceSpan& span) {
    if (span.begin_ns <= t && (span.open() || span.end_ns > t) && span.op >= 0 && static_cast<std::size_t>(span.op) < program->ops.size())
      found = &program->ops[static_cast<std::size_t>(span.op)];
  });
  return found;
}

std::string describe_comm(const Op& op) {
  // A label that already names its size ("broadcast module states, bucket 0 (3.82 MiB)") does not get it twice.
  const std::string size = "(" + format_bytes(op.payload) + ")";
  const std::string label = op.label.str();
  std::string text = label.find(size) == std::string::npos ? label + " " + size : label;
  if (op.kind == OpKind::Send) text += " to rank " + std::to_string(op.peer);
  if (op.kind == OpKind::Recv) text += " from rank " + std::to_string(op.peer);
  return text;
}

}  // namespace

std::string describe_rank_at(const TraceData& data, int rank, TimeNs t_ns) {
  const Op* compute = active_op(data, rank, Stream::Compute, t_ns);
  const Op* comm = active_op(data, rank, Stream::Communication, t_ns);
  if (!comm) comm = active_op(data, rank, Stream::Copy, t_ns);
  std::string text = "rank " + std::to_string(rank) + ": ";
  if (comm && compute) return text + describe_comm(*comm) + " while computing " + compute->label;
  if (comm) return text + describe_comm(*comm) + ", compute idle";
  if (compute) return text + "computing " + compute->label;
  return text + "idle";
}

std::string phase_display_name(const std::string& phase) {
  if (phase == "model_created") return "model created";
  if (phase == "forward") return "after forward";
  if (phase == "before_step") return "after backward";
  if (phase == "after_step") return "after step";
  return drawable_label(phase);  // any other name is the trace's own text
}

std::string phase_short_name(const std::string& phase) {
  if (phase == "model_created") return "created";
  if (phase == "forward") return "fwd";
  if (phase == "before_step") return "bwd";
  if (phase == "after_step") return "step";
  return drawable_label(phase);
}

std::string phase_under_way(const PhaseMark* upcoming, const PhaseMark* last) {
  if (upcoming) {
    if (upcoming->name == "model_created") return "creating the model";
    if (upcoming->name == "wrapped") return "wrapping the model";
    const std::string step = "step " + std::to_string(upcoming->step) + ", ";
    if (upcoming->name == "forward") return step + "forward";
    if (upcoming->name == "before_step") return step + "backward";
    if (upcoming->name == "after_step") return step + "optimizer step";
    return step + upcoming->name;
  }
  if (!last) return "";
  return (last->step > 0 ? "step " + std::to_string(last->step) + ", " : "") + phase_display_name(last->name);
}

std::optional<std::string> phase_under_way_at(const RankTimeline& rank, TimeNs t_ns) {
  if (rank.phases.empty()) return std::nullopt;
  std::optional<PhaseMark> last, upcoming;
  for (const TracePhaseMarker& p : rank.phases) {
    if (p.t_ns > t_ns) {
      upcoming = PhaseMark{p.name, p.step, p.t_ns};
      break;
    }
    last = PhaseMark{p.name, p.step, p.t_ns};
  }
  // On a marker (--at forward puts the playhead there) the news is the phase just reached ("step 1, after forward"),
  // not the one that starts next.
  if (last && last->t_ns == t_ns) return phase_under_way(nullptr, &*last);
  return phase_under_way(upcoming ? &*upcoming : nullptr, last ? &*last : nullptr);
}

namespace {

bool is_out_of_memory(const TraceRunError& error) { return error.message.find("out of memory") != std::string::npos; }

}  // namespace

const TraceRunError* first_out_of_memory(const TraceData& data, int rank) {
  const TraceRunError* first = nullptr;
  for (const auto& error : data.errors)
    if (error.rank == rank && is_out_of_memory(error) && (!first || error.t_ns < first->t_ns)) first = &error;
  return first;
}

std::optional<TimeNs> run_stopped_at(const TraceData& data) {
  std::optional<TimeNs> stopped;
  for (const auto& error : data.errors)
    if (is_out_of_memory(error) && (!stopped || error.t_ns < *stopped)) stopped = error.t_ns;
  return stopped;
}

std::size_t samples_before_stop(const RankTimeline& rank, std::optional<TimeNs> stopped, Bytes capacity) {
  if (!stopped) return rank.memory.size();
  std::size_t n = 0;
  for (; n < rank.memory.size(); ++n) {
    const TraceMemorySample& s = rank.memory[n];
    if (s.t_ns > *stopped) break;
    if (s.t_ns == *stopped && capacity > 0 && (s.allocated > capacity || s.reserved > capacity)) break;
  }
  return n;
}

TraceMemoryPeak peak_before_stop(const RankTimeline& rank, std::optional<TimeNs> stopped, Bytes capacity) {
  if (!stopped) return rank.peak;
  TraceMemoryPeak peak;
  const std::size_t n = samples_before_stop(rank, stopped, capacity);
  for (std::size_t i = 0; i < n; ++i) {
    const TraceMemorySample& s = rank.memory[i];
    if (s.allocated > peak.allocated) peak = {s.allocated, s.t_ns, s.by_category, peak.reserved, peak.reserved_t_ns};
    if (s.reserved > peak.reserved) {
      peak.reserved = s.reserved;
      peak.reserved_t_ns = s.t_ns;
    }
  }
  return peak;
}

std::vector<LiveTensorAt> live_tensors_at(const TraceData& data, int rank, TimeNs t_ns, std::size_t count) {
  const RankTimeline* timeline = data.rank(rank);
  if (!timeline) return {};
  const Program* program = program_of(data, rank);
  // Bytes held per tensor id: dense over the plan's tensors; without a plan, ids are whatever the trace says (up to
  // 2^31), so only those seen are kept.
  struct Held {
    Bytes bytes = 0;
    Category category = Category::Temporaries;
  };
  std::vector<Held> dense(program ? program->tensors.size() : 0);
  std::map<TensorId, Held> sparse;
  // The series is ordered by time (the store keeps a late change at the latest time): only its prefix up to t_ns is
  // replayed. Replaying all of it, to skip the later ones, made a growing run's peak lookup 10 times dearer (15 ms a
  // rank on a 9 M-event trace, a stall at every refresh).
  const std::size_t through = timeline->memory.samples_through(t_ns);
  for (std::size_t i = 0; i < through; ++i) {
    const TraceAllocation a = timeline->memory.allocation(i);
    if (a.tensor < 0) continue;
    const auto id = static_cast<std::size_t>(a.tensor);
    if (program && id >= dense.size()) continue;  // not a tensor of the plan (TraceStore ignores those)
    Held& held = program ? dense[id] : sparse[a.tensor];
    // Saturating: a hostile trace may add up past 2^63 for one tensor.
    if (__builtin_add_overflow(held.bytes, a.bytes, &held.bytes))
      held.bytes = a.bytes > 0 ? std::numeric_limits<Bytes>::max() : std::numeric_limits<Bytes>::min();
    held.category = a.category;
  }
  // Only the `count` largest get a name: at a peak thousands of tensors are live, and naming and sorting them all
  // was most of a live run's refresh. Ties keep id order, as a stable sort would. (With a plan only `dense` holds
  // tensors, without one only `sparse`.)
  struct Candidate {
    Bytes bytes;
    TensorId id;
    Category category;
  };
  std::vector<Candidate> candidates;
  for (std::size_t id = 0; id < dense.size(); ++id)
    if (dense[id].bytes > 0) candidates.push_back({dense[id].bytes, static_cast<TensorId>(id), dense[id].category});
  for (const auto& [id, held] : sparse)
    if (held.bytes > 0) candidates.push_back({held.bytes, id, held.category});
  const auto largest_first = [](const Candidate& a, const Candidate& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.id < b.id;
  };
  const std::size_t kept = std::min(count, candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(kept), candidates.end(), largest_first);
  std::vector<LiveTensorAt> live;
  live.reserve(kept);
  for (std::size_t i = 0; i < kept; ++i) {
    const Candidate& c = candidates[i];
    // Without a plan, the name is the text the trace's Alloc carried (a recorded or imported run's op and Python line).
    const std::string_view text = program ? std::string_view{} : data.tensor_text(rank, c.id);
    live.push_back({program ? std::string(program->tensors[static_cast<std::size_t>(c.id)].name)
                            : !text.empty() ? std::string(text) : "tensor " + std::to_string(c.id),
                    c.category, c.bytes});
  }
  return live;
}

int most_telling_rank(const TraceData& data, TimeNs t_ns) {
  int communicating = -1, computing = -1;
  for (const auto& timeline : data.ranks) {
    const bool comm = active_op(data, timeline.rank, Stream::Communication, t_ns) != nullptr;
    const bool compute = active_op(data, timeline.rank, Stream::Compute, t_ns) != nullptr;
    if (comm && compute) return timeline.rank;
    if (comm && communicating < 0) communicating = timeline.rank;
    if (compute && computing < 0) computing = timeline.rank;
  }
  return communicating >= 0 ? communicating : computing >= 0 ? computing : 0;
}

}  // namespace shardscope::gui
