// Test helpers for the trace layer: a small hand-made plan and header, an event list whose figures the tests
// work out by hand, temporary files, and field-by-field comparisons.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "trace/events/trace_sink.h"

namespace shardscope::testing {

inline Op op(OpKind kind, Stream stream, std::string label, int step) {
  Op o;
  o.kind = kind;
  o.stream = stream;
  o.label = std::move(label);
  o.step = step;
  return o;
}

// Ranks 0 and 1 run the same program (the file stores rank 1 as "same as rank 0"); rank 2 differs.
// Rank 0/1 ops: 0 alloc fc1.weight, 1 phase model_created, 2 fc1 forward, 3 alloc fc1 out,
// 4 all-reduce bucket 0 (communication), 5 free fc1 out, 6 send to rank 2 (communication).
inline std::shared_ptr<const Plan> small_plan() {
  Program p;
  Op alloc_w = op(OpKind::Alloc, Stream::Compute, "alloc fc1.weight", 0);
  alloc_w.tensor = 0;
  Op phase = op(OpKind::Phase, Stream::Compute, "model created", 0);
  phase.phase = "model_created";
  Op fwd = op(OpKind::Compute, Stream::Compute, "fc1 forward", 1);
  fwd.layer = 0;
  fwd.compute_kind = ComputeKind::Forward;
  fwd.flops = 2.5e6;
  fwd.bytes_accessed = 4096;
  fwd.deps = {0};
  Op alloc_a = op(OpKind::Alloc, Stream::Compute, "alloc fc1 out", 1);
  alloc_a.tensor = 1;
  Op ar = op(OpKind::Collective, Stream::Communication, "all-reduce bucket 0", 1);
  ar.collective_kind = CollectiveKind::AllReduce;
  ar.group = 0;
  ar.sequence = 0;
  ar.payload = 1000;
  ar.deps = {2};
  Op free_a = op(OpKind::Free, Stream::Compute, "free fc1 out", 1);
  free_a.tensor = 1;
  Op send = op(OpKind::Send, Stream::Communication, "send activations to rank 2", 1);
  send.peer = 2;
  send.payload = 256;
  send.sequence = 0;
  send.micro_batch = 0;
  p.ops = {alloc_w, phase, fwd, alloc_a, ar, free_a, send};
  p.tensors = {{.name = "fc1.weight", .bytes = 1000, .category = Category::Parameters, .persistent = true,
                .element = ElementType::Fp32, .initial_values = {}},
               {.name = "fc1 out \"x\"", .bytes = 500, .category = Category::Activations, .persistent = false,
                .element = ElementType::Fp32, .initial_values = {}}};

  Program q;
  Op recv = op(OpKind::Recv, Stream::Copy, "recv activations from rank 0", 1);
  recv.peer = 0;
  recv.payload = 256;
  recv.micro_batch = 0;
  Op bcast = op(OpKind::Collective, Stream::Communication, "broadcast params", 0);
  bcast.collective_kind = CollectiveKind::Broadcast;
  bcast.root = 0;
  bcast.group = 0;
  Op opt = op(OpKind::Compute, Stream::Compute, "adam step", 1);
  opt.compute_kind = ComputeKind::Optimizer;
  opt.flops = 1.0 / 3.0;
  q.ops = {recv, bcast, opt};
  q.tensors = {{.name = "adam exp_avg fc1.weight", .bytes = 80 * kGiB, .category = Category::OptimizerState, .persistent = true,
                 .element = ElementType::Fp32, .initial_values = {}}};

  auto plan = std::make_shared<Plan>();
  plan->strategy = "ddp";
  plan->behaviour = "PyTorch 2.x";
  plan->groups = {{0, 1, 2}, {0, 2}};
  plan->notes = {"convolution workspaces not modelled", "ünïcode ✓"};
  plan->programs = {p, p, q};
  for (int r = 0; r < 3; ++r) plan->programs[static_cast<std::size_t>(r)].rank = r;
  return plan;
}

inline TraceHeader small_header() {
  TraceHeader h;
  h.tool_version = "0.1.0-test";
  h.source = "simulator";
  h.scenario_json = "{\n  \"model\": {\"spec\": \"mlp:3x16\"}\n}";
  h.accounting_rules = "PyTorch 2.x caching allocator rules";
  h.plan = small_plan();
  h.devices = {{0, "A100-80GB", 80 * kGiB, -1}, {1, "A100-80GB", 80 * kGiB, -1}, {2, "H100 \"SXM\"", 80 * kGiB, 3}};
  return h;
}

inline TraceEvent ev(TraceEventKind kind, int rank, TimeNs t, OpIndex op = -1, int step = 0, Stream stream = Stream::Compute) {
  TraceEvent e;
  e.kind = kind;
  e.rank = rank;
  e.t_ns = t;
  e.op = op;
  e.step = step;
  e.stream = stream;
  return e;
}

inline TraceEvent mem(TraceEventKind kind, int rank, TimeNs t, OpIndex op, TensorId tensor, Category c, Bytes bytes, Bytes allocated,
                      Bytes reserved) {
  TraceEvent e = ev(kind, rank, t, op);
  e.tensor = tensor;
  e.category = c;
  e.bytes = bytes;
  e.allocated_after = allocated;
  e.reserved_after = reserved;
  return e;
}

inline TraceEvent with_text(TraceEvent e, std::string text) {
  e.text = std::move(text);
  return e;
}

// The hand-made run the store and export tests check (times in ns):
// rank 0: params 1000 B at 0 (allocated 1000, reserved 2048); phase model_created at 0; fc1 forward (op 2) step 1
//   on compute [100, 400]; activations 500 B at 150 (allocated 1500); all-reduce (op 4) on communication
//   [400, 1234567]; fc1 forward again, step 2, [500, 900]; activations freed at 1000 (allocated 1000);
//   send (op 6) begun on communication at 1300000 and never ended.
// rank 1: params 1000 B at 50 (allocated 1000, reserved 1000); measured device memory 3000 of 80 GiB at 60;
//   error "out of memory" at 70.
// run end at 1500000 ("rank 1 failed").
inline std::vector<TraceEvent> store_events() {
  using K = TraceEventKind;
  return {
      mem(K::Alloc, 0, 0, 0, 0, Category::Parameters, 1000, 1000, 2048),
      with_text(ev(K::Phase, 0, 0, 1), "model_created"),
      ev(K::OpBegin, 0, 100, 2, 1),
      mem(K::Alloc, 1, 50, 0, 0, Category::Parameters, 1000, 1000, 1000),
      [] {
        TraceEvent e = ev(K::DeviceMemory, 1, 60);
        e.bytes = 3000;
        e.reserved_after = 80 * kGiB;
        return e;
      }(),
      with_text(ev(K::Error, 1, 70, -1, 1), "out of memory"),
      mem(K::Alloc, 0, 150, 3, 1, Category::Activations, 500, 1500, 2048),
      ev(K::OpEnd, 0, 400, 2, 1),
      ev(K::OpBegin, 0, 400, 4, 1, Stream::Communication),
      ev(K::OpBegin, 0, 500, 2, 2),
      ev(K::OpEnd, 0, 900, 2, 2),
      mem(K::Free, 0, 1000, 5, 1, Category::Activations, 500, 1000, 2048),
      ev(K::OpEnd, 0, 1234567, 4, 1, Stream::Communication),
      ev(K::OpBegin, 0, 1300000, 6, 1, Stream::Communication),
      with_text(ev(K::RunEnd, -1, 1500000), "rank 1 failed"),
  };
}

// A fresh path in the temporary directory, removed when the object goes.
class TempFile {
 public:
  explicit TempFile(const std::string& stem) {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             ("shardscope_" + stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".sstrace"))
                .string();
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::remove(path);  // not O_TRUNC: ext4 flushes a truncated file to disk, slow when done thousands of times
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void expect_event_eq(const TraceEvent& a, const TraceEvent& b, const std::string& where) {
  EXPECT_EQ(a.kind, b.kind) << where;
  EXPECT_EQ(a.rank, b.rank) << where;
  EXPECT_EQ(a.t_ns, b.t_ns) << where;
  EXPECT_EQ(a.step, b.step) << where;
  EXPECT_EQ(a.op, b.op) << where;
  EXPECT_EQ(a.stream, b.stream) << where;
  EXPECT_EQ(a.category, b.category) << where;
  EXPECT_EQ(a.bytes, b.bytes) << where;
  EXPECT_EQ(a.allocated_after, b.allocated_after) << where;
  EXPECT_EQ(a.reserved_after, b.reserved_after) << where;
  EXPECT_EQ(a.tensor, b.tensor) << where;
  EXPECT_EQ(a.text, b.text) << where;
}

// Every field of the plan except op deps, which trace files do not store.
inline void expect_plan_eq(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.behaviour, b.behaviour);
  EXPECT_EQ(a.groups, b.groups);
  EXPECT_EQ(a.notes, b.notes);
  ASSERT_EQ(a.programs.size(), b.programs.size());
  for (std::size_t r = 0; r < a.programs.size(); ++r) {
    const auto& pa = a.programs[r];
    const auto& pb = b.programs[r];
    EXPECT_EQ(pa.rank, pb.rank);
    ASSERT_EQ(pa.ops.size(), pb.ops.size()) << "rank " << r;
    for (std::size_t i = 0; i < pa.ops.size(); ++i) {
      const Op& x = pa.ops[i];
      const Op& y = pb.ops[i];
      const std::string where = "rank " + std::to_string(r) + " op " + std::to_string(i);
      EXPECT_EQ(x.kind, y.kind) << where;
      EXPECT_EQ(x.stream, y.stream) << where;
      EXPECT_EQ(x.label, y.label) << where;
      EXPECT_EQ(x.step, y.step) << where;
      EXPECT_EQ(x.layer, y.layer) << where;
      EXPECT_EQ(x.micro_batch, y.micro_batch) << where;
      EXPECT_EQ(x.compute_kind, y.compute_kind) << where;
      EXPECT_EQ(x.flops, y.flops) << where;
      EXPECT_EQ(x.bytes_accessed, y.bytes_accessed) << where;
      EXPECT_EQ(x.collective_kind, y.collective_kind) << where;
      EXPECT_EQ(x.group, y.group) << where;
      EXPECT_EQ(x.sequence, y.sequence) << where;
      EXPECT_EQ(x.payload, y.payload) << where;
      EXPECT_EQ(x.root, y.root) << where;
      EXPECT_EQ(x.peer, y.peer) << where;
      EXPECT_EQ(x.tensor, y.tensor) << where;
      EXPECT_EQ(x.phase, y.phase) << where;
    }
    ASSERT_EQ(pa.tensors.size(), pb.tensors.size()) << "rank " << r;
    for (std::size_t i = 0; i < pa.tensors.size(); ++i) {
      EXPECT_EQ(pa.tensors[i].name, pb.tensors[i].name);
      EXPECT_EQ(pa.tensors[i].bytes, pb.tensors[i].bytes);
      EXPECT_EQ(pa.tensors[i].category, pb.tensors[i].category);
      EXPECT_EQ(pa.tensors[i].persistent, pb.tensors[i].persistent);
    }
  }
}

}  // namespace shardscope::testing
