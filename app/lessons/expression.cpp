// A recursive-descent reader of lesson arithmetic (expression.h): expr = term {(+|-) term}; term = unary {(*|/)
// unary}; unary = -unary | primary; primary = number | name | name(args) | (expr).
#include "lessons/expression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace shardscope::lessons {

namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

class Reader {
 public:
  Reader(std::string_view text, const ValueLookup* value_of) : text_(text), value_of_(value_of) {}

  double whole() {
    const double value = sum();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return value;
  }
  std::vector<std::string> names;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ExpressionError("'" + std::string(text_) + "' at " + std::to_string(pos_ + 1) + ": " + what);
  }
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
    if (take('-')) return -unary();
    return primary();
  }
  double primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("expected a number, a name or '('");
    if (take('(')) {
      const double value = sum();
      if (!take(')')) fail("expected ')'");
      return value;
    }
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (!name_start(c)) fail("expected a number, a name or '('");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && name_char(text_[pos_])) ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    if (take('(')) return call(name);
    names.push_back(name);
    return value_of_ ? (*value_of_)(name) : 1.0;
  }
  double number() {
    const std::string rest(text_.substr(pos_));
    char* end = nullptr;
    const double value = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) fail("not a number");
    pos_ += static_cast<std::size_t>(end - rest.c_str());
    return value;
  }
  double call(const std::string& function) {
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

  std::string_view text_;
  const ValueLookup* value_of_;
  std::size_t pos_ = 0;
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
      if (found) throw ExpressionError("'" + std::string(text) + "': more than one comparison");
      found = Comparison{std::string(text.substr(0, i)), std::string(op), std::string(text.substr(i + op.size()))};
      i += op.size() - 1;
      break;
    }
  }
  if (!found) throw ExpressionError("'" + std::string(text) + "': no comparison (<, <=, >, >=, ==, !=)");
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
