// Plan validation: tensors allocated once and freed at most once (live at the end only if persistent), every
// operand of an op (plan/kernel.h) alive and in bounds when the op runs,
// every collective matched across its group in the same order, every send matched by its peer's receive, deps in range and the whole plan — streams,
// deps and collectives across ranks — free of cycles (so no execution can deadlock).
#pragma once
#include <string>
#include <vector>

#include "plan/plan.h"

namespace shardscope {

struct ValidationReport {
  std::vector<std::string> errors;  // empty: valid
  bool ok() const { return errors.empty(); }
};

ValidationReport validate_plan(const Plan& plan);

}  // namespace shardscope
