// Plan validation (see validate.h).
#include "plan/validate.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>

namespace shardscope {

namespace {

constexpr std::size_t kMaxErrors = 20;

void add(ValidationReport& report, const std::string& message) {
  if (report.errors.size() < kMaxErrors) report.errors.push_back(message);
}

std::string where(const Program& program, std::size_t op) {
  return "rank " + std::to_string(program.rank) + " op " + std::to_string(op) + " ('" + program.ops[op].label + "')";
}

// Sequences as Op holds them (32 bits): a 1,024-rank plan gathers half a million members, sorted once.
struct CollectiveKey {
  int group;
  std::int32_t sequence;
  bool operator<(const CollectiveKey& o) const { return group != o.group ? group < o.group : sequence < o.sequence; }
  bool operator==(const CollectiveKey& o) const { return group == o.group && sequence == o.sequence; }
};

struct MessageKey {
  int sender, receiver;
  std::int32_t sequence;
  bool operator<(const MessageKey& o) const {
    return std::tie(sender, receiver, sequence) < std::tie(o.sender, o.receiver, o.sequence);
  }
  bool operator==(const MessageKey& o) const {
    return sender == o.sender && receiver == o.receiver && sequence == o.sequence;
  }
};

MessageKey message_key(int rank, const Op& op) {
  return op.kind == OpKind::Send ? MessageKey{rank, op.peer, op.sequence} : MessageKey{op.peer, rank, op.sequence};
}

// One collective, send or recv op of the plan, with its global index (rank-major, as base[] numbers ops).
template <class Key>
struct Member {
  Key key;
  int rank;
  std::uint32_t global;  // plans stay far below 2^32 ops (kMaxPlanOps), as check_acyclic's nodes
  const Op* op;
};

// The collective (or message) ops sorted by key; equal keys keep rank order, as ops are gathered rank by rank.
// Sorted flat vectors instead of maps of maps: a 1,024-rank plan has hundreds of thousands of them.
template <class Key>
void sort_by_key(std::vector<Member<Key>>& members) {
  std::stable_sort(members.begin(), members.end(), [](const Member<Key>& a, const Member<Key>& b) { return a.key < b.key; });
}

// Calls visit(first, last) for each run of equal keys in sorted `members`.
template <class Key, class Visit>
void for_each_key(const std::vector<Member<Key>>& members, Visit&& visit) {
  for (std::size_t first = 0; first < members.size();) {
    std::size_t last = first + 1;
    while (last < members.size() && members[last].key == members[first].key) ++last;
    visit(first, last);
    first = last;
  }
}

std::vector<std::size_t> global_bases(const Plan& plan) {
  std::vector<std::size_t> base(plan.programs.size() + 1, 0);
  for (std::size_t r = 0; r < plan.programs.size(); ++r) base[r + 1] = base[r] + plan.programs[r].ops.size();
  return base;
}

// A stream-order or dependency edge between two ops, by global index (check_acyclic's input).
struct OpEdge {
  std::uint32_t from, to;
};

// What the per-program pass gathers for the plan-wide checks: the collectives and messages, each sorted by key once
// gathered (sort_by_key), and every stream-order and in-range dependency edge. The edges are kept so that the cycle
// check need not walk the ops again: two more passes over a 1,024-rank plan's ~200 MB of ops cost more than the
// check itself, and the edges take 8 B each.
struct Communication {
  std::vector<Member<CollectiveKey>> collectives;  // on a known group
  std::vector<Member<MessageKey>> messages;        // with a valid peer
  std::vector<OpEdge> edges;
};

// Adds op i of `program` (global index `global`) to `gathered` if it is a collective on a known group or a send / recv
// with a valid peer; reports collectives on unknown groups or on groups without their rank, and invalid peers.
void gather_communication(const Plan& plan, const Program& program, std::size_t i, std::size_t global,
                          ValidationReport& report, Communication& gathered) {
  const Op& op = program.ops[i];
  if (op.kind == OpKind::Collective) {
    if (op.group < 0 || static_cast<std::size_t>(op.group) >= plan.groups.size()) {
      add(report, where(program, i) + ": unknown process group " + std::to_string(op.group));
      return;
    }
    const auto& group = plan.groups[static_cast<std::size_t>(op.group)];
    if (std::find(group.begin(), group.end(), program.rank) == group.end())
      add(report, where(program, i) + ": rank is not a member of group " + std::to_string(op.group));
    gathered.collectives.push_back({{op.group, op.sequence}, program.rank, static_cast<std::uint32_t>(global), &op});
  } else if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
    const int world = static_cast<int>(plan.programs.size());
    if (op.peer < 0 || op.peer >= world || op.peer == program.rank) {
      add(report, where(program, i) + ": peer rank " + std::to_string(op.peer) + " is not another rank of the plan");
      return;
    }
    gathered.messages.push_back({message_key(program.rank, op), program.rank, static_cast<std::uint32_t>(global), &op});
  }
}

// Operand, dependency and tensor life checks of one program, gathering its collectives, messages and edges in the
// same pass (one pass over a 1,024-rank plan's ~200 MB of ops costs more than the checks).
void check_program(const Plan& plan, const Program& program, std::size_t base, ValidationReport& report,
                   Communication& gathered) {
  enum class State { Unborn, Live, Freed };
  std::vector<State> state(program.tensors.size(), State::Unborn);
  std::size_t last_on_stream[kStreamCount];
  bool seen[kStreamCount] = {false, false, false};
  const auto edge = [&](std::size_t from, std::size_t to) {
    gathered.edges.push_back({static_cast<std::uint32_t>(base + from), static_cast<std::uint32_t>(base + to)});
  };
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    gather_communication(plan, program, i, base + i, report, gathered);
    const int stream = static_cast<int>(op.stream);
    if (seen[stream]) edge(last_on_stream[stream], i);
    seen[stream] = true;
    last_on_stream[stream] = i;
    for (OpIndex dep : op.deps) {
      if (dep >= 0 && static_cast<std::size_t>(dep) < program.ops.size()) edge(static_cast<std::size_t>(dep), i);  // a self-edge is dropped
      if (dep < 0 || static_cast<std::size_t>(dep) >= program.ops.size() || static_cast<std::size_t>(dep) == i)
        add(report, where(program, i) + ": dependency " + std::to_string(dep) + " out of range");
    }
    for (const TensorSlice& arg : op.args) {  // operands must be alive while the op runs (an executor reads them)
      if (!arg.present()) continue;
      if (static_cast<std::size_t>(arg.tensor) >= program.tensors.size()) {
        add(report, where(program, i) + ": operand refers to unknown tensor " + std::to_string(arg.tensor));
        continue;
      }
      const TensorInfo& info = program.tensors[static_cast<std::size_t>(arg.tensor)];
      if (info.bytes > 0 && state[static_cast<std::size_t>(arg.tensor)] != State::Live)
        add(report, where(program, i) + ": operand '" + info.name + "' is " +
                        (state[static_cast<std::size_t>(arg.tensor)] == State::Freed ? "already freed" : "not allocated yet"));
      if (arg.offset < 0 || arg.bytes < 0 || arg.offset + arg.bytes > info.bytes)
        add(report, where(program, i) + ": operand slice [" + std::to_string(arg.offset) + ", +" + std::to_string(arg.bytes) +
                        ") lies outside '" + info.name + "' (" + std::to_string(info.bytes) + " B)");
    }
    if (op.kind != OpKind::Alloc && op.kind != OpKind::Free) continue;
    if (op.tensor < 0 || static_cast<std::size_t>(op.tensor) >= program.tensors.size()) {
      add(report, where(program, i) + ": unknown tensor " + std::to_string(op.tensor));
      continue;
    }
    State& s = state[static_cast<std::size_t>(op.tensor)];
    if (op.kind == OpKind::Alloc) {
      if (s != State::Unborn) add(report, where(program, i) + ": tensor allocated twice");
      s = State::Live;
    } else {
      if (s != State::Live) add(report, where(program, i) + (s == State::Freed ? ": tensor freed twice" : ": free before alloc"));
      s = State::Freed;
    }
  }
  for (std::size_t t = 0; t < program.tensors.size(); ++t)
    if (state[t] == State::Live && !program.tensors[t].persistent)
      add(report, "rank " + std::to_string(program.rank) + ": tensor '" + program.tensors[t].name +
                      "' is never freed and is not a persistent tensor (leak)");
}

