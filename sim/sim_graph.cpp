// build_sim_graph: global op ids, stream chains, dependents, and the matching of collectives and messages.
#include "sim/sim_graph.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <unordered_map>

namespace shardscope {

namespace {

std::uint64_t channel_key(int sender, int receiver, std::int64_t sequence) {
  // Ranks are below 65536 (resolve_scenario's limit) and sequences below 2^32 in any plan we can hold.
  return (static_cast<std::uint64_t>(sender) << 48) | (static_cast<std::uint64_t>(receiver) << 32) |
         static_cast<std::uint64_t>(sequence & 0xffffffff);
}

// Collective and message instances as they are first met, and each one's members (ranks ascending, as ops are
// visited). Members are only counted as they are met and laid out from SimGraph::instance_of at the end: a vector per
// instance meant hundreds of thousands of small allocations in a 1,024-rank plan.
class InstanceMatcher {
 public:
  InstanceMatcher(const Plan& plan, SimGraph& g) : plan_(plan), g_(g), collective_instance_(plan.groups.size()) {}

  // The instance op `i` of rank `r` belongs to, or -1 for an op that is not a collective, send or recv.
  std::int32_t add(std::size_t r, std::size_t i, const Op& op) {
    std::int32_t instance = -1;
    if (op.kind == OpKind::Collective) {
      if (op.group < 0 || static_cast<std::size_t>(op.group) >= plan_.groups.size())
        throw std::invalid_argument("rank " + std::to_string(r) + " op " + std::to_string(i) + " ('" + op.label +
                                    "') uses group " + std::to_string(op.group) + ", which does not exist");
      auto& by_sequence = collective_instance_[static_cast<std::size_t>(op.group)];
      if (op.sequence < 0) throw std::invalid_argument("collective '" + op.label + "' has no sequence number");
      if (by_sequence.size() <= static_cast<std::size_t>(op.sequence)) by_sequence.resize(static_cast<std::size_t>(op.sequence) + 1, -1);
      auto& slot = by_sequence[static_cast<std::size_t>(op.sequence)];
      if (slot < 0) slot = new_instance(false, static_cast<int>(plan_.groups[static_cast<std::size_t>(op.group)].size()));
      instance = slot;
    } else if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
      const int rank = static_cast<int>(r);
      const auto key = op.kind == OpKind::Send ? channel_key(rank, op.peer, op.sequence) : channel_key(op.peer, rank, op.sequence);
      auto [it, inserted] = message_instance_.try_emplace(key, -1);
      if (inserted) it->second = new_instance(true, 2);
      instance = it->second;
    } else {
      return -1;
    }
    ++g_.instances[static_cast<std::size_t>(instance)].member_count;
    return instance;
  }

  // Lays the members out in SimGraph::members (in global op order, so each instance's ranks ascend), then sizes and
  // times each instance. Needs SimGraph::instance_of of every op.
  void finish(const CostModel& costs) {
    std::int32_t next = 0;
    for (SimInstance& instance : g_.instances) {
      instance.member_begin = next;
      next += instance.member_count;
    }
    g_.members.resize(static_cast<std::size_t>(next));
    std::vector<std::int32_t> fill(g_.instances.size());
    for (std::size_t k = 0; k < g_.instances.size(); ++k) fill[k] = g_.instances[k].member_begin;
    for (std::size_t id = 0; id < g_.instance_of.size(); ++id)
      if (const std::int32_t k = g_.instance_of[id]; k >= 0)
        g_.members[static_cast<std::size_t>(fill[static_cast<std::size_t>(k)]++)] = static_cast<GlobalOp>(id);
    for (SimInstance& instance : g_.instances) {
      const std::span<const GlobalOp> members(g_.members.data() + instance.member_begin, static_cast<std::size_t>(instance.member_count));
      const Op& first = g_.op(plan_, members.front());
      if (instance.message) {
        // The two ends: the first member (sender or receiver, whichever rank is lower) and its peer.
        const int a = g_.rank_of(members.front());
        instance.shape = {CollectiveKind::Broadcast, 2, first.payload, 0};
        instance.duration_ns = costs.message_ns(first.payload, a, first.peer);
        continue;
      }
      const auto& group = plan_.groups[static_cast<std::size_t>(first.group)];
      CollectiveShape shape{first.collective_kind, static_cast<int>(group.size()), first.payload, 0};
      if (shape.kind == CollectiveKind::AllGather) shape.size_bytes = first.payload * shape.ranks;  // payload: each rank's input
      if (shape.kind == CollectiveKind::Scatter || shape.kind == CollectiveKind::Gather) {
        shape.size_bytes = 0;
        for (GlobalOp m : members) {
          const Op& member = g_.op(plan_, m);
          shape.size_bytes += member.payload;
          if (g_.rank_of(m) == first.root) shape.root_chunk_bytes = member.payload;
        }
      }
      instance.shape = shape;
      instance.duration_ns = costs.collective_ns(shape, group);
    }
  }

