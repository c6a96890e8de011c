// Plan validation (see validate.h).
#include "plan/validate.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <queue>
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

void check_tensors(const Program& program, ValidationReport& report) {
  enum class State { Unborn, Live, Freed };
  std::vector<State> state(program.tensors.size(), State::Unborn);
  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    for (OpIndex dep : op.deps)
      if (dep < 0 || static_cast<std::size_t>(dep) >= program.ops.size() || static_cast<std::size_t>(dep) == i)
        add(report, where(program, i) + ": dependency " + std::to_string(dep) + " out of range");
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

struct CollectiveKey {
  int group;
  std::int64_t sequence;
  bool operator<(const CollectiveKey& o) const { return group != o.group ? group < o.group : sequence < o.sequence; }
};

void check_collectives(const Plan& plan, ValidationReport& report) {
  // For each (group, sequence): the op of each member.
  std::map<CollectiveKey, std::map<int, const Op*>> members;
  for (const auto& program : plan.programs)
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind != OpKind::Collective) continue;
      if (op.group < 0 || static_cast<std::size_t>(op.group) >= plan.groups.size()) {
        add(report, where(program, i) + ": unknown process group " + std::to_string(op.group));
        continue;
      }
      const auto& group = plan.groups[static_cast<std::size_t>(op.group)];
      if (std::find(group.begin(), group.end(), program.rank) == group.end())
        add(report, where(program, i) + ": rank is not a member of group " + std::to_string(op.group));
      members[{op.group, op.sequence}][program.rank] = &op;
    }
  for (const auto& [key, ops] : members) {
    const auto& group = plan.groups[static_cast<std::size_t>(key.group)];
    const Op* first = ops.begin()->second;
    const std::string name = "collective #" + std::to_string(key.sequence) + " of group " + std::to_string(key.group) +
                             " ('" + first->label + "')";
    for (int rank : group)
      if (!ops.count(rank)) add(report, name + ": rank " + std::to_string(rank) + " never joins (unmatched)");
    const bool same_payload = first->collective_kind != CollectiveKind::Scatter && first->collective_kind != CollectiveKind::Gather;
    for (const auto& [rank, op] : ops) {
      if (op->collective_kind != first->collective_kind || op->root != first->root)
        add(report, name + ": rank " + std::to_string(rank) + " calls " + collective_kind_name(op->collective_kind) +
                        " where others call " + collective_kind_name(first->collective_kind));
      else if (same_payload && op->payload != first->payload)
        add(report, name + ": rank " + std::to_string(rank) + " sends " + std::to_string(op->payload) + " B, others " +
                        std::to_string(first->payload) + " B");
    }
  }
}

struct MessageKey {
  int sender, receiver;
  std::int64_t sequence;
  bool operator<(const MessageKey& o) const {
    return std::tie(sender, receiver, sequence) < std::tie(o.sender, o.receiver, o.sequence);
  }
};

MessageKey message_key(int rank, const Op& op) {
  return op.kind == OpKind::Send ? MessageKey{rank, op.peer, op.sequence} : MessageKey{op.peer, rank, op.sequence};
}

void check_messages(const Plan& plan, ValidationReport& report) {
  std::map<MessageKey, std::pair<const Op*, const Op*>> pairs;  // (send, recv)
  const int world = static_cast<int>(plan.programs.size());
  for (const auto& program : plan.programs)
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind != OpKind::Send && op.kind != OpKind::Recv) continue;
      if (op.peer < 0 || op.peer >= world || op.peer == program.rank) {
        add(report, where(program, i) + ": peer rank " + std::to_string(op.peer) + " is not another rank of the plan");
        continue;
      }
      auto& pair = pairs[message_key(program.rank, op)];
      (op.kind == OpKind::Send ? pair.first : pair.second) = &op;
    }
  for (const auto& [key, pair] : pairs) {
    const std::string name = "message #" + std::to_string(key.sequence) + " from rank " + std::to_string(key.sender) +
                             " to rank " + std::to_string(key.receiver);
    if (!pair.first) add(report, name + " ('" + pair.second->label + "'): received but never sent (unmatched)");
    else if (!pair.second) add(report, name + " ('" + pair.first->label + "'): sent but never received (unmatched)");
    else if (pair.first->payload != pair.second->payload)
      add(report, name + ": sends " + std::to_string(pair.first->payload) + " B, receiver expects " +
                      std::to_string(pair.second->payload) + " B");
  }
}

