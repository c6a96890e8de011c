// The arithmetic a lesson writes over its runs' figures: numbers, value names ("zero1.peak.rank0"), + − × ÷,
// parentheses, unary minus, min(a, b, ...), max(a, b, ...), abs, ceil, floor; a claim is two such expressions around one comparison
// ("zero1.peak.rank0 < 0.85 * ddp.peak.rank0"). Names are [A-Za-z_][A-Za-z0-9_.]*: scenario ids use no '-'.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::lessons {

class ExpressionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `value_of` gives a name's value, or throws ExpressionError naming what is wrong with it.
using ValueLookup = std::function<double(const std::string& name)>;

// Throws ExpressionError for a syntax error ("at 7: expected ')'"), and whatever value_of throws.
double evaluate_expression(std::string_view text, const ValueLookup& value_of);

// Every name the expression uses, in order of appearance (syntax errors throw as above).
std::vector<std::string> expression_names(std::string_view text);

// "A <op> B" with op one of < <= > >= == !=; exactly one comparison at the top level.
struct Comparison {
  std::string left, op, right;
};
Comparison split_comparison(std::string_view text);

// == and != hold within `relative_tolerance` of the larger magnitude (0: exact, as byte counts are integers).
bool comparison_holds(double left, std::string_view op, double right, double relative_tolerance);

}  // namespace shardscope::lessons
