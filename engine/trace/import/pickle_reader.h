// A safe reader for the plain-data pickles PyTorch's memory snapshots are (torch.cuda.memory._dump_snapshot writes
// pickle.dump of a dict of lists, dicts, strings and numbers). It runs the pickle virtual machine for data opcodes
// only: dict, list, tuple, str, bytes, int (up to 64 bits), float, bool and None, with the memo (PUT / GET /
// MEMOIZE) and the stack opcodes; it never looks up a name, constructs an object or calls anything, so a hostile
// file cannot run code. Every opcode that would (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX,
// EXT1-4, PERSID, BINPERSID, out-of-band buffers) and the text opcodes of protocols 0 and 1 (a snapshot is written
// with protocol 4) are refused with a PickleError naming the opcode and its byte offset.
// Untrusted input: values live in one arena and refer to each other by index, so a memo reference costs one index
// (no copy: no exponential blow-up from GET / DUP), a pickle that puts a list inside itself makes a cycle of
// indices rather than leaked memory, and nodes and edges are bounded by the opcodes executed (at most one node and
// one edge per opcode), i.e. by the file's size. Readers walk values with a depth bound (kMaxPickleDepth).
// Usage:
//   const PickleDocument doc = parse_pickle(bytes, "snapshot.pickle");   // throws PickleError
//   PickleRef root = doc.root();
//   if (auto traces = root.get("device_traces")) for (PickleRef device : traces->items()) ...
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope {

class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How deep a reader follows nested values (a snapshot is about 6 deep: dict / list / dict / list / dict / str).
inline constexpr int kMaxPickleDepth = 64;

enum class PickleKind : std::uint8_t { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict };

std::string_view pickle_kind_name(PickleKind kind);  // "dict", "str", ...

struct PickleNode {
  PickleKind kind = PickleKind::None;
  std::int64_t integer = 0;  // Int, Bool (0 / 1)
  double number = 0;         // Float
  std::string text;          // Str (UTF-8 as the file holds it), Bytes
  std::vector<std::uint32_t> items;  // List, Tuple: elements; Dict: key, value, key, value ...
};

class PickleDocument;

// A value of a document (cheap to copy; valid while the document lives).
class PickleRef {
 public:
  PickleRef(const PickleDocument* doc, std::uint32_t index) : doc_(doc), index_(index) {}
  PickleKind kind() const;
  bool is(PickleKind k) const { return kind() == k; }
  // Typed reads; nullopt when the value is of another kind (Int also reads a Bool, as Python's int does).
  std::optional<std::int64_t> as_int() const;
  std::optional<double> as_number() const;  // Float or Int
  std::optional<std::string_view> as_str() const;
  // List / Tuple elements; empty for other kinds.
  std::vector<PickleRef> items() const;
  std::size_t size() const;  // elements of a List / Tuple, pairs of a Dict
  // Dict lookup by str key (the last of duplicate keys, as Python keeps); nullopt when absent or not a Dict.
  std::optional<PickleRef> get(std::string_view key) const;
  // Dict pairs in file order.
  std::vector<std::pair<PickleRef, PickleRef>> pairs() const;

 private:
  const PickleNode& node() const;
  const PickleDocument* doc_;
  std::uint32_t index_;
};

class PickleDocument {
 public:
  PickleRef root() const { return {this, root_}; }
  std::size_t node_count() const { return nodes_.size(); }
  const PickleNode& node(std::uint32_t index) const { return nodes_[index]; }

 private:
  friend class PickleMachine;
  std::vector<PickleNode> nodes_;
  std::uint32_t root_ = 0;
};

// Runs the pickle in `bytes` (`source` names it in errors: "snapshot.pickle: ..."). Throws PickleError for any
// refused opcode, a truncated or malformed pickle (stack underflow, unknown memo key, a SETITEMS without a dict
// below its mark, odd key / value counts, an unterminated pickle without STOP), an integer wider than 64 bits, and
// bytes after STOP.
PickleDocument parse_pickle(std::string_view bytes, const std::string& source);

}  // namespace shardscope
