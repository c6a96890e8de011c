// The data-only pickle machine (see pickle_reader.h). Opcodes and their encodings follow CPython's
// Lib/pickletools.py (protocols 2 to 5) and Modules/_pickle.c's load_* functions.
#include "trace/import/pickle_reader.h"

#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace shardscope {

std::string_view pickle_kind_name(PickleKind kind) {
  switch (kind) {
    case PickleKind::None: return "None";
    case PickleKind::Bool: return "bool";
    case PickleKind::Int: return "int";
    case PickleKind::Float: return "float";
    case PickleKind::Str: return "str";
    case PickleKind::Bytes: return "bytes";
    case PickleKind::List: return "list";
    case PickleKind::Tuple: return "tuple";
    case PickleKind::Dict: return "dict";
  }
  return "?";
}

const PickleNode& PickleRef::node() const { return doc_->node(index_); }
PickleKind PickleRef::kind() const { return node().kind; }

std::optional<std::int64_t> PickleRef::as_int() const {
  const PickleNode& n = node();
  if (n.kind == PickleKind::Int || n.kind == PickleKind::Bool) return n.integer;
  return std::nullopt;
}

std::optional<double> PickleRef::as_number() const {
  const PickleNode& n = node();
  if (n.kind == PickleKind::Float) return n.number;
  if (n.kind == PickleKind::Int || n.kind == PickleKind::Bool) return static_cast<double>(n.integer);
  return std::nullopt;
}

std::optional<std::string_view> PickleRef::as_str() const {
  const PickleNode& n = node();
  if (n.kind == PickleKind::Str) return std::string_view(n.text);
  return std::nullopt;
}

std::vector<PickleRef> PickleRef::items() const {
  std::vector<PickleRef> out;
  const PickleNode& n = node();
  if (n.kind != PickleKind::List && n.kind != PickleKind::Tuple) return out;
  out.reserve(n.items.size());
  for (std::uint32_t i : n.items) out.emplace_back(doc_, i);
  return out;
}

std::size_t PickleRef::size() const {
  const PickleNode& n = node();
  if (n.kind == PickleKind::Dict) return n.items.size() / 2;
  if (n.kind == PickleKind::List || n.kind == PickleKind::Tuple) return n.items.size();
  return 0;
}

std::optional<PickleRef> PickleRef::get(std::string_view key) const {
  const PickleNode& n = node();
  if (n.kind != PickleKind::Dict) return std::nullopt;
  for (std::size_t i = n.items.size(); i >= 2; i -= 2) {  // from the end: the last of duplicate keys wins
    const PickleNode& k = doc_->node(n.items[i - 2]);
    if (k.kind == PickleKind::Str && k.text == key) return PickleRef(doc_, n.items[i - 1]);
  }
  return std::nullopt;
}

std::vector<std::pair<PickleRef, PickleRef>> PickleRef::pairs() const {
  std::vector<std::pair<PickleRef, PickleRef>> out;
  const PickleNode& n = node();
  if (n.kind != PickleKind::Dict) return out;
  for (std::size_t i = 0; i + 1 < n.items.size(); i += 2) out.emplace_back(PickleRef(doc_, n.items[i]), PickleRef(doc_, n.items[i + 1]));
  return out;
}

// The machine: a stack of node indices, a stack of marks and the memo, as Modules/_pickle.c's Unpickler keeps them.
class PickleMachine {
 public:
  PickleMachine(std::string_view bytes, const std::string& source) : in_(bytes), source_(source) {}

  PickleDocument run() {
    while (true) {
      if (pos_ >= in_.size()) fail(pos_, "ends without a STOP opcode (the file is cut short)");
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(in_[pos_++]);
      if (op == '.') break;  // STOP
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty()) fail(op_at_, "STOP leaves " + std::to_string(stack_.size()) + " values on the stack (a valid pickle leaves one)");
    if (pos_ != in_.size()) fail(pos_, std::to_string(in_.size() - pos_) + " bytes follow the pickle's STOP opcode");
    doc_.root_ = stack_.back();
    return std::move(doc_);
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw PickleError(source_ + ": pickle byte " + std::to_string(at) + ": " + what);
  }

  [[noreturn]] void refuse(const char* name, const char* why) const {
    fail(op_at_, std::string("refused opcode ") + name + " (" + why + "); a memory snapshot holds only dicts, lists, "
                 "tuples, strings, bytes, numbers, booleans and None");
  }

  std::string_view take(std::uint64_t n) {
    if (n > in_.size() - pos_) fail(op_at_, "an argument runs past the end of the file (cut short)");
    const std::string_view s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::uint64_t unsigned_le(int bytes) {
    const std::string_view s = take(static_cast<std::uint64_t>(bytes));
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[static_cast<std::size_t>(i)]);
    return v;
  }

