// The importers (engine/trace/import/): the data-only pickle reader on pickles CPython wrote (bytes from
// pickle.dumps, protocol 4, pasted with their meaning) and on hostile ones; the caching allocator's block split and
// merge by address (sizes derived from CUDACachingAllocator.cpp's rules by hand); the snapshot importer on rings
// built here, whose every expected category follows from the rule in memory_snapshot_import.h and the frames given.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/import/import_input.h"
#include "trace/import/memory_snapshot_import.h"
#include "trace/import/pickle_reader.h"
#include "trace/import/snapshot_blocks.h"
#include "trace/store/trace_store.h"

namespace shardscope {
namespace {

template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

std::string error_of(const std::string& pickle) {
  try {
    parse_pickle(pickle, "t.pickle");
  } catch (const PickleError& e) {
    return e.what();
  }
  return "";
}

TEST(PickleReader, ReadsTheDataTypesOfASnapshot) {
  // pickle.dumps({"a": [1, -2, 3.5, True, None, "x", b"y", (1, 2)], "big": 2**40, "neg": -2**40}, protocol=4)
  const std::string p = bytes(
      "\x80\x04\x95\x49\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01\x61\x94\x5d\x94\x28\x4b\x01\x4a\xfe\xff\xff\xff\x47\x40"
      "\x0c\x00\x00\x00\x00\x00\x00\x88\x4e\x8c\x01\x78\x94\x43\x01\x79\x94\x4b\x01\x4b\x02\x86\x94\x65\x8c\x03\x62\x69\x67\x94"
      "\x8a\x06\x00\x00\x00\x00\x00\x01\x8c\x03\x6e\x65\x67\x94\x8a\x06\x00\x00\x00\x00\x00\xff\x75\x2e");
  const PickleDocument doc = parse_pickle(p, "t.pickle");
  const PickleRef root = doc.root();
  ASSERT_TRUE(root.is(PickleKind::Dict));
  EXPECT_EQ(root.size(), 3u);
  const auto a = root.get("a");
  ASSERT_TRUE(a && a->is(PickleKind::List));
  const std::vector<PickleRef> items = a->items();
  ASSERT_EQ(items.size(), 8u);
  EXPECT_EQ(items[0].as_int(), 1);
  EXPECT_EQ(items[1].as_int(), -2);           // BININT, four bytes two's complement
  EXPECT_EQ(items[2].as_number(), 3.5);       // BINFLOAT, big-endian
  EXPECT_TRUE(items[3].is(PickleKind::Bool));
  EXPECT_EQ(items[3].as_int(), 1);
  EXPECT_TRUE(items[4].is(PickleKind::None));
  EXPECT_EQ(items[5].as_str(), "x");
  EXPECT_TRUE(items[6].is(PickleKind::Bytes));
  EXPECT_FALSE(items[6].as_str());            // bytes are not text
  ASSERT_TRUE(items[7].is(PickleKind::Tuple));
  EXPECT_EQ(items[7].items()[1].as_int(), 2);
  EXPECT_EQ(root.get("big")->as_int(), std::int64_t{1} << 40);   // LONG1, 6 bytes little-endian
  EXPECT_EQ(root.get("neg")->as_int(), -(std::int64_t{1} << 40));  // its top bit set: negative
  EXPECT_FALSE(root.get("missing"));
}

TEST(PickleReader, MemoReferencesShareOneValue) {
  // x = [1]; pickle.dumps([x, x], protocol=4): the second is BINGET 1
  const PickleDocument doc =
      parse_pickle(bytes("\x80\x04\x95\x0c\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x5d\x94\x4b\x01\x61\x68\x01\x65\x2e"), "t");
  const auto items = doc.root().items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[1].items()[0].as_int(), 1);
  EXPECT_EQ(doc.node_count(), 3u);  // the outer list, x and 1: the second reference is not a copy
}

TEST(PickleReader, AListInsideItselfIsACycleNotARunaway) {
  // l = []; l.append(l); pickle.dumps(l, protocol=4)
  const PickleDocument doc = parse_pickle(bytes("\x80\x04\x95\x06\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x68\x00\x61\x2e"), "t");
  PickleRef v = doc.root();
  for (int depth = 0; depth < 100; ++depth) v = v.items().at(0);  // as deep as one likes: the same value
  EXPECT_EQ(doc.node_count(), 1u);
}

TEST(PickleReader, RefusesEveryOpcodeThatRunsCode) {
  // pickle.dumps(os.system, protocol=4): STACK_GLOBAL at byte 28 (after PROTO, FRAME and two strings)
  const std::string code = bytes("\x80\x04\x95\x14\x00\x00\x00\x00\x00\x00\x00\x8c\x05\x70\x6f\x73\x69\x78\x94\x8c\x06\x73\x79\x73"
                                 "\x74\x65\x6d\x94\x93\x94\x2e");
  EXPECT_NE(error_of(code).find("t.pickle: pickle byte 28: refused opcode STACK_GLOBAL"), std::string::npos) << error_of(code);
  EXPECT_NE(error_of(bytes("\x80\x02" "cos\nsystem\n.")).find("refused opcode GLOBAL"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x02N)R.")).find("pickle byte 4: refused opcode REDUCE"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x02}N" "b.")).find("refused opcode BUILD"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x04\x8f.")).find("refused opcode EMPTY_SET"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x02" "I1\n.")).find("protocol 0"), std::string::npos);
}

