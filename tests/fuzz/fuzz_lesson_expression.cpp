// libFuzzer target: a lesson expression or claim ("zero1.peak.rank0 < 0.85 * ddp.peak.rank0") through the parser
// and evaluator (lessons/expression.h), and its value through every narration format (format_value). Syntax errors,
// nesting past 100, text past 64 KiB and values a format cannot show must give ExpressionError; nothing else may
// escape, crash, overflow the stack or trip ASan / UBSan. Seeds: the shipped lessons' claims and placeholders
// (write_lesson_seeds.py).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lessons/expression.h"
#include "lessons/lesson_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope::lessons;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Each name's value from its length, so that inputs reach large, negative and fractional values.
  const auto value_of = [](const std::string& name) {
    if (name.size() % 7 == 6) throw ExpressionError(name + ": no such value");
    return (static_cast<double>(name.size()) - 3.0) * 1e3 + 0.25;
  };
  try {
    (void)expression_names(text);
  } catch (const ExpressionError&) {
  }
  double value = 0;
  try {
    value = evaluate_expression(text, value_of);
  } catch (const ExpressionError&) {
  }
  try {
    const Comparison c = split_comparison(text);
    (void)comparison_holds(evaluate_expression(c.left, value_of), c.op, evaluate_expression(c.right, value_of), 1e-9);
  } catch (const ExpressionError&) {
  }
  for (const char* format : {"bytes", "B", "GB", "ms", "us", "percent", "int", "x", "num", ""}) {
    for (const Unit unit : {Unit::Bytes, Unit::Nanoseconds, Unit::Fraction, Unit::Count, Unit::Number}) {
      try {
        (void)format_value(value, unit, format);
      } catch (const ExpressionError&) {
      }
    }
  }
  return 0;
}