// Kahn's algorithm over all ops; a collective's members form one node, as do a send and its receive
// (treated as a rendezvous, the conservative reading of NCCL's send/recv).
void check_acyclic(const Plan& plan, ValidationReport& report) {
  std::vector<std::size_t> base(plan.programs.size() + 1, 0);
  for (std::size_t r = 0; r < plan.programs.size(); ++r) base[r + 1] = base[r] + plan.programs[r].ops.size();
  const std::size_t n = base.back();
  std::vector<std::size_t> node(n);
  std::iota(node.begin(), node.end(), 0);
  std::map<CollectiveKey, std::size_t> representative;
  std::map<MessageKey, std::size_t> message_representative;
  for (std::size_t r = 0; r < plan.programs.size(); ++r)
    for (std::size_t i = 0; i < plan.programs[r].ops.size(); ++i) {
      const Op& op = plan.programs[r].ops[i];
      if (op.kind == OpKind::Collective) {
        auto [it, inserted] = representative.emplace(CollectiveKey{op.group, op.sequence}, base[r] + i);
        node[base[r] + i] = it->second;
      } else if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        auto [it, inserted] =
            message_representative.emplace(message_key(plan.programs[r].rank, op), base[r] + i);
        node[base[r] + i] = it->second;
      }
    }
  std::vector<std::vector<std::size_t>> edges(n);
  std::vector<std::size_t> indegree(n, 0);
  auto edge = [&](std::size_t from, std::size_t to) {
    from = node[from];
    to = node[to];
    if (from == to) return;
    edges[from].push_back(to);
    ++indegree[to];
  };
  for (std::size_t r = 0; r < plan.programs.size(); ++r) {
    const auto& ops = plan.programs[r].ops;
    std::map<Stream, std::size_t> last;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto it = last.find(ops[i].stream);
      if (it != last.end()) edge(base[r] + it->second, base[r] + i);
      last[ops[i].stream] = i;
      for (OpIndex dep : ops[i].deps)
        if (dep >= 0 && static_cast<std::size_t>(dep) < ops.size()) edge(base[r] + static_cast<std::size_t>(dep), base[r] + i);
    }
  }
  std::queue<std::size_t> ready;
  std::size_t nodes = 0, done = 0;
  for (std::size_t v = 0; v < n; ++v)
    if (node[v] == v) {
      ++nodes;
      if (indegree[v] == 0) ready.push(v);
    }
  while (!ready.empty()) {
    const std::size_t v = ready.front();
    ready.pop();
    ++done;
    for (std::size_t w : edges[v])
      if (--indegree[w] == 0) ready.push(w);
  }
  if (done != nodes)
    add(report, "the plan has a cycle through streams, dependencies and collectives: " + std::to_string(nodes - done) +
                    " ops can never start (deadlock)");
}

}  // namespace

ValidationReport validate_plan(const Plan& plan) {
  ValidationReport report;
  for (std::size_t r = 0; r < plan.programs.size(); ++r) {
    if (plan.programs[r].rank != static_cast<int>(r)) add(report, "program " + std::to_string(r) + " is labelled rank " + std::to_string(plan.programs[r].rank));
    check_tensors(plan.programs[r], report);
  }
  check_collectives(plan, report);
  check_messages(plan, report);
  check_acyclic(plan, report);
  return report;
}

}  // namespace shardscope
