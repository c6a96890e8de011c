// median_of_passes: walks the first pass's curves and takes, point by point, the median over all passes.
#include "calibration/profile_median.h"

#include <algorithm>
#include <map>
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

template <class Point>
using Curves = std::map<std::string, std::vector<Point>>;  // a profile's curves by name (dtype, kind, op)

// Every curve of `into` (the first pass's) merged with the same-named curve of each pass's map in `maps`; a pass
// that lacks one of the names throws. `name` prefixes the messages ("gemm", "elementwise.relu").
template <class Point, class Same, class Merge>
void merge_curves(Curves<Point>& into, const std::vector<const Curves<Point>*>& maps, const std::string& name, Same same,
                  Merge merge) {
  for (auto& [key, curve] : into) {
    std::vector<const std::vector<Point>*> curves;
    for (const auto* map : maps) {
      const auto it = map->find(key);
      if (it == map->end()) throw std::logic_error("calibration passes differ: one pass has no " + name + "." + key);
      curves.push_back(&it->second);
    }
    merge_curve(curve, curves, name + "." + key, same, merge);
  }
}

// Each pass's map `member` (DeviceProfile::gemm, ::optimizer ...).
template <class Map>
std::vector<const Map*> each_pass(const std::vector<DeviceProfile>& passes, Map DeviceProfile::*member) {
  std::vector<const Map*> maps;
  for (const DeviceProfile& p : passes) maps.push_back(&(p.*member));
  return maps;
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
  merge_curves(out.gemm, each_pass(passes, &DeviceProfile::gemm), "gemm",
               [](const ProfileGemmPoint& a, const ProfileGemmPoint& b) {
                 return a.layout == b.layout && a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch;
               },
               [](ProfileGemmPoint& p, const std::vector<const ProfileGemmPoint*>& all) {
                 p.seconds = median_of(all, &ProfileGemmPoint::seconds);
               });
  merge_curves(out.attention, each_pass(passes, &DeviceProfile::attention), "attention",
               [](const ProfileAttentionPoint& a, const ProfileAttentionPoint& b) {
                 return a.kernel == b.kernel && a.batch_heads == b.batch_heads && a.seq == b.seq && a.head_dim == b.head_dim;
               },
               [](ProfileAttentionPoint& p, const std::vector<const ProfileAttentionPoint*>& all) {
                 p.forward_s = median_of(all, &ProfileAttentionPoint::forward_s);
                 p.backward_s = median_of(all, &ProfileAttentionPoint::backward_s);
               });
  for (auto& [op, by_dtype] : out.elementwise) {  // by op, then by dtype
    std::vector<const Curves<ProfileSizePoint>*> maps;
    for (const DeviceProfile& p : passes) {
      const auto it = p.elementwise.find(op);
      if (it == p.elementwise.end()) throw std::logic_error("calibration passes differ: one pass has no elementwise." + op);
      maps.push_back(&it->second);
    }
    merge_curves(by_dtype, maps, "elementwise." + op, size_same, size_merge);
  }
  merge_curves(out.optimizer, each_pass(passes, &DeviceProfile::optimizer), "optimizer", size_same, size_merge);
  merge_curves(out.copy, each_pass(passes, &DeviceProfile::copy), "copy", size_same, size_merge);
  using Concurrency = DeviceProfile::ConcurrencyPoint;
  merge_curves(out.concurrency, each_pass(passes, &DeviceProfile::concurrency), "concurrency",
               [](const Concurrency& a, const Concurrency& b) { return a.threads == b.threads; },
               [](Concurrency& p, const std::vector<const Concurrency*>& all) { p.slowdown = median_of(all, &Concurrency::slowdown); });
  merge_curves(out.collectives, each_pass(passes, &DeviceProfile::collectives), "collectives",
               [](const ProfileCollectivePoint& a, const ProfileCollectivePoint& b) { return a.ranks == b.ranks && a.bytes == b.bytes; },
               [](ProfileCollectivePoint& p, const std::vector<const ProfileCollectivePoint*>& all) {
                 p.seconds = median_of(all, &ProfileCollectivePoint::seconds);
               });
  return out;
}

}  // namespace shardscope::calibration