  std::uint32_t add(PickleNode node) {
    if (doc_.nodes_.size() >= std::numeric_limits<std::uint32_t>::max()) fail(op_at_, "too many values");
    doc_.nodes_.push_back(std::move(node));
    return static_cast<std::uint32_t>(doc_.nodes_.size() - 1);
  }
  void push(PickleNode node) { stack_.push_back(add(std::move(node))); }
  void push_int(std::int64_t v) {
    PickleNode n;
    n.kind = PickleKind::Int;
    n.integer = v;
    push(std::move(n));
  }
  void push_text(PickleKind kind, std::string_view s) {
    PickleNode n;
    n.kind = kind;
    n.text.assign(s);
    push(std::move(n));
  }
  std::uint32_t pop() {
    if (stack_.size() <= stack_floor()) fail(op_at_, "pops an empty stack (or below a MARK)");
    const std::uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::uint32_t top() {
    if (stack_.size() <= stack_floor()) fail(op_at_, "reads an empty stack (or below a MARK)");
    return stack_.back();
  }
  std::size_t stack_floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values pushed since the last MARK, which is removed.
  std::vector<std::uint32_t> pop_mark() {
    if (marks_.empty()) fail(op_at_, "needs a MARK and there is none");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<std::uint32_t> values(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return values;
  }
  PickleNode& container(std::uint32_t index, PickleKind want, const char* opcode) {
    PickleNode& n = doc_.nodes_[index];
    if (n.kind != want)
      fail(op_at_, std::string(opcode) + " needs a " + std::string(pickle_kind_name(want)) + " below its items, not a " +
                       std::string(pickle_kind_name(n.kind)));
    return n;
  }
  void make_sequence(PickleKind kind, std::vector<std::uint32_t> items) {
    PickleNode n;
    n.kind = kind;
    n.items = std::move(items);
    push(std::move(n));
  }
  void set_items(std::vector<std::uint32_t> kv, const char* opcode) {
    if (kv.size() % 2 != 0) fail(op_at_, std::string(opcode) + " has a key without a value");
    PickleNode& dict = container(top(), PickleKind::Dict, opcode);
    dict.items.insert(dict.items.end(), kv.begin(), kv.end());
  }
  void memo_put(std::uint64_t key) { memo_[key] = top(); }
  void memo_get(std::uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail(op_at_, "reads memo entry " + std::to_string(key) + ", which was never stored");
    stack_.push_back(it->second);
  }
  void push_long(std::string_view le) {
    if (le.size() > 8) fail(op_at_, "an integer wider than 64 bits");
    std::uint64_t v = 0;
    for (std::size_t i = le.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(le[i]);
    if (!le.empty() && le.size() < 8 && (static_cast<unsigned char>(le.back()) & 0x80))  // sign-extend
      v |= ~std::uint64_t{0} << (8 * le.size());
    push_int(static_cast<std::int64_t>(v));
  }

  void step(unsigned char op) {
    switch (op) {
      case 0x80: {  // PROTO
        const auto version = unsigned_le(1);
        if (version > 5) fail(op_at_, "pickle protocol " + std::to_string(version) + " is newer than this reader (5)");
        return;
      }
      case 0x95: unsigned_le(8); return;  // FRAME: a length hint only
      case '(': marks_.push_back(stack_.size()); return;
      case '0': pop(); return;
      case '1': pop_mark(); return;
      case '2': stack_.push_back(top()); return;
      case 'N': push(PickleNode{}); return;
      case 0x88:
      case 0x89: {
        PickleNode n;
        n.kind = PickleKind::Bool;
        n.integer = op == 0x88 ? 1 : 0;
        push(std::move(n));
        return;
      }
      case 'J': push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_le(4)))); return;
      case 'K': push_int(static_cast<std::int64_t>(unsigned_le(1))); return;
      case 'M': push_int(static_cast<std::int64_t>(unsigned_le(2))); return;
      case 0x8a: push_long(take(unsigned_le(1))); return;  // LONG1
      case 0x8b: {                                         // LONG4
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_le(4)));
        if (n < 0) fail(op_at_, "LONG4 with a negative length");
        push_long(take(static_cast<std::uint64_t>(n)));
        return;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE 754 double
        const std::string_view s = take(8);
        std::uint64_t bits = 0;
        for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
        PickleNode n;
        n.kind = PickleKind::Float;
        n.number = std::bit_cast<double>(bits);
        push(std::move(n));
        return;
      }
      case 'X': push_text(PickleKind::Str, take(unsigned_le(4))); return;     // BINUNICODE
      case 0x8c: push_text(PickleKind::Str, take(unsigned_le(1))); return;    // SHORT_BINUNICODE
      case 0x8d: push_text(PickleKind::Str, take(unsigned_le(8))); return;    // BINUNICODE8
      case 'T': {                                                            // BINSTRING (Python 2 str, read as str)
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_le(4)));
        if (n < 0) fail(op_at_, "BINSTRING with a negative length");
        push_text(PickleKind::Str, take(static_cast<std::uint64_t>(n)));
        return;
      }
      case 'U': push_text(PickleKind::Str, take(unsigned_le(1))); return;     // SHORT_BINSTRING
      case 'B': push_text(PickleKind::Bytes, take(unsigned_le(4))); return;   // BINBYTES
      case 'C': push_text(PickleKind::Bytes, take(unsigned_le(1))); return;   // SHORT_BINBYTES
      case 0x8e: push_text(PickleKind::Bytes, take(unsigned_le(8))); return;  // BINBYTES8
      case 0x96: push_text(PickleKind::Bytes, take(unsigned_le(8))); return;  // BYTEARRAY8, read as bytes
      case ']': make_sequence(PickleKind::List, {}); return;
      case ')': make_sequence(PickleKind::Tuple, {}); return;
      case '}': {
        PickleNode n;
        n.kind = PickleKind::Dict;
        push(std::move(n));
        return;
      }
      case 'l': make_sequence(PickleKind::List, pop_mark()); return;
      case 't': make_sequence(PickleKind::Tuple, pop_mark()); return;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const std::size_t n = static_cast<std::size_t>(op - 0x84);
        if (stack_.size() < stack_floor() + n) fail(op_at_, "TUPLE" + std::to_string(n) + " needs " + std::to_string(n) + " values on the stack");
        std::vector<std::uint32_t> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        make_sequence(PickleKind::Tuple, std::move(items));
        return;
      }
      case 'd': {  // DICT from the values since the mark
        std::vector<std::uint32_t> kv = pop_mark();
        if (kv.size() % 2 != 0) fail(op_at_, "DICT has a key without a value");
        PickleNode n;
        n.kind = PickleKind::Dict;
        n.items = std::move(kv);
        push(std::move(n));
        return;
      }
      case 'a': {  // APPEND
        const std::uint32_t v = pop();
        container(top(), PickleKind::List, "APPEND").items.push_back(v);
        return;
      }
      case 'e': {  // APPENDS
        std::vector<std::uint32_t> values = pop_mark();
        PickleNode& list = container(top(), PickleKind::List, "APPENDS");
        list.items.insert(list.items.end(), values.begin(), values.end());
        return;
      }
      case 's': {  // SETITEM
        const std::uint32_t value = pop();
        const std::uint32_t key = pop();
        set_items({key, value}, "SETITEM");
        return;
      }
      case 'u': set_items(pop_mark(), "SETITEMS"); return;
      case 'q': memo_put(unsigned_le(1)); return;  // BINPUT
      case 'r': memo_put(unsigned_le(4)); return;  // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); return;   // MEMOIZE: the next memo index
      case 'h': memo_get(unsigned_le(1)); return;  // BINGET
      case 'j': memo_get(unsigned_le(4)); return;  // LONG_BINGET
      // Everything that looks up a name, builds an object or calls code.
      case 'c': refuse("GLOBAL", "looks up a Python name");
      case 0x93: refuse("STACK_GLOBAL", "looks up a Python name");
      case 'R': refuse("REDUCE", "calls a Python callable");
      case 'b': refuse("BUILD", "sets an object's state");
      case 'i': refuse("INST", "builds an object");
      case 'o': refuse("OBJ", "builds an object");
      case 0x81: refuse("NEWOBJ", "builds an object");
      case 0x92: refuse("NEWOBJ_EX", "builds an object");
      case 0x82:
      case 0x83:
      case 0x84: refuse("EXT", "looks up a registered extension");
      case 'P': refuse("PERSID", "asks for a persistent object");
      case 'Q': refuse("BINPERSID", "asks for a persistent object");
      case 0x97: refuse("NEXT_BUFFER", "reads an out-of-band buffer");
      case 0x98: refuse("READONLY_BUFFER", "reads an out-of-band buffer");
      case 0x8f: refuse("EMPTY_SET", "a set");
      case 0x90: refuse("ADDITEMS", "a set");
      case 0x91: refuse("FROZENSET", "a frozenset");
      case 'I': case 'L': case 'F': case 'S': case 'V': case 'p': case 'g':
        refuse("of protocol 0", "a text-protocol pickle; _dump_snapshot writes protocol 4");
      default: break;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    fail(op_at_, std::string("unknown opcode ") + hex + " (not a pickle, or damaged)");
  }

  std::string_view in_;
  const std::string& source_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, std::uint32_t> memo_;
  PickleDocument doc_;
};

PickleDocument parse_pickle(std::string_view bytes, const std::string& source) {
  if (bytes.empty()) throw PickleError(source + ": the file is empty (not a pickle)");
  if (static_cast<unsigned char>(bytes[0]) != 0x80)
    throw PickleError(source + ": not a pickle of protocol 2 or later (it does not start with the PROTO opcode 0x80)");
  return PickleMachine(bytes, source).run();
}

}  // namespace shardscope