void check_collectives(const Plan& plan, const std::vector<Member<CollectiveKey>>& members, ValidationReport& report) {
  std::vector<std::pair<int, const Op*>> ops;  // of one collective: (rank, op), ranks ascending, the last op per rank
  for_each_key(members, [&](std::size_t first_member, std::size_t last_member) {
    ops.clear();
    for (std::size_t m = first_member; m < last_member; ++m) {
      if (!ops.empty() && ops.back().first == members[m].rank) ops.back().second = members[m].op;
      else ops.emplace_back(members[m].rank, members[m].op);
    }
    const CollectiveKey& key = members[first_member].key;
    const auto& group = plan.groups[static_cast<std::size_t>(key.group)];
    const Op* first = ops.front().second;
    // Built only for an error: a 1,024-rank plan has tens of thousands of collectives, all matched.
    const auto name = [&] {
      return "collective #" + std::to_string(key.sequence) + " of group " + std::to_string(key.group) + " ('" +
             first->label + "')";
    };
    for (int rank : group) {
      const bool joins = std::binary_search(ops.begin(), ops.end(), std::pair<int, const Op*>{rank, nullptr},
                                            [](const auto& a, const auto& b) { return a.first < b.first; });
      if (!joins) add(report, name() + ": rank " + std::to_string(rank) + " never joins (unmatched)");
    }
    const bool same_payload = first->collective_kind != CollectiveKind::Scatter && first->collective_kind != CollectiveKind::Gather;
    for (const auto& [rank, op] : ops) {
      if (op->collective_kind != first->collective_kind || op->root != first->root)
        add(report, name() + ": rank " + std::to_string(rank) + " calls " + collective_kind_name(op->collective_kind) +
                        " where others call " + collective_kind_name(first->collective_kind));
      else if (same_payload && op->payload != first->payload)
        add(report, name() + ": rank " + std::to_string(rank) + " sends " + std::to_string(op->payload) + " B, others " +
                        std::to_string(first->payload) + " B");
    }
  });
}

