// median_of_passes: walks the first pass's curves and takes, point by point, the median over all passes.
#include "calibration/profile_median.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardscope::calibration {

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[(values.size() - 1) / 2];
}

// The same curve of every pass, checked to be the same grid (size and coordinates), merged point by point:
// `same` compares a point's coordinates, `merge` sets a point's times from all passes' points.
template <class Point, class Same, class Merge>
void merge_curve(std::vector<Point>& into, const std::vector<const std::vector<Point>*>& curves, const std::string& name,
                 Same same, Merge merge) {
  for (const auto* curve : curves)
    if (curve->size() != into.size())
      throw std::logic_error("calibration passes differ: " + name + " has " + std::to_string(curve->size()) + " points in one pass and " +
                             std::to_string(into.size()) + " in the first");
  for (std::size_t i = 0; i < into.size(); ++i) {
    std::vector<const Point*> points;
    for (const auto* curve : curves) {
      if (!same((*curve)[i], into[i])) throw std::logic_error("calibration passes differ: " + name + "[" + std::to_string(i) + "]");
      points.push_back(&(*curve)[i]);
    }
    merge(into[i], points);
  }
}

template <class Point, class Field>
double median_of(const std::vector<const Point*>& points, Field field) {
  std::vector<double> values;
  for (const Point* p : points) values.push_back(p->*field);
  return median(values);
}

// Every pass's value of `map[key]`, throwing if a pass lacks the key.
template <class Map, class Pick>
auto each_pass(const std::vector<DeviceProfile>& passes, Pick pick, const typename Map::key_type& key, const std::string& name) {
  std::vector<const typename Map::mapped_type*> found;
  for (const DeviceProfile& p : passes) {
    const Map& map = pick(p);
    const auto it = map.find(key);
    if (it == map.end()) throw std::logic_error("calibration passes differ: one pass has no " + name);
    found.push_back(&it->second);
  }
  return found;
}

}  // namespace

DeviceProfile median_of_passes(const std::vector<DeviceProfile>& passes) {
  if (passes.empty()) throw std::logic_error("median_of_passes: no passes");
  DeviceProfile out = passes.front();
  out.seconds_taken = 0;
  for (const DeviceProfile& p : passes) out.seconds_taken += p.seconds_taken;
  const auto scalar = [&](double DeviceProfile::*field) {
    std::vector<double> values;
    for (const DeviceProfile& p : passes) values.push_back(p.*field);
    return median(values);
  };
  out.launch_s = scalar(&DeviceProfile::launch_s);
  out.synchronize_s = scalar(&DeviceProfile::synchronize_s);
  out.executor_op_s = scalar(&DeviceProfile::executor_op_s);

  const auto size_same = [](const ProfileSizePoint& a, const ProfileSizePoint& b) {
    return a.size == b.size && a.elements == b.elements && a.tensors == b.tensors;
  };
  const auto size_merge = [](ProfileSizePoint& p, const std::vector<const ProfileSizePoint*>& all) {
    p.seconds = median_of(all, &ProfileSizePoint::seconds);
  };
  for (auto& [dtype, curve] : out.gemm)
    merge_curve(curve, each_pass<decltype(out.gemm)>(passes, [](const DeviceProfile& p) -> auto& { return p.gemm; }, dtype, "gemm." + dtype),
                "gemm." + dtype,
                [](const ProfileGemmPoint& a, const ProfileGemmPoint& b) {
                  return a.layout == b.layout && a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch;
                },
                [](ProfileGemmPoint& p, const std::vector<const ProfileGemmPoint*>& all) {
                  p.seconds = median_of(all, &ProfileGemmPoint::seconds);
                });
  for (auto& [dtype, curve] : out.attention)
    merge_curve(curve, each_pass<decltype(out.attention)>(passes, [](const DeviceProfile& p) -> auto& { return p.attention; }, dtype, "attention." + dtype),
                "attention." + dtype,
                [](const ProfileAttentionPoint& a, const ProfileAttentionPoint& b) {
                  return a.kernel == b.kernel && a.batch_heads == b.batch_heads && a.seq == b.seq && a.head_dim == b.head_dim;
                },
                [](ProfileAttentionPoint& p, const std::vector<const ProfileAttentionPoint*>& all) {
                  p.forward_s = median_of(all, &ProfileAttentionPoint::forward_s);
                  p.backward_s = median_of(all, &ProfileAttentionPoint::backward_s);
                });
  for (auto& [op, by_dtype] : out.elementwise) {
    const auto ops = each_pass<decltype(out.elementwise)>(passes, [](const DeviceProfile& p) -> auto& { return p.elementwise; }, op, "elementwise." + op);
    for (auto& [dtype, curve] : by_dtype) {
      std::vector<const std::vector<ProfileSizePoint>*> curves;
      for (const auto* pass_op : ops) {
        const auto it = pass_op->find(dtype);
        if (it == pass_op->end()) throw std::logic_error("calibration passes differ: one pass has no elementwise." + op + "." + dtype);
        curves.push_back(&it->second);
      }
      merge_curve(curve, curves, "elementwise." + op + "." + dtype, size_same, size_merge);
    }
  }
  for (auto& [kind, curve] : out.optimizer)
    merge_curve(curve, each_pass<decltype(out.optimizer)>(passes, [](const DeviceProfile& p) -> auto& { return p.optimizer; }, kind, "optimizer." + kind),
                "optimizer." + kind, size_same, size_merge);
  for (auto& [kind, curve] : out.copy)
    merge_curve(curve, each_pass<decltype(out.copy)>(passes, [](const DeviceProfile& p) -> auto& { return p.copy; }, kind, "copy." + kind),
                "copy." + kind, size_same, size_merge);
  using Concurrency = DeviceProfile::ConcurrencyPoint;
  for (auto& [kind, curve] : out.concurrency)
    merge_curve(curve, each_pass<decltype(out.concurrency)>(passes, [](const DeviceProfile& p) -> auto& { return p.concurrency; }, kind, "concurrency." + kind),
                "concurrency." + kind, [](const Concurrency& a, const Concurrency& b) { return a.threads == b.threads; },
                [](Concurrency& p, const std::vector<const Concurrency*>& all) { p.slowdown = median_of(all, &Concurrency::slowdown); });
  for (auto& [kind, curve] : out.collectives)
    merge_curve(curve, each_pass<decltype(out.collectives)>(passes, [](const DeviceProfile& p) -> auto& { return p.collectives; }, kind, "collectives." + kind),
                "collectives." + kind,
                [](const ProfileCollectivePoint& a, const ProfileCollectivePoint& b) { return a.ranks == b.ranks && a.bytes == b.bytes; },
                [](ProfileCollectivePoint& p, const std::vector<const ProfileCollectivePoint*>& all) {
                  p.seconds = median_of(all, &ProfileCollectivePoint::seconds);
                });
  return out;
}

}  // namespace shardscope::calibration
