// planless_step_timings (planless_step_timing.h): each span of the trace as a CountedInterval for step_timings.
#include "run/planless_step_timing.h"

#include <algorithm>

namespace shardscope {

std::vector<StepTiming> planless_step_timings(const TraceData& data) {
  std::vector<CountedInterval> counted;
  std::int32_t transfers = 0;
  for (const RankTimeline& rank : data.ranks) {
    TimeNs computed_until = std::numeric_limits<TimeNs>::min();  // compute spans are ordered by begin
    for (int s = 0; s < kStreamCount; ++s) {
      const auto stream = static_cast<Stream>(s);
      for (const TraceSpan& span : rank.stream(stream).spans) {
        if (span.open() || span.step < 1) continue;
        CountedInterval c{{rank.rank, span.op, span.begin_ns, span.end_ns}, span.step};
        const std::optional<SpanKind> kind = data.span_kind(rank.rank, span.op);
        if ((kind && kind->kind != OpKind::Compute) || stream == Stream::Communication) {
          c.counts_as = CountedAs::Communication;
          c.transfer = {2, rank.rank, 0, transfers++};
        } else if (stream == Stream::Compute) {
          // The window keeps the span whole (a member with counts_as Other); its compute time starts where the
          // rank's earlier compute spans end.
          counted.push_back(c);
          c.interval.begin_ns = std::max(span.begin_ns, computed_until);
          if (c.interval.begin_ns >= span.end_ns) continue;
          computed_until = span.end_ns;
          c.counts_as = CountedAs::Compute;
          c.compute_kind = kind && kind->compute == ComputeKind::Optimizer ? TimeKind::Optimizer
                           : span_text_is_matmul(data.op_text(rank.rank, span.op)) ? TimeKind::Gemm
                                                                                     : TimeKind::Elementwise;
        }
        counted.push_back(c);
      }
    }
  }
  return step_timings(data.ranks.size(), counted);
}

}  // namespace shardscope
