// The handout page: plain HTML, no script, no external files but the step pictures beside it.
#include "gui/presenter/handout.h"

namespace shardscope::gui {

namespace {

std::string escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string handout_html(const lessons::Lesson& lesson, const std::vector<HandoutStep>& steps) {
  std::string html = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escaped(lesson.title) +
                     "</title>\n<style>body{font-family:sans-serif;max-width:70em;margin:2em auto;line-height:1.5}"
                     "img{width:100%;border:1px solid #999}.q{color:#8c4000}.a{font-weight:bold}</style></head><body>\n";
  html += "<h1>" + escaped(std::to_string(lesson.order) + ". " + lesson.title) + "</h1>\n<p><em>" + escaped(lesson.question) +
          "</em></p>\n";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const HandoutStep& s = steps[i];
    html += "<h2>" + std::to_string(i + 1) + ". " + escaped(s.title) + "</h2>\n<img src=\"" + escaped(s.image) + "\" alt=\"" +
            escaped(s.title) + "\">\n<p>" + escaped(s.narration) + "</p>\n";
    if (!s.question.empty())
      html += "<p class=\"q\">Predict: " + escaped(s.question) + "</p>\n<p class=\"a\">Answer: " + escaped(s.answer) + "</p>\n";
  }
  html += "<p><small>Made by ShardScope (shardscope --lesson " + escaped(lesson.id) + " --export DIR).</small></p>\n</body></html>\n";
  return html;
}

}  // namespace shardscope::gui