 private:
  std::int32_t new_instance(bool message, int expected) {
    g_.instances.push_back({});
    g_.instances.back().message = message;
    g_.instances.back().expected = expected;
    return static_cast<std::int32_t>(g_.instances.size() - 1);
  }

  const Plan& plan_;
  SimGraph& g_;
  std::vector<std::vector<std::int32_t>> collective_instance_;  // [group][sequence]
  std::unordered_map<std::uint64_t, std::int32_t> message_instance_;
};

}  // namespace

// One pass over the ops (a 1,024-rank plan's ops are ~200 MB: each pass over them costs more than the work it does);
// the dependency edges it meets are kept (8 B each) to fill the dependents' CSR afterwards without a second one.
SimGraph build_sim_graph(const Plan& plan, const CostModel& costs) {
  SimGraph g;
  g.rank_offset.assign(plan.programs.size() + 1, 0);
  for (std::size_t r = 0; r < plan.programs.size(); ++r)
    g.rank_offset[r + 1] = g.rank_offset[r] + static_cast<GlobalOp>(plan.programs[r].ops.size());
  const auto n = static_cast<std::size_t>(g.rank_offset.back());
  g.duration_ns.resize(n);
  g.instant.resize(n);
  g.next_on_stream.assign(n, -1);
  g.pending.assign(n, 0);
  g.instance_of.resize(n);
  std::vector<std::int32_t> dependent_count(n + 1, 0);
  struct DepEdge {
    GlobalOp dep, dependent;
  };
  std::vector<DepEdge> dep_edges;  // in op order, so that each op's dependents keep that order
  dep_edges.reserve(n);  // plans have fewer deps than ops: no growth (capacity never written costs no memory)
  InstanceMatcher matcher(plan, g);
  for (std::size_t r = 0; r < plan.programs.size(); ++r) {
    const auto& ops = plan.programs[r].ops;
    const GlobalOp base = g.rank_offset[r];
    GlobalOp last_on_stream[kStreamCount] = {-1, -1, -1};
    // The executor's host time (a measured profile of our executor only): one host thread walks the program, so
    // what it spends on allocations, frees, phases and issuing ops delays the start of its next compute-stream op.
    TimeNs host_pending = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const GlobalOp id = base + static_cast<GlobalOp>(i);
      const auto at = static_cast<std::size_t>(id);
      g.last_step = std::max(g.last_step, op.step);
      g.duration_ns[at] = costs.compute_ns(op);
      host_pending = saturating_add(host_pending, costs.host_ns(plan.programs[r], op));
      if (op.kind == OpKind::Compute && op.stream == Stream::Compute && host_pending > 0) {
        if (g.host_delay_ns.empty()) g.host_delay_ns.assign(n, 0);
        g.host_delay_ns[at] = host_pending;
        host_pending = 0;
      }
      g.instant[at] = op.kind == OpKind::Alloc || op.kind == OpKind::Free || op.kind == OpKind::Phase;
      GlobalOp& last = last_on_stream[static_cast<int>(op.stream)];
      if (last >= 0) {
        g.next_on_stream[static_cast<std::size_t>(last)] = id;
        ++g.pending[at];
      }
      last = id;
      for (OpIndex dep : op.deps) {
        if (dep < 0 || static_cast<std::size_t>(dep) >= ops.size())
          throw std::invalid_argument("rank " + std::to_string(r) + " op " + std::to_string(i) + " depends on op " +
                                      std::to_string(dep) + ", which does not exist");
        ++g.pending[at];
        ++dependent_count[static_cast<std::size_t>(base + dep)];
        dep_edges.push_back({base + dep, id});
      }
      g.instance_of[at] = matcher.add(r, i, op);
    }
  }
  g.dependents_begin.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) g.dependents_begin[i + 1] = g.dependents_begin[i] + dependent_count[i];
  g.dependents.assign(static_cast<std::size_t>(g.dependents_begin[n]), -1);
  std::vector<std::int32_t> fill(g.dependents_begin.begin(), g.dependents_begin.end() - 1);
  for (const DepEdge& e : dep_edges) g.dependents[static_cast<std::size_t>(fill[static_cast<std::size_t>(e.dep)]++)] = e.dependent;
  matcher.finish(costs);
  return g;
}

}  // namespace shardscope
