// RankRunner: the host loop of one rank, the work of one op on its stream, and the rank's results.
#include "exec/rank_runner.h"

#include <cmath>
#include <cstring>

#include "exec/data/batch_loading.h"
#include "exec/data/parameter_init.h"
#include "exec/sixteen_bit.h"
#include "plan/cublas_workspace.h"

namespace shardscope::exec {

RankRunner::RankRunner(const RunContext& context, int rank, RankTrace& trace, OpCompletion& completion)
    : context_(context),
      program_(context.plan.programs.at(static_cast<std::size_t>(rank))),
      backend_(context.backend.rank(rank)),
      trace_(trace),
      completion_(completion),
      tensors_(program_),
      launches_(context.scenario, context.optimizer, context.options.seed) {
  result_.rank = rank;
  const auto& training = context.scenario.settings.training;
  if (training.dtype == Dtype::Fp16 && !training.no_grad) scaler_.emplace(context.options.loss_scale);
  // Runs on the host thread inside allocate() / free(), under the allocator's lock: it only emits.
  backend_.allocator().set_listener([this](const AllocationEvent& event) {
    const Op& op = program_.ops.at(static_cast<std::size_t>(current_op_));
    TraceEvent t;
    t.kind = event.kind == AllocationEventKind::Alloc ? TraceEventKind::Alloc : TraceEventKind::Free;
    t.step = op.step;
    t.op = current_op_;
    t.stream = op.stream;
    t.category = event.category;
    t.bytes = event.counted_bytes;
    t.allocated_after = event.live_after;
    t.reserved_after = event.reserved_after;
    t.tensor = op.tensor;
    trace_.emit(t);
  });
}

RankRunner::~RankRunner() {
  for (auto& worker : workers_)
    if (worker) worker->finish();
  backend_.allocator().set_listener({});
}

void RankRunner::report(const std::exception& error) {
  if (dynamic_cast<const RunStopped*>(&error)) return;  // a consequence of another failure
  context_.control.fail(program_.rank, error.what());
}

void RankRunner::run() {
  try {
    for (OpIndex i = 0; i < static_cast<OpIndex>(program_.ops.size()); ++i) {
      if (context_.control.stopped()) break;
      run_op(i);
    }
  } catch (const std::exception& error) {
    report(error);
  }
  for (auto& worker : workers_)
    if (worker) worker->finish();
  if (context_.control.stopped()) return;
  try {
    measure_parameters();
  } catch (const std::exception& error) {
    report(error);
  }
}

void RankRunner::run_op(OpIndex index) {
  const Op& op = program_.ops[static_cast<std::size_t>(index)];
  switch (op.kind) {
    case OpKind::Alloc: run_alloc(index, op); break;
    case OpKind::Free: run_free(index, op); break;
    case OpKind::Phase: record_phase(index, op); break;
    default: {
      // Operands are looked up when the host reaches the op, as a CUDA host thread launches it: that is where an
      // operand that is not alive is a lowering bug, whichever stream the op runs on.
      std::vector<DeviceBuffer> operands = tensors_.resolve(index);
      if (op.stream == Stream::Compute) {
        execute_work(index, op, std::move(operands));
      } else {
        issue_on_stream(index, op, std::move(operands));
      }
      return;
    }
  }
  completion_.mark_done(index);
}

// The values --load-params gave for this piece's parameter, when they cover it; else none (generated ones).
const std::vector<float>* RankRunner::given_values(const ParameterInit& init) const {
  const auto& given = context_.options.initial_parameters;
  if (!given) return nullptr;
  const auto found = given->find(init.name);
  if (found == given->end()) return nullptr;
  if (init.first_element < 0 || init.first_element + init.numel > static_cast<std::int64_t>(found->second.size()))
    throw std::logic_error("the loaded values of " + init.name + " do not cover elements [" +
                           std::to_string(init.first_element) + ", " + std::to_string(init.first_element + init.numel) + ")");
  return &found->second;
}

void RankRunner::run_alloc(OpIndex index, const Op& op) {
  const TensorInfo& info = program_.tensors.at(static_cast<std::size_t>(op.tensor));
  current_op_ = index;
  if (late_frees_.complete_before_allocation()) backend_.allocator().complete_late_frees();
  const Allocation allocation =
      backend_.allocator().allocate(info.bytes, info.category, info.name.str(), info.alloc_stream);
  tensors_.on_alloc(op.tensor, allocation, index);
  const DeviceBuffer buffer = tensors_.buffer(op.tensor);
  if (const auto thread = cublas_workspace_thread(info.name.str())) backend_.use_gemm_workspace(*thread, buffer);
  // A GEMM workspace is scratch that no kernel reads as values, so it is not filled (nor does PyTorch fill it).
  // Filling it cost the CPU backend, where no GEMM uses it, a first touch of 32 MiB of pages at each thread's first
  // GEMM (~30 ms of idle in step 1) and kept them resident.
  if (!is_gemm_workspace(info.name.str())) backend_.fill_zero(buffer);
  if (info.initial_values.empty()) return;
  backend_.copy_from_host(buffer, initial_bytes(info));
}

std::vector<std::byte> RankRunner::initial_bytes(const TensorInfo& info) const {
  if (info.element != ElementType::Fp32 && !is_16_bit(info.element))
    throw std::logic_error("initial values for tensor " + info.name + ", which holds " + element_type_name(info.element));
  const Bytes element = element_bytes(info.element);
  std::vector<float> values(static_cast<std::size_t>(info.bytes / element));
  const std::uint64_t seed = context_.options.distinct_replica_init ? context_.options.seed + static_cast<std::uint64_t>(program_.rank)
                                                                     : context_.options.seed;
  for (const ParameterInit& init : info.initial_values) {
    const auto first = static_cast<std::size_t>(init.offset / element);
    if (init.numel < 0 || first + static_cast<std::size_t>(init.numel) > values.size())
      throw std::logic_error("initial values of " + init.name + " lie outside tensor " + info.name);
    const std::span<float> piece = std::span<float>(values).subspan(first, static_cast<std::size_t>(init.numel));
    if (const auto* given = given_values(init)) std::copy_n(given->begin() + init.first_element, init.numel, piece.begin());
    else if (init.constant) std::fill(piece.begin(), piece.end(), init.value);
    else init_parameter(seed, init.name, init.bound > 0 ? init.bound : fan_in_bound(init.fan_in), init.first_element, piece);
  }
  std::vector<std::byte> bytes(static_cast<std::size_t>(info.bytes));
  // A 16-bit parameter holds the generated fp32 value rounded, as model.half() / .to(torch.bfloat16) leaves it.
  if (is_16_bit(info.element)) narrow(info.element, values, bytes.data());
  else std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void RankRunner::run_free(OpIndex index, const Op& op) {
  // A stream thread may still read the tensor: wait for those ops first (record_stream keeps a CUDA block alive
  // the same way), so the host never frees memory in use.
  if (auto it = in_flight_.find(op.tensor); it != in_flight_.end()) {
    for (OpIndex user : it->second) completion_.wait(user);
    in_flight_.erase(it);
  }
  if (const auto thread = cublas_workspace_thread(program_.tensors.at(static_cast<std::size_t>(op.tensor)).name.str()))
    backend_.use_gemm_workspace(*thread, DeviceBuffer{});
  const Allocation allocation = tensors_.on_free(op.tensor, index);
  current_op_ = index;
  const bool completes_late = program_.tensors.at(static_cast<std::size_t>(op.tensor)).free_completes_late;
  backend_.allocator().free(allocation.data, completes_late);
  if (completes_late) late_frees_.requested();
}

void RankRunner::record_phase(OpIndex index, const Op& op) {
  late_frees_.phase_marker();
  trace_.op_event(TraceEventKind::Phase, index, op);
  PhaseMeasurement phase{op.phase, op.step, index, 0, backend_.allocator().live_bytes()};
  phase.allocated = phase.by_category.total();
  // The device's own count beside the allocator's (CUDA): a DeviceMemory event and a measurement per phase.
  const std::optional<RankBackend::DeviceMemoryUse> device = backend_.device_memory();
  if (device) {
    TraceEvent t;
    t.kind = TraceEventKind::DeviceMemory;
    t.step = op.step;
    t.op = index;
    t.bytes = device->used;
    t.reserved_after = device->total;
    t.allocated_after = device->allocator_reserved;
    t.text = op.phase;
    trace_.emit(t);
  }
  std::lock_guard lock(result_mutex_);
  result_.phases.push_back(std::move(phase));
  if (device)
    result_.device_memory.push_back({op.phase, op.step, device->used, device->total, device->allocator_reserved});
}

void RankRunner::issue_on_stream(OpIndex index, const Op& op, std::vector<DeviceBuffer> operands) {
  for (const TensorSlice& slice : op.args)
    if (slice.present()) in_flight_[slice.tensor].push_back(index);
  auto& worker = workers_[static_cast<std::size_t>(op.stream)];
  if (!worker) worker = std::make_unique<StreamWorker>();
  worker->post([this, index, &op, operands = std::move(operands)]() mutable {
    if (context_.control.stopped()) return;
    try {
      execute_work(index, op, std::move(operands));
    } catch (const std::exception& error) {
      report(error);
    }
  });
}

void RankRunner::execute_work(OpIndex index, const Op& op, std::vector<DeviceBuffer> operands) {
  for (OpIndex dep : op.deps) completion_.wait(dep);
  const TimeNs begin = trace_.op_event(TraceEventKind::OpBegin, index, op);
  std::optional<TimeNs> device_time;
  if (op.kind == OpKind::Compute) {
    device_time = run_compute(index, op, std::move(operands));
  } else {
    device_time = backend_.run_communication_timed(communication_launch(op, std::move(operands)));
  }
  trace_.op_end(index, op, begin, device_time);
  completion_.mark_done(index);
}

std::optional<TimeNs> RankRunner::run_compute(OpIndex index, const Op& op, std::vector<DeviceBuffer> operands) {
  if (op.kernel == Kernel::LoadBatch) {
    load_batch(context_.scenario, context_.options.seed, program_, index, operands, backend_);
    return std::nullopt;
  }
  // A step an overflow cancelled: GradScaler.step() does not call optimizer.step(), so no update and no step count.
  if (op.kernel == Kernel::OptimizerStep && op.step == skipped_step_.load()) return std::nullopt;
  KernelLaunch launch = launches_.build(program_, index, std::move(operands));
  bool found_non_finite = false;
  // scaler.scale(loss).backward(): the loss gradient's ops (a vocabulary-parallel softmax's too: it carries the loss
  // gradient its rows sum to).
  if (scaler_ && (op.kernel == Kernel::MseLossBackward || op.kernel == Kernel::NllLossBackward ||
                  op.kernel == Kernel::VocabParallelNllLossBackward || op.kernel == Kernel::VocabParallelLogSoftmaxBackward))
    launch.scale *= scaler_->scale();
  if (scaler_ && op.kernel == Kernel::UnscaleGradients) {
    launch.scale = 1.0 / scaler_->scale();
    launch.found_non_finite = &found_non_finite;
  }
  const std::optional<TimeNs> device_time = backend_.run_kernel_timed(launch);
  if (scaler_ && op.kernel == Kernel::UnscaleGradients) {
    if (!context_.overflow_vote) throw std::logic_error("fp16 training without an overflow vote");
    const bool overflow = context_.overflow_vote->any_overflow(op.step, found_non_finite);
    scaler_->update(overflow);
    if (overflow) skipped_step_.store(op.step);
    std::lock_guard lock(result_mutex_);
    result_.loss_scale = scaler_->scale();
    result_.skipped_steps = scaler_->skipped_steps();
  }
  const std::size_t loss_operand = op.kernel == Kernel::MseLoss            ? 2
                                   : op.kernel == Kernel::CrossEntropyLoss ? 3
                                   : op.kernel == Kernel::VocabParallelLossFinish ? 4
                                                                                   : 0;
  if (loss_operand == 0) return device_time;
  float loss = 0;
  backend_.copy_to_host(std::as_writable_bytes(std::span<float>(&loss, 1)), launch.operands.at(loss_operand));
  record_loss(op, loss);
  return device_time;
}

void RankRunner::record_loss(const Op& op, float loss) {
  std::lock_guard lock(result_mutex_);
  if (op.micro_batch < 0) {
    result_.loss = loss;
  } else {
    if (op.step != loss_step_) {
      loss_step_ = op.step;
      loss_sum_ = 0;
      loss_count_ = 0;
    }
    loss_sum_ += loss;
    result_.loss = loss_sum_ / ++loss_count_;
  }
  const auto step = static_cast<std::size_t>(std::max(op.step, 1));
  if (result_.step_losses.size() < step) result_.step_losses.resize(step, std::nan(""));
  result_.step_losses[step - 1] = *result_.loss;
}

CommunicationLaunch RankRunner::communication_launch(const Op& op, std::vector<DeviceBuffer> operands) const {
  CommunicationLaunch launch;
  launch.kind = op.kind;
  launch.collective = op.collective_kind;
  if (op.kind == OpKind::Collective) launch.group = context_.plan.groups.at(static_cast<std::size_t>(op.group));
  launch.root = op.root;
  launch.peer = op.peer;
  launch.operands = std::move(operands);
  return launch;
}

// The parameter pieces the rank holds: the ranges its live tensors were initialised with (plan ParameterInit),
// which is where every lowering keeps its parameters (own tensors, flat buffers, shards). Padding is not counted.
void RankRunner::measure_parameters() {
  std::vector<ParameterPiece> pieces;
  for (TensorId t = 0; t < static_cast<TensorId>(program_.tensors.size()); ++t) {
    const TensorInfo& info = program_.tensors[static_cast<std::size_t>(t)];
    if (info.initial_values.empty() || !tensors_.live(t)) continue;
    const DeviceBuffer buffer = tensors_.buffer(t);
    const Bytes element = element_bytes(buffer.element);
    std::vector<float> values(static_cast<std::size_t>(buffer.bytes / element));
    if (is_16_bit(buffer.element)) {
      std::vector<std::byte> bits(static_cast<std::size_t>(buffer.bytes));
      backend_.copy_to_host(bits, buffer);
      widen(buffer.element, bits.data(), values);
    } else {
      backend_.copy_to_host(std::as_writable_bytes(std::span<float>(values)), buffer);
    }
    for (const ParameterInit& init : info.initial_values) {
      // A tied copy is measured as a piece of the parameter it copies (ParameterInit::copy_of), so the joined model
      // counts the parameter once and checks the copy against it as against any replica.
      ParameterPiece piece{init.copy_of.empty() ? init.name : init.copy_of, init.first_element, init.numel,
                           init.parameter_numel, 0, 0, {}};
      const auto first = values.begin() + static_cast<std::ptrdiff_t>(init.offset / element);
      for (auto v = first; v != first + init.numel; ++v) {
        piece.sum += *v;
        piece.sum_of_squares += static_cast<double>(*v) * *v;
      }
      if (context_.options.keep_parameters) piece.values.assign(first, first + init.numel);
      pieces.push_back(std::move(piece));
    }
  }
  std::lock_guard lock(result_mutex_);
  result_.param_checksum = 0;
  result_.param_sum_of_squares = 0;
  for (const ParameterPiece& piece : pieces) {
    result_.param_checksum += piece.sum;
    result_.param_sum_of_squares += piece.sum_of_squares;
  }
  result_.parameters = std::move(pieces);
}

RankExecution RankRunner::result() const {
  std::lock_guard lock(result_mutex_);
  RankExecution result = result_;
  result.measured_peak_bytes = backend_.allocator().peak_total_bytes();
  result.measured_peak_by_category = backend_.allocator().peak_bytes();
  return result;
}

}  // namespace shardscope::exec
