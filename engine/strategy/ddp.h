// DistributedDataParallel on one rank: construction-time broadcast, Reducer buckets, bucket all-reduces
// launched in order as their gradients become ready during backward, bucket rebuild at the second forward.
#pragma once
#include <vector>

#include "strategy/local_training.h"

namespace shardscope {

class DdpTraining : public LocalTraining {
 public:
  DdpTraining(const LoweringContext& context, ProgramBuilder& builder);

 protected:
  void wrap() override;
  void before_forward() override;
  void after_accumulate(ParamSlot& slot) override;
  void after_backward() override;

 private:
  struct Bucket {
    TensorId tensor = -1;
    std::vector<int> params;  // slot indices
    int ready = 0;
  };
  Bytes bucket_cap_bytes() const;  // bucket_cap_mb in bytes, as PyTorch: bucket_cap_mb * 1024 * 1024
  Bytes first_rebuilt_bucket_bytes() const;  // the Reducer's first_bucket_bytes_cap
  bool flat_free_completes_late(Bytes flat_bytes) const;  // gloo's record_stream on a broadcast flat
  void broadcast_module_states();
  void initialize_buckets(const std::vector<std::vector<int>>& assignment);
  void launch_ready_buckets();

  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;       // slot -> bucket
  std::vector<Bytes> offset_in_bucket_;  // slot -> where its gradient sits in its bucket
  std::vector<int> ready_order_;     // slots in gradient-ready order during the first backward
  std::vector<OpIndex> all_reduces_; // this step's
  std::size_t next_bucket_ = 0;
  bool rebuilt_ = false;
};

}  // namespace shardscope
