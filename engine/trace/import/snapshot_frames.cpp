// frame_roles and frame_summary (see snapshot_frames.h for the rules and where they come from).
#include "trace/import/snapshot_frames.h"

#include <cctype>
#include <string_view>

namespace shardscope {

namespace {

struct Frame {
  std::string_view name, filename;
  std::int64_t line = 0;
};

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool ends_with(std::string_view s, std::string_view end) { return s.size() >= end.size() && s.substr(s.size() - end.size()) == end; }

template <class Fn>
void for_each_frame(const std::optional<PickleRef>& frames, Fn&& fn) {
  if (!frames || !frames->is(PickleKind::List)) return;
  for (PickleRef f : frames->items()) {
    Frame frame;
    if (auto name = f.get("name")) frame.name = name->as_str().value_or("");
    if (auto file = f.get("filename")) frame.filename = file->as_str().value_or("");
    if (auto line = f.get("line")) frame.line = line->as_int().value_or(0);
    if (!fn(frame)) return;
  }
}

bool is_python(const Frame& f) { return ends_with(f.filename, ".py"); }

// A frame of the user's own code: not PyTorch, not an installed package, not the standard library.
bool is_user(const Frame& f) {
  return is_python(f) && !contains(f.filename, "/torch/") && !contains(f.filename, "site-packages") &&
         !contains(f.filename, "dist-packages") && !contains(f.filename, "/lib/python");
}

std::string base_name(std::string_view path) {
  const auto slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string describe(const Frame& f) { return std::string(f.name) + " (" + base_name(f.filename) + ":" + std::to_string(f.line) + ")"; }

std::string identifier_after(std::string_view name, std::string_view prefix) {
  const auto at = name.find(prefix);
  if (at == std::string_view::npos) return "";
  std::string_view rest = name.substr(at + prefix.size());
  std::size_t n = 0;
  while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
  return std::string(rest.substr(0, n));
}

// The op a C++ frame runs: the autograd node ("torch::autograd::generated::AddmmBackward0::apply" or
// "...::AddmmBackward0_apply_functional" -> "AddmmBackward0 (autograd)"), else the ATen operator
// ("at::_ops::mm::call" -> "aten::mm"); "" for other frames.
std::string cpp_op(std::string_view name) {
  std::string node = identifier_after(name, "torch::autograd::generated::");
  if (!node.empty() && node != "details") {
    constexpr std::string_view suffix = "_apply_functional";
    if (node.size() > suffix.size() && node.compare(node.size() - suffix.size(), suffix.size(), suffix) == 0)
      node.resize(node.size() - suffix.size());
    return node + " (autograd)";
  }
  const std::string op = identifier_after(name, "at::_ops::");
  return op.empty() ? "" : "aten::" + op;
}

}  // namespace

FrameRoles frame_roles(const std::optional<PickleRef>& frames) {
  FrameRoles r;
  for_each_frame(frames, [&](const Frame& f) {
    if (is_python(f)) {
      r.has_python = true;
      if (contains(f.filename, "torch/distributed/")) r.collective = true;
      if (contains(f.filename, "torch/optim/")) r.optimizer = true;
      if (f.name == "backward" && (ends_with(f.filename, "torch/autograd/__init__.py") || ends_with(f.filename, "torch/_tensor.py")))
        r.backward = true;
      if (ends_with(f.filename, "torch/nn/modules/module.py") &&
          (f.name == "_apply" || f.name == "convert" || f.name == "to" || f.name == "cuda" || f.name == "to_empty"))
        r.parameters = true;
      if ((f.name == "__init__" || f.name == "reset_parameters") && contains(f.filename, "torch/nn/")) r.parameters = true;
      if (f.name == "forward" || f.name == "_call_impl") r.forward = true;
    } else {
      if (contains(f.name, "setWorkspaceForHandle") || contains(f.name, "getCUDABlasLtWorkspace")) r.workspace = true;
      if (contains(f.name, "c10d::Reducer")) r.reducer = true;
      else if (contains(f.name, "c10d::")) r.collective = true;
      if (contains(f.name, "torch::autograd::Engine::")) r.backward = true;
    }
    return true;
  });
  return r;
}

std::string frame_summary(const std::optional<PickleRef>& frames) {
  if (frame_roles(frames).workspace) return "cuBLAS workspace";
  std::string innermost, user, node;
  for_each_frame(frames, [&](const Frame& f) {
    if (is_python(f) && innermost.empty()) innermost = describe(f);
    if (is_user(f) && user.empty()) user = describe(f);
    if (!is_python(f)) {
      const std::string op = cpp_op(f.name);  // the innermost ATen op, unless an autograd node follows
      if (!op.empty() && (node.empty() || (op.find("(autograd)") != std::string::npos && node.find("(autograd)") == std::string::npos))) node = op;
    }
    return user.empty();  // the user's frame is the last one wanted
  });
  if (innermost.empty()) return node;
  if (user.empty() || user == innermost) return innermost;
  return innermost + " in " + user;
}

}  // namespace shardscope
