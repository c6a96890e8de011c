// assemble_model_parameters: pieces grouped by parameter and range; each distinct range counted once, replicas
// compared, then the ranges of each parameter checked to tile it without overlap or hole.
#include "exec/data/model_parameters.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace shardscope::exec {

namespace {

std::string range_text(const std::string& name, std::int64_t first, std::int64_t numel) {
  return name + " [" + std::to_string(first) + ", " + std::to_string(first + numel) + ")";
}

bool same_values(const ParameterPiece& a, const ParameterPiece& b) {
  if (!a.values.empty() && !b.values.empty())
    return std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0;
  return a.sum == b.sum && a.sum_of_squares == b.sum_of_squares;
}

}  // namespace

ModelParameters assemble_model_parameters(const std::vector<RankExecution>& ranks) {
  ModelParameters model;
  // (name) -> (first_element, numel) -> the first rank's piece
  std::map<std::string, std::map<std::pair<std::int64_t, std::int64_t>, std::pair<int, const ParameterPiece*>>> ranges;
  for (const RankExecution& rank : ranks)
    for (const ParameterPiece& piece : rank.parameters) {
      auto [it, inserted] = ranges[piece.name].try_emplace({piece.first_element, piece.numel}, rank.rank, &piece);
      if (!inserted && model.disagreement.empty() && !same_values(*it->second.second, piece))
        model.disagreement = range_text(piece.name, piece.first_element, piece.numel) + " differs between rank " +
                             std::to_string(it->second.first) + " and rank " + std::to_string(rank.rank);
    }
  for (const auto& [name, pieces] : ranges) {
    std::int64_t covered = 0;
    bool whole = true;
    for (const auto& [range, held] : pieces) {
      const auto [first, numel] = range;
      if (first != covered && model.gap.empty())
        model.gap = first > covered ? range_text(name, covered, first - covered) + " is held by no rank"
                                    : range_text(name, first, numel) + " overlaps another piece";
      covered = std::max(covered, first + numel);
      model.checksum += held.second->sum;
      model.sum_of_squares += held.second->sum_of_squares;
      model.elements += numel;
      whole = whole && static_cast<std::int64_t>(held.second->values.size()) == numel;
    }
    const std::int64_t parameter_numel = pieces.begin()->second.second->parameter_numel;
    if (covered < parameter_numel && model.gap.empty())
      model.gap = range_text(name, covered, parameter_numel - covered) + " is held by no rank";
    if (!whole) continue;
    auto& values = model.values[name];
    values.resize(static_cast<std::size_t>(covered));
    for (const auto& [range, held] : pieces)
      std::copy(held.second->values.begin(), held.second->values.end(), values.begin() + range.first);
  }
  return model;
}

std::map<std::string, std::vector<float>> whole_parameters(const RankExecution& rank) {
  std::map<std::string, std::vector<float>> whole;
  for (const ParameterPiece& piece : rank.parameters)
    if (piece.first_element == 0 && piece.numel == piece.parameter_numel && !piece.values.empty())
      whole[piece.name] = piece.values;
  return whole;
}

}  // namespace shardscope::exec
