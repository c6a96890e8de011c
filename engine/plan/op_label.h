// OpLabel: an op's label or phase name, interned. Every distinct text is stored once for the life of the process and
// an op holds a pointer to it: a 1,024-rank plan repeats each label on every data-parallel replica, and a std::string
// per op (32 B, plus a heap block past 15 characters) was most of an op's size. Reads like a const std::string.
// Thread-safe (the window lowers on a worker thread while the CLI's tests run several lowerings).
#pragma once
#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>

namespace shardscope {

class OpLabel {
 public:
  OpLabel() : text_(&empty_text()) {}
  OpLabel(std::string_view text);  // NOLINT: implicit, so that `op.label = "fc1 forward"` reads as before
  OpLabel(const std::string& text) : OpLabel(std::string_view(text)) {}  // NOLINT
  OpLabel(const char* text) : OpLabel(std::string_view(text)) {}         // NOLINT

  const std::string& str() const { return *text_; }
  operator const std::string&() const { return *text_; }  // NOLINT: wherever a std::string is read
  const char* c_str() const { return text_->c_str(); }
  std::size_t size() const { return text_->size(); }
  bool empty() const { return text_->empty(); }
  std::size_t find(std::string_view part, std::size_t from = 0) const { return text_->find(part, from); }

  // Interned: equal texts share one pointer.
  friend bool operator==(const OpLabel& a, const OpLabel& b) { return a.text_ == b.text_; }
  friend bool operator==(const OpLabel& a, const std::string& b) { return *a.text_ == b; }
  friend bool operator==(const OpLabel& a, const char* b) { return *a.text_ == b; }
  friend std::string operator+(const std::string& a, const OpLabel& b) { return a + *b.text_; }
  friend std::string operator+(std::string&& a, const OpLabel& b) { return std::move(a) + *b.text_; }
  friend std::string operator+(const char* a, const OpLabel& b) { return a + *b.text_; }
  friend std::string operator+(const OpLabel& a, const std::string& b) { return *a.text_ + b; }
  friend std::string operator+(const OpLabel& a, const char* b) { return *a.text_ + b; }
  friend std::ostream& operator<<(std::ostream& out, const OpLabel& label);

 private:
  static const std::string& empty_text();
  const std::string* text_;
};

}  // namespace shardscope
