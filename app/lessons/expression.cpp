// A recursive-descent reader of lesson arithmetic (expression.h): expr = term {(+|-) term}; term = unary {(*|/)
// unary}; unary = -unary | primary; primary = number | name | name(args) | (expr). Linear in the text's length, and
// its depth is bounded (kMaxDepth nested parentheses, calls or signs), not chosen by the input: a lesson file of 30,000
// '(' is refused with a message, not a crashed stack.
#include "lessons/expression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "core/untrusted_text.h"

namespace shardscope::lessons {

namespace {

constexpr int kMaxDepth = 100;
constexpr std::size_t kMaxExpressionBytes = 64 * 1024;

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

class Reader {
 public:
  Reader(std::string_view text, const ValueLookup* value_of) : text_(text), value_of_(value_of) {}

  double whole() {
    if (text_.size() > kMaxExpressionBytes)
      throw ExpressionError("an expression of " + std::to_string(text_.size()) + " bytes: at most " +
                            std::to_string(kMaxExpressionBytes) + " are read");
    const double value = sum();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + printable(text_.substr(pos_, character_length(text_, pos_))) + "'");
    return value;
  }
  std::vector<std::string> names;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ExpressionError("'" + printable(text_, 120) + "' at " + std::to_string(pos_ + 1) + ": " + what);
  }
  // One level deeper in the grammar (a parenthesis, a call, a sign): refused past kMaxDepth.
  struct Deeper {
    Reader& reader;
    explicit Deeper(Reader& r) : reader(r) {
      if (++reader.depth_ > kMaxDepth) reader.fail("nested more than " + std::to_string(kMaxDepth) + " deep");
    }
    ~Deeper() { --reader.depth_; }
  };
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  double sum() {
    double value = product();
    for (;;) {
      if (take('+')) value += product();
      else if (take('-')) value -= product();
      else return value;
    }
  }
  double product() {
    double value = unary();
    for (;;) {
      if (take('*')) {
        value *= unary();
      } else if (take('/')) {
        const double divisor = unary();
        if (divisor == 0) fail("division by zero");
        value /= divisor;
      } else {
        return value;
      }
    }
  }
  double unary() {
    const Deeper deeper(*this);
    if (take('-')) return -unary();
    return primary();
  }
  double primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("expected a number, a name or '('");
    if (take('(')) {
      const Deeper deeper(*this);
      const double value = sum();
      if (!take(')')) fail("expected ')'");
      return value;
    }
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (!name_start(c)) fail("unexpected '" + printable(text_.substr(pos_, character_length(text_, pos_))) + "'");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && name_char(text_[pos_])) ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    if (take('(')) return call(name);
    names.push_back(name);
    return value_of_ ? (*value_of_)(name) : 1.0;
  }
  // Only the number's own characters are copied (a copy of the rest of the text for each number was quadratic).
  double number() {
    std::size_t end = pos_;
    while (end < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[end])) || text_[end] == '.')) ++end;
    if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
      std::size_t exponent = end + 1;
      if (exponent < text_.size() && (text_[exponent] == '+' || text_[exponent] == '-')) ++exponent;
      if (exponent < text_.size() && std::isdigit(static_cast<unsigned char>(text_[exponent]))) {
        end = exponent;
        while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
      }
    }
    const std::string digits(text_.substr(pos_, end - pos_));
    char* stop = nullptr;
    const double value = std::strtod(digits.c_str(), &stop);
    if (stop != digits.c_str() + digits.size() || digits.empty()) fail("not a number");
    if (!std::isfinite(value)) fail("the number " + digits + " is out of range");
    pos_ = end;
    return value;
  }
  double call(const std::string& function) {
    const Deeper deeper(*this);
    std::vector<double> args{sum()};
    while (take(',')) args.push_back(sum());
    if (!take(')')) fail("expected ')' after the arguments of " + function);
    if (function == "min") return *std::min_element(args.begin(), args.end());
    if (function == "max") return *std::max_element(args.begin(), args.end());
    if (args.size() == 1) {
      if (function == "abs") return std::fabs(args[0]);
      if (function == "ceil") return std::ceil(args[0]);
      if (function == "floor") return std::floor(args[0]);
    }
    fail("unknown function '" + function + "' (min and max of any number of arguments; abs, ceil, floor of one)");
  }

  // The bytes of the UTF-8 character at `at` (1 for a stray byte), so a message never quotes half of one.
  static std::size_t character_length(std::string_view text, std::size_t at) {
    const auto c = static_cast<unsigned char>(text[at]);
    const std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return std::min(n, text.size() - at);
  }

  std::string_view text_;
  const ValueLookup* value_of_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

double evaluate_expression(std::string_view text, const ValueLookup& value_of) {
  Reader reader(text, &value_of);
  return reader.whole();
}

std::vector<std::string> expression_names(std::string_view text) {
  Reader reader(text, nullptr);
  reader.whole();
  return reader.names;
}

Comparison split_comparison(std::string_view text) {
  static constexpr std::string_view kOperators[] = {"<=", ">=", "==", "!=", "<", ">"};
  std::optional<Comparison> found;
  for (std::size_t i = 0; i < text.size(); ++i) {
    for (std::string_view op : kOperators) {
      if (text.substr(i, op.size()) != op) continue;
      if (found) throw ExpressionError("'" + printable(text, 120) + "': more than one comparison");
      found = Comparison{std::string(text.substr(0, i)), std::string(op), std::string(text.substr(i + op.size()))};
      i += op.size() - 1;
      break;
    }
  }
  if (!found) throw ExpressionError("'" + printable(text, 120) + "': no comparison (<, <=, >, >=, ==, !=)");
  return *found;
}

bool comparison_holds(double left, std::string_view op, double right, double relative_tolerance) {
  const double slack = relative_tolerance * std::max(std::fabs(left), std::fabs(right));
  if (op == "<") return left < right;
  if (op == "<=") return left <= right;
  if (op == ">") return left > right;
  if (op == ">=") return left >= right;
  if (op == "==") return std::fabs(left - right) <= slack;
  if (op == "!=") return std::fabs(left - right) > slack;
  throw ExpressionError("unknown comparison '" + std::string(op) + "'");
}

}  // namespace shardscope::lessons
