// OpLabel's intern pool: one set of strings for the process, never shrunk (labels come from a bounded vocabulary:
// layer, tensor and collective names).
#include "plan/op_label.h"

#include <functional>
#include <mutex>
#include <ostream>
#include <unordered_set>

namespace shardscope {

namespace {

struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

struct TextEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

const std::string* intern(std::string_view text) {
  static std::mutex mutex;
  static std::unordered_set<std::string, TextHash, TextEqual> pool;  // node-based: the strings never move
  const std::lock_guard lock(mutex);
  auto it = pool.find(text);
  if (it == pool.end()) it = pool.emplace(text).first;
  return &*it;
}

}  // namespace

const std::string& OpLabel::empty_text() {
  static const std::string empty;
  return empty;
}

OpLabel::OpLabel(std::string_view text) : text_(text.empty() ? &empty_text() : intern(text)) {}

std::ostream& operator<<(std::ostream& out, const OpLabel& label) { return out << *label.text_; }

}  // namespace shardscope
