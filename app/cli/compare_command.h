// `shardscope-cli compare A B`: two runs' memory peaks per rank and category, and their difference. A and B are
// scenario files (lowered and accounted as `memory` does) or runs as the window opens them (trace/import/open_run.h:
// a .sstrace, a recorded run's rank files together, a profiler trace or memory snapshot converted). Each rank's
// figures are its peak allocated and the breakdown by category at that peak (the `peak_by_category` of
// `memory --json`), so a side's categories add up to its peak. Ranks are matched by number;
// a rank one side lacks is reported as missing there, never dropped. A trace cut short (a killed recording) is
// compared up to the cut, and stderr says where it is cut. Then each run's median step (steps 2 and later, batch loading
// apart) by kind of time (GEMM, elementwise, optimizer, exposed communication, idle) and a − b: an executed trace
// beside a simulated one (or the scenario itself) holds the simulation against the execution (issue 40).
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/category.h"
#include "core/units.h"
#include "run/step_timing.h"

namespace shardscope::cli {

struct RankPeak {
  Bytes peak = 0;
  CategoryBytes by_category;
};

struct RunPeaks {
  std::string source;  // the path given
  std::string kind;    // "scenario" or "trace"
  std::string name;    // the scenario's name
  std::vector<RankPeak> ranks;  // ranks[r] is rank r
  // Every training step's time (run/step_timing.h): a trace's from its events (cli/trace_steps.h), a scenario's from
  // its simulation (with its device profile, if it names one). Empty when there are none.
  std::vector<StepTiming> steps;
};

// Throws ScenarioError for a bad scenario file, TraceFileError for a file that is not a readable trace.
RunPeaks load_run_peaks(const std::string& path);

struct Comparison {
  RunPeaks a, b;
};

void print_compare_text(const Comparison& comparison, std::ostream& out);
std::string compare_json(const Comparison& comparison);

}  // namespace shardscope::cli
