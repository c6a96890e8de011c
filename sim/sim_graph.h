// The plan flattened for simulation: every op of every rank gets a global id; per op its stream successor,
// its dependents (CSR), how many predecessors it waits for, its duration, and the collective or message it
// belongs to. Built once per simulation in O(ops + deps); the event loop then only walks these arrays.
#pragma once
#include "sim/sim_layer.h"
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "sim/cost_model.h"

namespace shardscope {

using GlobalOp = std::int32_t;

// One collective (all members of a group with one sequence number) or one message (a Send and its Recv):
// its members start together once the last one has arrived, and run for `duration_ns`.
struct SimInstance {
  std::int32_t member_begin = 0;  // into SimGraph::members, ranks ascending (the sender first for a message)
  std::int32_t member_count = 0;
  std::int32_t expected = 0;      // group size, or 2 for a message
  TimeNs duration_ns = 0;
  CollectiveShape shape;          // for messages: kind unused, ranks 2, size = message bytes
  bool message = false;
};

struct SimGraph {
  std::vector<GlobalOp> rank_offset;       // global id of (rank, op index) = rank_offset[rank] + index; size ranks + 1
  std::vector<GlobalOp> next_on_stream;    // the op after it on its (rank, stream); -1 for the last
  std::vector<std::int32_t> pending;       // predecessors to wait for: stream predecessor + deps (the event loop counts it down)
  std::vector<std::int32_t> dependents_begin;  // CSR over `dependents`, size ops + 1
  std::vector<GlobalOp> dependents;
  std::vector<TimeNs> duration_ns;         // compute ops; for collectives / messages see the instance
  std::vector<std::uint8_t> instant;       // 1: an alloc, free or phase op, which ends as it begins
  std::vector<std::int32_t> instance_of;   // -1: not a collective or message
  std::vector<SimInstance> instances;
  std::vector<GlobalOp> members;
  // The executor's host time before a compute op (a profile of our executor only: allocations with their zero fill,
  // frees, phases, issuing): the op begins that long after it is ready, so the gap shows as idle, as it does in an
  // executed trace. Empty when no op has one (every simulation without such a profile).
  std::vector<TimeNs> host_delay_ns;
  int last_step = 0;  // the largest step of any op (0: set-up only)

  std::size_t op_count() const { return rank_offset.empty() ? 0 : static_cast<std::size_t>(rank_offset.back()); }
  // How long op `id` runs once begun: its collective's or message's time, its compute time, 0 for alloc / free / phase.
  TimeNs duration_of(std::size_t id) const {
    const std::int32_t instance = instance_of[id];
    return instance < 0 ? duration_ns[id] : instances[static_cast<std::size_t>(instance)].duration_ns;
  }
  TimeNs delay_of(std::size_t id) const { return host_delay_ns.empty() ? 0 : host_delay_ns[id]; }
  // By binary search over rank_offset rather than from a per-op array: 4 B an op fewer, and only the emitter (once
  // per event), the sizing of message and scatter / gather instances and error paths ask.
  int rank_of(GlobalOp id) const {
    return static_cast<int>(std::upper_bound(rank_offset.begin(), rank_offset.end(), id) - rank_offset.begin()) - 1;
  }
  const Op& op(const Plan& plan, GlobalOp id) const {
    const int rank = rank_of(id);
    return plan.programs[static_cast<std::size_t>(rank)].ops[static_cast<std::size_t>(id - rank_offset[static_cast<std::size_t>(rank)])];
  }
};

// Throws std::invalid_argument for plans the simulator cannot run (a collective on an unknown group); other
// defects (unmatched collectives, cycles) show up as ops that never start, which simulate() reports.
SimGraph build_sim_graph(const Plan& plan, const CostModel& costs);

}  // namespace shardscope