void check_messages(const std::vector<Member<MessageKey>>& members, ValidationReport& report) {
  for_each_key(members, [&](std::size_t first_member, std::size_t last_member) {
    const Op* send = nullptr;  // the last of each, as a map keyed by the message would keep
    const Op* recv = nullptr;
    for (std::size_t m = first_member; m < last_member; ++m) (members[m].op->kind == OpKind::Send ? send : recv) = members[m].op;
    const MessageKey& key = members[first_member].key;
    const auto name = [&] {  // built only for an error, as a collective's
      return "message #" + std::to_string(key.sequence) + " from rank " + std::to_string(key.sender) + " to rank " +
             std::to_string(key.receiver);
    };
    if (!send) add(report, name() + " ('" + recv->label + "'): received but never sent (unmatched)");
    else if (!recv) add(report, name() + " ('" + send->label + "'): sent but never received (unmatched)");
    else if (send->payload != recv->payload)
      add(report, name() + ": sends " + std::to_string(send->payload) + " B, receiver expects " +
                      std::to_string(recv->payload) + " B");
  });
}

// Kahn's algorithm over all ops; a collective's members form one node, as do a send and its receive
// (treated as a rendezvous, the conservative reading of NCCL's send/recv). `op_edges`: the stream-order and dependency
// edges between ops (check_program), laid out in one flat (CSR) array between nodes, edges inside one node dropped.
// Collectives and messages already reported as invalid (unknown group or peer) are not in `collectives` / `messages`
// and stay single nodes.
void check_acyclic(std::size_t op_count, const std::vector<Member<CollectiveKey>>& collectives,
                   const std::vector<Member<MessageKey>>& messages, const std::vector<OpEdge>& op_edges,
                   ValidationReport& report) {
  // 32-bit node and edge numbers: plans stay far below 2^32 ops (kMaxPlanOps), and the five arrays below take half
  // the memory they would in size_t (a 1,024-rank plan has 1.4 M ops).
  using Node = std::uint32_t;
  const auto n = static_cast<Node>(op_count);
  std::vector<Node> node(n);
  std::iota(node.begin(), node.end(), Node{0});
  // Every member of a collective or message stands for the first one gathered (the lowest rank's).
  const auto merge = [&node](const auto& members) {
    for_each_key(members, [&](std::size_t first, std::size_t last) {
      for (std::size_t m = first; m < last; ++m) node[members[m].global] = static_cast<Node>(members[first].global);
    });
  };
  merge(collectives);
  merge(messages);

  // Calls edge(from, to) for every edge between different nodes.
  const auto for_each_edge = [&](auto&& edge) {
    for (const OpEdge& e : op_edges) {
      const Node from = node[e.from], to = node[e.to];
      if (from != to) edge(from, to);
    }
  };
  std::vector<Node> edges_begin(static_cast<std::size_t>(n) + 1, 0);
  for_each_edge([&](Node from, Node) { ++edges_begin[from + 1]; });
  for (Node v = 0; v < n; ++v) edges_begin[v + 1] += edges_begin[v];
  std::vector<Node> edges(edges_begin[n]);
  std::vector<Node> fill(edges_begin.begin(), edges_begin.end() - 1);
  std::vector<Node> indegree(n, 0);
  for_each_edge([&](Node from, Node to) {
    edges[fill[from]++] = to;
    ++indegree[to];
  });

  std::vector<Node> ready;
  std::size_t nodes = 0, done = 0;
  for (Node v = 0; v < n; ++v)
    if (node[v] == v) {
      ++nodes;
      if (indegree[v] == 0) ready.push_back(v);
    }
  while (!ready.empty()) {
    const Node v = ready.back();
    ready.pop_back();
    ++done;
    for (Node e = edges_begin[v]; e < edges_begin[v + 1]; ++e)
      if (--indegree[edges[e]] == 0) ready.push_back(edges[e]);
  }
  if (done != nodes)
    add(report, "the plan has a cycle through streams, dependencies and collectives: " + std::to_string(nodes - done) +
                    " ops can never start (deadlock)");
}

}  // namespace

ValidationReport validate_plan(const Plan& plan) {
  ValidationReport report;
  const std::vector<std::size_t> base = global_bases(plan);
  Communication gathered;
  // About one stream edge an op, and the deps: twice the ops holds every plan we lower without growing (capacity never
  // written costs no memory).
  gathered.edges.reserve(2 * base.back());
  for (std::size_t r = 0; r < plan.programs.size(); ++r) {
    if (plan.programs[r].rank != static_cast<int>(r)) add(report, "program " + std::to_string(r) + " is labelled rank " + std::to_string(plan.programs[r].rank));
    check_program(plan, plan.programs[r], base[r], report, gathered);
  }
  sort_by_key(gathered.collectives);
  sort_by_key(gathered.messages);
  check_collectives(plan, gathered.collectives, report);
  check_messages(gathered.messages, report);
  check_acyclic(base.back(), gathered.collectives, gathered.messages, gathered.edges, report);
  return report;
}

}  // namespace shardscope