TEST(PickleReader, NamesWhatIsWrongWithABrokenPickle) {
  EXPECT_NE(error_of(bytes("\x80\x04]")).find("ends without a STOP opcode"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x04].xyz")).find("3 bytes follow the pickle's STOP"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x04\x8c\x09" "abc")).find("runs past the end"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x04h\x07.")).find("memo entry 7, which was never stored"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x04\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00.")).find("wider than 64 bits"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x04K\x05K\x06" "a.")).find("needs a list"), std::string::npos);  // APPEND onto an int
  EXPECT_NE(error_of(bytes("\x80\x04" "0.")).find("pops an empty stack"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x04K\x01K\x02.")).find("leaves 2 values"), std::string::npos);
  EXPECT_NE(error_of("hello").find("not a pickle"), std::string::npos);
  EXPECT_NE(error_of(bytes("\x80\x06.")).find("protocol 6"), std::string::npos);
}

constexpr std::uint64_t kMiB = 1 << 20;

TEST(SnapshotBlocks, SmallPoolSplitsDownTo512Bytes) {
  SnapshotBlocks blocks;
  const std::uint64_t a = 1 << 30;
  blocks.segment_alloc(a, 2 * kMiB);                 // kSmallBuffer: a small-pool segment
  EXPECT_EQ(blocks.alloc(a, 1000), 1024);            // rounded up to 512 B multiples, the rest split off
  EXPECT_EQ(blocks.alloc(a + 1024, 4), 512);         // at least 512
  EXPECT_EQ(blocks.alloc(a + 4096, 10), std::nullopt);  // no free block starts there
  blocks.release(a);
  EXPECT_EQ(blocks.alloc(a, 600), 1024);             // the freed 1024-byte block: 424 B would remain, < 512: no split
}

TEST(SnapshotBlocks, LargePoolKeepsAWholeBlockUnlessMoreThan1MiBRemains) {
  SnapshotBlocks blocks;
  const std::uint64_t b = 1ull << 32;
  blocks.segment_alloc(b, 20 * kMiB);
  EXPECT_EQ(blocks.alloc(b, 19 * kMiB + 512 * 1024), 20 * kMiB);  // 0.5 MiB would remain: the whole segment
  blocks.release(b);
  EXPECT_EQ(blocks.alloc(b, 10 * kMiB), 10 * kMiB);               // 10 MiB remain (> 1 MiB): split
  EXPECT_EQ(blocks.alloc(b + 10 * kMiB, 10 * kMiB - 100), 10 * kMiB);  // rounded; nothing remains
  blocks.release(b);
  blocks.release(b + 10 * kMiB);                                  // merges with its free neighbour
  EXPECT_EQ(blocks.alloc(b, 20 * kMiB), 20 * kMiB);
  SnapshotBlocks capped(8 * kMiB);                                // max_split_size: a request above it is not split
  capped.segment_alloc(b, 20 * kMiB);
  EXPECT_EQ(capped.alloc(b, 10 * kMiB), 20 * kMiB);
}

// A tiny pickle writer (protocol 2 opcodes only: dicts, lists, str, int) for snapshots built in a test.
struct Py {
  std::string out;
  void str(const std::string& s) {
    out += '\x58';  // BINUNICODE
    const auto n = static_cast<std::uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
    out += s;
  }
  void integer(std::int64_t v) {
    out += '\x8a';  // LONG1, 8 bytes
    out += '\x08';
    for (int i = 0; i < 8; ++i) out += static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
  }
  void dict_begin() { out += "}("; }
  void dict_end() { out += 'u'; }
  void list_begin() { out += "]("; }
  void list_end() { out += 'e'; }
};

struct Frame {
  std::string name, file;
};

void entry(Py& p, const std::string& action, std::uint64_t addr, std::int64_t size, std::int64_t time_us,
           const std::vector<Frame>& frames) {
  p.dict_begin();
  p.str("action"); p.str(action);
  p.str("addr"); p.integer(static_cast<std::int64_t>(addr));
  p.str("size"); p.integer(size);
  p.str("time_us"); p.integer(time_us);
  p.str("frames");
  p.list_begin();
  for (const Frame& f : frames) {
    p.dict_begin();
    p.str("name"); p.str(f.name);
    p.str("filename"); p.str(f.file);
    p.str("line"); p.integer(7);
    p.dict_end();
  }
  p.list_end();
  p.dict_end();
}

const Frame kScript{"train", "train.py"};
const Frame kForward{"forward", "/py/torch/nn/modules/linear.py"};
const Frame kInitGroup{"_init_group", "/py/torch/optim/adam.py"};
const Frame kForeach{"_multi_tensor_adam", "/py/torch/optim/adam.py"};
const Frame kEngine{"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "??"};
const Frame kNode{"torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor>&&)", "??"};
const Frame kReducer{"c10d::Reducer::initialize_buckets(std::vector<c10d::Reducer::Bucket>)", "??"};
const Frame kWorkspace{"at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)", "??"};
const Frame kTo{"_apply", "/py/torch/nn/modules/module.py"};

TEST(MemorySnapshotImport, CategoriesFromFramesAndWhatHappensLater) {
  const std::uint64_t s = 1ull << 34;  // one large segment; the blocks follow each other
  Py p;
  p.out = "\x80\x02";
  p.dict_begin();
  p.str("segments");
  p.list_begin();
  p.list_end();
  p.str("device_traces");
  p.list_begin();
  p.list_begin();
  entry(p, "segment_alloc", s, 20 * kMiB, 100, {kTo, kScript});
  entry(p, "alloc", s, 2 * kMiB, 100, {kTo, kScript});                            // 0: parameters (model.to)
  entry(p, "alloc", s + 2 * kMiB, 2 * kMiB, 101, {kWorkspace, kForward, kScript});  // 1: cuBLAS workspace
  entry(p, "alloc", s + 4 * kMiB, 2 * kMiB, 102, {kForward, kScript});             // 2: freed by the engine: activations
  entry(p, "alloc", s + 6 * kMiB, 2 * kMiB, 103, {kForward, kScript});             // 3: freed by the script: temporaries
  entry(p, "free_requested", s + 6 * kMiB, 2 * kMiB, 104, {kScript});
  entry(p, "free_completed", s + 6 * kMiB, 2 * kMiB, 104, {kScript});
  entry(p, "alloc", s + 6 * kMiB, 2 * kMiB, 105, {kNode, kEngine});                // 4: outlives backward: gradients
  entry(p, "alloc", s + 8 * kMiB, 2 * kMiB, 106, {kNode, kEngine});                // 5: freed inside backward: temporaries
  entry(p, "free_requested", s + 8 * kMiB, 2 * kMiB, 107, {kEngine});
  entry(p, "free_requested", s + 4 * kMiB, 2 * kMiB, 108, {kEngine});
  entry(p, "alloc", s + 10 * kMiB, 2 * kMiB, 109, {kInitGroup, kScript});          // 6: outlives the step: optimizer state
  entry(p, "alloc", s + 12 * kMiB, 2 * kMiB, 110, {kForeach, kScript});            // 7: freed in the step: temporaries
  entry(p, "free_requested", s + 12 * kMiB, 2 * kMiB, 111, {kForeach, kScript});
  entry(p, "alloc", s + 14 * kMiB, 2 * kMiB, 112, {kReducer, kScript});            // 8: DDP bucket
  entry(p, "alloc", s + 16 * kMiB, 3 * kMiB, 113, {kScript});                      // 9: the rest: temporaries
  p.list_end();
  p.list_end();
  p.dict_end();
  p.out += '.';
  const ImportedRun run = import_memory_snapshot(p.out, "built.pickle");
  std::vector<const TraceEvent*> allocs;
  for (const TraceEvent& e : run.events)
    if (e.kind == TraceEventKind::Alloc && e.bytes > 0) allocs.push_back(&e);
  const std::vector<Category> want = {Category::Parameters, Category::Temporaries, Category::Activations, Category::Temporaries,
                                      Category::Gradients,  Category::Temporaries, Category::OptimizerState, Category::Temporaries,
                                      Category::DdpBuckets, Category::Temporaries};
  ASSERT_EQ(allocs.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(allocs[i]->category, want[i]) << "allocation " << i << ": " << allocs[i]->text;
  EXPECT_EQ(allocs[1]->text, "cuBLAS workspace");
  EXPECT_EQ(allocs[4]->text, "AddmmBackward0 (autograd)");
  EXPECT_EQ(allocs[2]->text, "forward (linear.py:7) in train (train.py:7)");
  // Every block is its request (2 MiB and 3 MiB are 512-byte multiples) and each split leaves > 1 MiB except the
  // last: 20 − 16 − 3 = 1 MiB is not more than kSmallSize, so the last allocation takes the whole 4 MiB rest.
  EXPECT_EQ(allocs[9]->bytes, 4 * kMiB);
  // One event per alloc, free_requested and segment entry, the segment one 0 bytes moving reserved; then RunEnd.
  ASSERT_EQ(run.events.size(), 16u);
  EXPECT_EQ(run.events[0].bytes, 0);
  EXPECT_EQ(run.events[0].reserved_after, static_cast<Bytes>(20 * kMiB));
  EXPECT_EQ(run.events.back().kind, TraceEventKind::RunEnd);
  // allocated at the end: nine allocations of 2 MiB, four of them freed, plus the 4 MiB block.
  EXPECT_EQ(run.events[run.events.size() - 2].allocated_after, static_cast<Bytes>((5 * 2 + 4) * kMiB));
  EXPECT_EQ(run.events[1].t_ns, 0);
  EXPECT_EQ(run.events.back().t_ns, 13'000);  // time_us 113 − 100
  EXPECT_TRUE(run.notes.empty());
}

TEST(MemorySnapshotImport, WhatWasLiveBeforeTheRingStartsAtItsFirstEntry) {
  // A block allocated before recording and freed in the ring: its size is only the rounded request (a note says so).
  Py p;
  p.out = "\x80\x02";
  p.dict_begin();
  p.str("device_traces");
  p.list_begin();
  p.list_begin();
  entry(p, "free_requested", 4096, 1000, 50, {kScript});
  p.list_end();
  p.list_end();
  p.dict_end();
  p.out += '.';
  const ImportedRun run = import_memory_snapshot(p.out, "late.pickle");
  ASSERT_EQ(run.events.size(), 3u);
  EXPECT_EQ(run.events[0].kind, TraceEventKind::Alloc);
  EXPECT_EQ(run.events[0].bytes, 1024);
  EXPECT_EQ(run.events[1].kind, TraceEventKind::Free);
  EXPECT_EQ(run.events[1].allocated_after, 0);
  EXPECT_EQ(run.notes.size(), 2u);  // live before the ring; a block size approximated
}

TEST(MemorySnapshotImport, RefusesWhatIsNotASnapshot) {
  auto error = [](const std::string& pickle) {
    try {
      import_memory_snapshot(pickle, "x.pickle");
    } catch (const ImportError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(bytes("\x80\x02K\x05.")).find("holds a int"), std::string::npos);
  EXPECT_NE(error(bytes("\x80\x02}.")).find("no 'device_traces'"), std::string::npos);
  EXPECT_NE(error(bytes("\x80\x02]." )).find("_record_memory_history"), std::string::npos);
  Py p;
  p.out = "\x80\x02";
  p.dict_begin();
  p.str("device_traces");
  p.list_begin();
  p.list_begin();
  entry(p, "alloc", 0, -4, 1, {});
  p.list_end();
  p.list_end();
  p.dict_end();
  p.out += '.';
  EXPECT_NE(error(p.out).find("device_traces[0][0]: 'size' = -4 is out of range"), std::string::npos) << error(p.out);
}

TEST(ImportInput, DetectsFormatsByContent) {
  EXPECT_EQ(detect_format(bytes("SSTRACE\0\x02\0\0\0")), ForeignFormat::ShardScopeTrace);
  EXPECT_EQ(detect_format(bytes("\x80\x04}.")), ForeignFormat::MemorySnapshot);
  EXPECT_EQ(detect_format("  {\"schemaVersion\": 1, \"traceEvents\": []}"), ForeignFormat::ProfilerTrace);
  EXPECT_EQ(detect_format("{\"name\": \"a scenario\"}"), ForeignFormat::Unknown);
  EXPECT_THROW(gunzip(bytes("\x1f\x8b\x08\x00\x00\x00\x00\x00"), "cut.gz"), ImportError);
}

TEST(TraceStoreTexts, APlanLessTraceNamesItsSpansAndTensors) {
  TraceStore store;
  TraceHeader header;
  header.devices = {TraceDevice{0, "CPU", 0, -1}};
  store.begin(header);
  TraceEvent begin{.kind = TraceEventKind::OpBegin, .rank = 0, .t_ns = 10, .op = 7, .text = "aten::addmm"};
  store.emit(begin);
  TraceEvent end{.kind = TraceEventKind::OpEnd, .rank = 0, .t_ns = 20, .op = 7, .text = ""};
  store.emit(end);
  TraceEvent alloc{.kind = TraceEventKind::Alloc, .rank = 0, .t_ns = 15, .bytes = 64, .allocated_after = 64, .tensor = 3,
                   .text = "forward (linear.py:134)"};
  store.emit(alloc);
  TraceEvent again = alloc;  // a second op of the same name keeps one copy of the text
  again.kind = TraceEventKind::OpBegin;
  again.op = 8;
  again.text = "aten::addmm";
  store.emit(again);
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.op_text(0, 7), "aten::addmm");
    EXPECT_EQ(d.op_text(0, 8), "aten::addmm");
    EXPECT_EQ(d.tensor_text(0, 3), "forward (linear.py:134)");
    EXPECT_EQ(d.op_text(0, 9), "");
    EXPECT_EQ(d.op_text(5, 7), "");
    EXPECT_EQ(d.texts.size(), 2u);
  });
}

}  // namespace
}  // namespace shardscope
