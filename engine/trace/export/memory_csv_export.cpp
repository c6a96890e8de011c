// Memory series as CSV (see memory_csv_export.h).
#include "trace/export/memory_csv_export.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace shardscope {

void write_memory_csv(const TraceStore& store, std::ostream& out) {
  store.read([&](const TraceData& d) {
    std::string buffer = "t_ns,rank,allocated_bytes,reserved_bytes";
    for (auto c : kAllCategories) (buffer += ',') += category_key(c);
    buffer += '\n';

    struct Row {
      TimeNs t_ns;
      int rank;
      std::size_t index;
    };
    std::vector<Row> rows;
    for (const auto& r : d.ranks)
      for (std::size_t i = 0; i < r.memory.size(); ++i) rows.push_back({r.memory[i].t_ns, r.rank, i});
    std::sort(rows.begin(), rows.end(),
              [](const Row& a, const Row& b) { return std::tie(a.t_ns, a.rank, a.index) < std::tie(b.t_ns, b.rank, b.index); });

    for (const auto& row : rows) {
      const auto& s = d.ranks[static_cast<std::size_t>(row.rank)].memory[row.index];
      buffer += std::to_string(s.t_ns);
      (buffer += ',') += std::to_string(row.rank);
      (buffer += ',') += std::to_string(s.allocated);
      (buffer += ',') += std::to_string(s.reserved);
      for (auto c : kAllCategories) (buffer += ',') += std::to_string(s.by_category[c]);
      buffer += '\n';
      if (buffer.size() > (1 << 20)) {
        out << buffer;
        buffer.clear();
      }
    }
    out << buffer;
  });
}

}  // namespace shardscope
