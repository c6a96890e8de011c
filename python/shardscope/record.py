"""Records a PyTorch training run as a ShardScope trace (.sstrace): every allocation and free on the run's device with
its bytes and memory category, ShardScope's phase markers, and a timeline of leaf modules' forward / backward spans
(each named with its module's class: "forward fc1 (Linear)"), the optimizer step and collectives. Runs inside the user's process; standard library and torch only (PyTorch 1.13 to 2.x).

    PYTHONPATH=python python3 -m shardscope.record --out run.sstrace -- train.py ARGS
    PYTHONPATH=python python3 -m shardscope.record --out run.sstrace -- -m package.module ARGS
    torchrun --nproc-per-node 2 -m shardscope.record --out run.sstrace -- train.py     # run.rank0.sstrace, ...

    import shardscope
    with shardscope.record("run.sstrace"):          # a notebook: record what the block runs
        train()

Ranks. Under torchrun (RANK / WORLD_SIZE in the environment) each process writes OUT with ".rankR" before its
extension (run.rank3.sstrace; OUT an existing directory: DIR/rank3.sstrace). A script that starts its ranks with
torch.multiprocessing.spawn / start_processes records each spawned process i as rank i of nprocs (on CUDA GPU i, or
i mod the GPU count where ranks share GPUs: gpu_of); the launching process itself records nothing (its file is
removed when it spawns before any phase). Events carry the global rank and the header lists one device per rank of
the world, so the files of one run merge by concatenating their events.

Allocation capture (the same on 1.13 and 2.x). A TorchDispatchMode (torch.utils._python_dispatch, present since 1.12)
sees every aten op the process runs, forward, backward (the autograd engine runs its ops through the same dispatcher)
and optimizer alike, with its input and output tensors. A storage seen for the first time (as an op's output, or as
an input that was made outside the dispatcher: torch.tensor before 1.13's lift_fresh, numpy, a checkpoint, a model
built before recording started) is an Alloc of its storage's bytes. Frees: each Python tensor object seen gets a
weakref whose callback only queues it (callbacks run anywhere, also inside the recorder); the queue is drained before
and after every op, and a storage whose every seen tensor has died is checked with a storage weak reference
(StorageWeakRef, torch.multiprocessing.reductions, in 1.13 and 2.x): expired is a Free, still held (by C++ alone) it
is polled at later ops and at every phase. Tensor PyObjects are preserved while C++ holds their TensorImpl (1.10+),
so a tensor autograd or DDP keeps stays seen. Bytes: exact storage bytes on the CPU (accounting "exact tensor
bytes"); on CUDA the caching allocator's request rounded to its 512-byte blocks, reconciled with
torch.cuda.memory_allocated at every phase (the difference, cuBLAS workspaces and kernels' scratch the dispatcher
does not show, is a temporaries tensor named "caching allocator: not seen as a tensor").

Categories. An allocation is born `temporaries` (inside a collective, a DDP comm hook or DDP's
Reducer._rebuild_buckets `communication_buffers`) and moves up, never down, in the order temporaries <
communication_buffers < activations < gradients < ddp_buckets < optimizer_state < parameters when its role shows:
  parameters       module parameters and buffers: at Module.register_parameter / register_buffer, after
                   Module._apply (.to, .cuda, .half), for an optimizer's params, and at every phase (a rescan);
  gradients        a parameter's .grad: after its AccumulateGrad runs (post-accumulate-grad hooks on 2.1+, else a
                   hook on the AccumulateGrad node added at each backward) and at every phase;
  optimizer_state  a tensor stored into optimizer.state[p] (the state dicts are watched as they are written, so
                   Adam's exp_avg is optimizer_state from its zeros_like), and at every phase;
  activations      a tensor autograd saves for backward (torch.autograd.graph.saved_tensors_hooks; the hook saves a
                   detached alias, so no reference cycle); input and target batches become activations this way;
  ddp_buckets      a floating-point storage DistributedDataParallel's constructor or Reducer._rebuild_buckets made
                   and kept (the Reducer's buckets; its int32 bookkeeping is not), or the buffer a DDP comm hook
                   receives;
  communication_buffers  made inside a torch.distributed collective, a DDP comm hook or _rebuild_buckets (the int32
                   tensors it broadcasts to agree on the buckets), or a temporary passed to a collective (not to
                   send / recv).
A move is a Free of the old category and an Alloc of the new one at the same instant with the same tensor id, both
carrying the unchanged total as allocated_after.

Phases (ShardScope's points; each a Phase event whose allocated_after / reserved_after are the rank's totals, on
CUDA torch.cuda.memory_allocated / memory_reserved, and whose bytes is the peak so far, on CUDA
max_memory_allocated; a DeviceMemory event with cudaMemGetInfo follows on CUDA):
  model_created  once, at the first of: DistributedDataParallel construction (entry), an optimizer's construction
                 (entry), a root module's first forward: the model is built and on its device by then;
  wrapped        once, at DDP construction's exit, else at the same point as model_created (no wrapper);
  forward        step N: the first backward of the step starts (torch.autograd.backward / Tensor.backward): the loss
                 has been computed;
  before_step    the optimizer's step is entered (outermost: GradScaler.step, ZeroRedundancyOptimizer); without an
                 optimizer step, when backward returns;
  after_step     the optimizer's step returned.
Events carry a step: 0 until `wrapped`, then N from the end of step N-1 (its after_step; for step 1, `wrapped`)
through step N's after_step, so loading a step's batch belongs to that step.
A run that raises still ends with an Error event and RunEnd saying why, and the End record.
"""
import argparse
import collections
import datetime
import functools
import json
import os
import runpy
import shlex
import signal
import socket
import sys
import threading
import time
import types
import weakref

from . import trace_writer as tw

# Priority of categories: a storage only moves to a higher one.
_PRIORITY = {tw.TEMPORARIES: 0, tw.COMMUNICATION_BUFFERS: 1, tw.ACTIVATIONS: 2, tw.GRADIENTS: 3, tw.DDP_BUCKETS: 4,
             tw.OPTIMIZER_STATE: 5, tw.PARAMETERS: 6}

_COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter",
                "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "reduce", "all_to_all",
                "all_to_all_single", "gather", "scatter", "barrier", "all_gather_object", "broadcast_object_list",
                "all_reduce_coalesced", "all_gather_coalesced")
_P2P = ("send", "recv", "isend", "irecv", "batch_isend_irecv")

_ACTIVE = None  # the process's recording Recorder, or None
_FORK_HOOK_INSTALLED = False


def active():
    """The Recorder recording in this process, or None."""
    return _ACTIVE


def format_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def rank_path(out, rank, world_size):
    """Where rank `rank` of a `world_size`-rank run writes: OUT itself for one process; DIR/rankR.sstrace for an
    existing directory; else OUT with .rankR before its extension."""
    if os.path.isdir(out) or out.endswith(os.sep):
        return os.path.join(out, f"rank{rank}.sstrace")
    if world_size <= 1 and rank == 0:
        return out
    root, ext = os.path.splitext(out)
    return f"{root}.rank{rank}{ext or '.sstrace'}"


def gpu_of(local_index, torch):
    """The GPU the process with this local index (a spawned rank's index, LOCAL_RANK) records: GPU i, or i mod the
    GPU count where there are fewer GPUs than ranks; ranks then share GPUs (gloo allows it, NCCL does not), and
    `rank % torch.cuda.device_count()` is how such scripts place them (GPU i itself would not exist)."""
    try:
        count = int(torch.cuda.device_count())
    except Exception:
        count = 0
    return local_index % count if count > 0 else local_index


def _now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Storage:
    """One storage (StorageImpl) on the run's device: its trace tensor id, accounted bytes, category, name."""
    __slots__ = ("id", "key", "bytes", "category", "weak", "tensors", "alive", "name", "__weakref__")

    def __init__(self, id_, key, nbytes, category, weak, name):
        self.id, self.key, self.bytes, self.category, self.weak, self.name = id_, key, nbytes, category, weak, name
        self.tensors = 0
        self.alive = True


class _BackwardSpan:
    __slots__ = ("label", "text", "op", "pending", "handles")

    def __init__(self, label, text, pending):
        self.label, self.text, self.op, self.pending, self.handles = label, text, None, pending, []


def _type_suffix(module):
    """A leaf module's span names its class ("forward fc1 (Linear)"), which says whether its time is a matrix product
    (the step's gemm time) or elementwise work (span_kind.h on the C++ side reads it)."""
    return f" ({type(module).__name__})"


class _WatchedState(dict):
    """optimizer.state[p]: reports each tensor stored into it. Pickles and copies as a plain dict."""
    __slots__ = ("_shardscope_param",)

    def __setitem__(self, key, value):
        dict.__setitem__(self, key, value)
        rec = _ACTIVE
        if rec is not None:
            rec._on_optimizer_state(value, key, getattr(self, "_shardscope_param", None))

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def __reduce_ex__(self, protocol):
        return (dict, (dict(self),))


class _WatchedStates(collections.defaultdict):
    """optimizer.state: a defaultdict whose per-parameter dicts are _WatchedState. Pickles as defaultdict(dict)."""

    def __missing__(self, param):
        state = _WatchedState()
        state._shardscope_param = weakref.ref(param) if _is_tensor(param) else None
        dict.__setitem__(self, param, state)
        return state

    def __setitem__(self, param, value):
        if isinstance(value, dict) and not isinstance(value, _WatchedState):
            watched = _WatchedState()
            watched._shardscope_param = weakref.ref(param) if _is_tensor(param) else None
            dict.update(watched, value)
            value = watched
        dict.__setitem__(self, param, value)
        rec = _ACTIVE
        if rec is not None and isinstance(value, dict):
            for key, v in value.items():
                rec._on_optimizer_state(v, key, value._shardscope_param)

    def __reduce_ex__(self, protocol):
        return (collections.defaultdict, (dict,), None, None, iter(self.items()))


def _is_tensor(x):
    import torch
    return isinstance(x, torch.Tensor)


def _guarded(default=None):
    """For the recorder's callbacks inside the user's run: a failure of the recorder's own bookkeeping must not stop
    the training. It is reported once on stderr and counted (the trace says so at its end); the run goes on."""
    def wrap(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except Exception as e:  # noqa: BLE001 - anything the recorder gets wrong
                self._internal_error(method.__name__, e)
                return default
        return guarded
    return wrap


class _Patches:
    """Attributes replaced while recording; undone in reverse order."""

    def __init__(self):
        self._undo = []

    def set(self, owner, name, value):
        if not hasattr(owner, name):
            return False
        original = getattr(owner, name)
        if isinstance(owner, type) and name in owner.__dict__:
            original_raw = owner.__dict__[name]
        else:
            original_raw = original
        setattr(owner, name, value)
        self._undo.append((owner, name, original_raw))
        return True

    def undo(self):
        while self._undo:
            owner, name, original = self._undo.pop()
            try:
                setattr(owner, name, original)
            except (AttributeError, TypeError):
                pass


class Recorder:
    """Records this process as rank `rank` of `world_size` into `path`. start() / stop(); see the module's doc.

    device: "cpu", "cuda" or "auto" (cuda when torch.cuda.is_available()). cuda_index: the GPU (default LOCAL_RANK
    mod the GPU count (gpu_of), else the current device). spans: module forward / backward spans. saved_tensor_hooks:
    categorize activations (off: tensors saved for backward stay temporaries). ddp_comm_hook: register a comm hook
    on each DDP model (the default all-reduce, or the user's own, wrapped) for bucket spans. python_lines: each
    Alloc's text names the user's source line that allocated it."""

    def __init__(self, path, rank=0, world_size=1, device="auto", cuda_index=None, spans=True,
                 saved_tensor_hooks=True, ddp_comm_hook=True, python_lines=True, command_line=None,
                 flush_interval_s=0.1, description=None):
        import torch
        self.torch = torch
        self.path = path
        self.rank, self.world_size = int(rank), int(world_size)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device not in ("cpu", "cuda"):
            raise ValueError(f"device {device!r} is not cpu, cuda or auto")
        self.device_type = device
        self.cuda = device == "cuda"
        if self.cuda and cuda_index is None:
            cuda_index = int(os.environ.get("LOCAL_RANK", -1))
            if cuda_index >= 0:
                cuda_index = gpu_of(cuda_index, torch)
            else:
                cuda_index = torch.cuda.current_device() if torch.cuda.is_initialized() else 0
        self.cuda_index = cuda_index if self.cuda else -1
        self.spans, self.saved_tensor_hooks = spans, saved_tensor_hooks
        self.ddp_comm_hook, self.python_lines = ddp_comm_hook, python_lines
        self.command_line = command_line if command_line is not None else " ".join(shlex.quote(a) for a in sys.argv)
        self.description = description
        self.flush_interval_s = flush_interval_s

        self._lock = threading.RLock()
        self._writer = None
        self._pending_events = []  # before the writer exists (CUDA: until CUDA is in use)
        self._started = self._stopped = False
        self._t0 = 0
        self._last_t = 0
        self._recorded_at = None
        self._t0_unix_ns = 0

        # Memory state.
        self._storages = {}          # StorageImpl pointer -> _Storage (live)
        self._tensors = {}           # id(tensor) -> (weakref, _Storage)
        self._deaths = collections.deque()
        self._orphans = set()        # storages whose seen tensors all died while the storage lives on
        self._next_tensor_id = 0
        self.allocated = 0
        self.peak = 0
        self._reserved = 0
        self._unseen = None          # CUDA: the "not seen as a tensor" pseudo-storage
        self._context = [tw.TEMPORARIES]
        self._internal = 0
        self._ops_since_poll = 0
        self._ddp_window = None      # (storage, floating) born inside DDP's constructor or _rebuild_buckets

        # Phases.
        self.step = 0
        self._state = "setup"        # setup -> forward (phase emitted) -> before_step -> stepped -> forward ...
        self._model_created = self._wrapped = False
        self._phases_seen = 0
        self._backward_depth = 0
        self._step_depth = 0
        self._ddp_init_depth = 0
        self._accumulate_handles = []

        # Model knowledge.
        self._modules = weakref.WeakSet()   # modules with parameters / buffers, roots
        self._module_names = {}              # id(module) -> (weakref, name)
        self._param_names = {}               # id(param) -> (weakref, name)
        self._optimizers = weakref.WeakSet()
        self._post_accumulate_hooks = {}     # id(param) -> (weakref, handle) (PyTorch 2.1+)
        self._forward_depth = 0
        self._forward_stack = []             # (module id, op) of open leaf forward spans
        self._module_context = []            # labels of the modules running, innermost last
        self._param_waiters = {}             # id(param) -> [_BackwardSpan]
        self._open_backward = set()          # backward spans begun and not ended
        self._named_roots = {}               # id(root module) -> weakref
        self._collective_depth = 0
        self._view_ops = {}                  # op -> whether its outputs are views of its first argument
        self._internal_errors = 0
        self._next_op = 0

        self._patches = _Patches()
        self._handles = []
        self._mode = None
        self._saved_hooks = None

    # ------------------------------------------------------------------ trace output

    def _header(self):
        torch = self.torch
        name, capacity = "CPU", 0
        if self.cuda:
            try:
                props = torch.cuda.get_device_properties(self.cuda_index)
                name, capacity = props.name, int(props.total_memory)
            except Exception:
                name = "CUDA device"
        devices = []
        for r in range(self.world_size):
            devices.append({"rank": r, "name": name, "capacity": capacity,
                            "physical_device": self.cuda_index if (self.cuda and r == self.rank) else -1})
        script = self.description or "PyTorch run"
        world_text = f"{self.world_size} × {name}"
        scenario = {"name": f"recorded: {script} · {world_text} · pytorch {torch.__version__}",
                    "description": f"Recorded from PyTorch {torch.__version__} on {self.device_type} by "
                                   f"python -m shardscope.record (rank {self.rank} of {self.world_size}).",
                    "cluster": {"world": self.world_size}}
        if not self.cuda:
            # What ShardScope predicts a CPU run with: the "CPU" device (no cuBLAS workspaces, per-parameter
            # optimizer steps, Adam's step counters on the device) under exact tensor bytes.
            scenario["cluster"]["device"] = "CPU"
            scenario["accounting"] = {"mode": "exact"}
        driver = runtime = nccl = None
        if self.cuda:
            runtime = getattr(torch.version, "cuda", None)
            try:
                v = torch.cuda.nccl.version()
                nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
            except Exception:
                nccl = None
        return tw.make_header(
            source=f"pytorch {torch.__version__} {self.device_type}",
            scenario_json=json.dumps(scenario, ensure_ascii=False, sort_keys=True),
            accounting_rules="PyTorch caching allocator (recorded)" if self.cuda else "exact tensor bytes",
            devices=devices, host=socket.gethostname() or None, recorded_at=self._recorded_at,
            command_line=self.command_line or None, driver_version=driver, cuda_runtime_version=runtime,
            nccl_version=nccl,
            extra={"recording": {"recorder": "shardscope.record", "pytorch": torch.__version__,
                                 "device": f"cuda:{self.cuda_index}" if self.cuda else "cpu",
                                 "rank": self.rank, "world_size": self.world_size, "pid": os.getpid(),
                                 "t0_unix_ns": self._t0_unix_ns,
                                 "phase_event_fields": "allocated_after, reserved_after: the rank's totals "
                                                       "(CUDA: memory_allocated, memory_reserved); bytes: the peak "
                                                       "so far (CUDA: max_memory_allocated)"}})

    def _open_writer(self):
        if self._writer is None:
            self._writer = tw.TraceWriter(self.path, self._header(), flush_interval_s=self.flush_interval_s)
            for kind, t, fields in self._pending_events:
                self._writer.event(kind, self.rank if kind != tw.RUN_END else -1, t, **fields)
            self._pending_events = []

    def _t(self):
        t = time.perf_counter_ns() - self._t0
        if t < self._last_t:
            t = self._last_t
        self._last_t = t
        return t

    def _emit(self, kind, **fields):
        """One event of this rank now (the caller holds the lock)."""
        t = self._t()
        fields.setdefault("step", self.step)
        if self._writer is None:
            if self.cuda and self.torch.cuda.is_initialized():
                self._open_writer()
            else:
                self._pending_events.append((kind, t, fields))
                return
        self._writer.event(kind, -1 if kind == tw.RUN_END else self.rank, t, **fields)

    # ------------------------------------------------------------------ storages

    def _accounted(self, nbytes):
        if not self.cuda or nbytes == 0:
            return nbytes
        return max(512, (nbytes + 511) // 512 * 512)

    def _alloc_text(self, what):
        parts = []
        if self._module_context:
            parts.append(self._module_context[-1])
        parts.append(what)
        text = ": ".join(parts)
        if self.python_lines:
            line = self._user_line()
            if line:
                text += f" ({line})"
        return text

    _skip_dirs = None

    def _user_line(self):
        if Recorder._skip_dirs is None:
            import torch
            Recorder._skip_dirs = (os.path.dirname(torch.__file__), os.path.dirname(os.path.abspath(__file__)),
                                   os.path.dirname(runpy.__file__))
        f = sys._getframe(1)
        while f is not None:
            name = f.f_code.co_filename
            if not name.startswith(Recorder._skip_dirs) and not name.startswith("<"):
                return f"{os.path.basename(name)}:{f.f_lineno}"
            f = f.f_back
        return None

    def _track(self, t, born_text=None):
        """The _Storage of tensor t (registering t and, if new, its storage as an Alloc), or None when t is not on
        the run's device or has no storage. Lock held."""
        key = id(t)
        entry = self._tensors.get(key)
        if entry is not None and entry[0]() is t:
            return entry[1]
        try:
            if t.device.type != self.device_type:
                return None
            st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            st = getattr(st, "_storage", st)
            skey = st._cdata
        except Exception:
            return None
        rec = self._storages.get(skey)
        if rec is not None and rec.weak.expired():
            self._free(rec)
            rec = None
        if rec is None:
            from torch.multiprocessing.reductions import StorageWeakRef
            try:
                nbytes = self._accounted(int(st.nbytes()))
                weak = StorageWeakRef(st)
            except Exception:
                return None
            rec = _Storage(self._next_tensor_id, skey, nbytes, self._context[-1], weak,
                           self._alloc_text(born_text or "tensor"))
            self._next_tensor_id += 1
            self._storages[skey] = rec
            if nbytes:
                self.allocated += nbytes
                self.peak = max(self.peak, self.allocated)
                self._emit(tw.ALLOC, category=rec.category, bytes=nbytes, allocated_after=self.allocated,
                           reserved_after=self._reserved_now(), tensor=rec.id, text=rec.name)
            if self._ddp_window is not None:
                self._ddp_window.append((rec, t.is_floating_point()))
        rec.tensors += 1
        self._orphans.discard(rec)
        self._tensors[key] = (weakref.ref(t, functools.partial(self._tensor_died, key, rec)), rec)
        return rec

    def _tensor_died(self, key, rec, wr):
        self._deaths.append((key, rec, wr))  # may run anywhere: only queue

    def _reserved_now(self):
        return max(self._reserved, self.allocated) if self.cuda else self.allocated

    def _free(self, rec):
        if not rec.alive:
            return
        rec.alive = False
        if self._storages.get(rec.key) is rec:
            del self._storages[rec.key]
        self._orphans.discard(rec)
        if rec.bytes:
            self.allocated -= rec.bytes
            self._emit(tw.FREE, category=rec.category, bytes=rec.bytes, allocated_after=self.allocated,
                       reserved_after=self._reserved_now(), tensor=rec.id)

    def _drain(self):
        """Frees for the tensors that died since the last call. Lock held."""
        deaths = self._deaths
        while deaths:
            key, rec, wr = deaths.popleft()
            entry = self._tensors.get(key)
            if entry is not None and entry[0] is wr:
                del self._tensors[key]
            rec.tensors -= 1
            if rec.tensors <= 0 and rec.alive:
                if rec.weak.expired():
                    self._free(rec)
                else:
                    self._orphans.add(rec)

    def _poll_orphans(self):
        for rec in [r for r in self._orphans if r.weak.expired()]:
            self._free(rec)

    def _poll_all(self):
        self._drain()
        for rec in [r for r in self._storages.values() if r.weak.expired()]:
            self._free(rec)

    def _classify(self, rec, category, name=None):
        """Moves a storage up to `category` (Free + Alloc at one instant, allocated_after unchanged)."""
        if rec is None or not rec.alive or _PRIORITY[category] <= _PRIORITY[rec.category]:
            return
        if rec.bytes:
            total = self.allocated
            self._emit(tw.FREE, category=rec.category, bytes=rec.bytes, allocated_after=total,
                       reserved_after=self._reserved_now(), tensor=rec.id)
        rec.category = category
        if name:
            rec.name = name
        if rec.bytes:
            self._emit(tw.ALLOC, category=category, bytes=rec.bytes, allocated_after=self.allocated,
                       reserved_after=self._reserved_now(), tensor=rec.id, text=rec.name)

    def _refresh(self, t):
        """After an op that may have resized or re-pointed t's storage (resize_, set_, out=)."""
        entry = self._tensors.get(id(t))
        if entry is None or entry[0]() is not t:
            self._track(t)
            return
        rec = entry[1]
        try:
            st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            st = getattr(st, "_storage", st)
            skey, nbytes = st._cdata, self._accounted(int(st.nbytes()))
        except Exception:
            return
        if skey != rec.key:
            del self._tensors[id(t)]
            rec.tensors -= 1
            if rec.tensors <= 0:
                self._orphans.add(rec)
            self._track(t)
        elif nbytes != rec.bytes and rec.alive:
            delta = nbytes - rec.bytes
            rec.bytes = nbytes
            self.allocated += delta
            self.peak = max(self.peak, self.allocated)
            self._emit(tw.ALLOC if delta > 0 else tw.FREE, category=rec.category, bytes=abs(delta),
                       allocated_after=self.allocated, reserved_after=self._reserved_now(), tensor=rec.id,
                       text=rec.name if delta > 0 else "")

    # ------------------------------------------------------------------ dispatch

    @_guarded()
    def _before_op(self, args, kwargs):
        with self._lock:
            self._drain()
            if self._orphans:
                self._ops_since_poll += 1
                if len(self._orphans) <= 32 or self._ops_since_poll >= 64:
                    self._ops_since_poll = 0
                    self._poll_orphans()
            Tensor = self.torch.Tensor
            for a in args:
                if isinstance(a, Tensor):
                    if id(a) not in self._tensors:
                        self._track(a, "input")
                elif isinstance(a, (list, tuple)):
                    for x in a:
                        if isinstance(x, Tensor) and id(x) not in self._tensors:
                            self._track(x, "input")
            if kwargs:
                for a in kwargs.values():
                    if isinstance(a, Tensor) and id(a) not in self._tensors:
                        self._track(a, "input")

    def _is_view_op(self, func):
        """Whether every output of func aliases its first argument without writing it (t, view, detach, expand,
        split...): then the outputs share that argument's storage and need no storage lookup. From the op's schema."""
        view = self._view_ops.get(func)
        if view is None:
            try:
                schema = func._schema
                returns = schema.returns
                view = (bool(returns) and bool(schema.arguments) and schema.arguments[0].alias_info is not None
                        and not schema.arguments[0].alias_info.is_write
                        and all(r.alias_info is not None and not r.alias_info.is_write for r in returns))
            except Exception:
                view = False
            self._view_ops[func] = view
        return view

    def _attach_view(self, base_rec, x):
        self._tensors[id(x)] = (weakref.ref(x, functools.partial(self._tensor_died, id(x), base_rec)), base_rec)
        base_rec.tensors += 1
        self._orphans.discard(base_rec)

    @_guarded()
    def _after_op(self, func, out, args, kwargs):
        with self._lock:
            self._drain()
            Tensor = self.torch.Tensor
            name = None
            if args and isinstance(args[0], Tensor) and self._is_view_op(func):
                base = self._tensors.get(id(args[0]))
                if base is not None and base[0]() is args[0] and base[1].alive:
                    for x in (out if isinstance(out, (list, tuple)) else (out,)):
                        if isinstance(x, Tensor) and (id(x) not in self._tensors or self._tensors[id(x)][0]() is not x):
                            self._attach_view(base[1], x)
                    return
            if isinstance(out, Tensor):
                if id(out) not in self._tensors or self._tensors[id(out)][0]() is not out:
                    name = _op_name(func)
                    self._track(out, name)
            elif isinstance(out, (list, tuple)):
                for x in out:
                    if isinstance(x, Tensor) and (id(x) not in self._tensors or self._tensors[id(x)][0]() is not x):
                        self._track(x, name or _op_name(func))
            fname = getattr(func, "__name__", "")
            if "resize" in fname or fname.startswith("set_") or (kwargs and "out" in kwargs):
                targets = []
                if args and isinstance(args[0], Tensor):
                    targets.append(args[0])
                o = kwargs.get("out") if kwargs else None
                if isinstance(o, Tensor):
                    targets.append(o)
                elif isinstance(o, (list, tuple)):
                    targets.extend(x for x in o if isinstance(x, Tensor))
                for x in targets:
                    self._refresh(x)

    # ------------------------------------------------------------------ phases

    def _sync_model(self):
        """Rescan: parameters and buffers of the known modules, their .grad, the optimizers' state."""
        Tensor = self.torch.Tensor
        self._internal += 1
        try:
            for m in list(self._modules):
                for p in list(m._parameters.values()):
                    if isinstance(p, Tensor):
                        self._classify(self._track(p, "parameter"), tw.PARAMETERS, self._param_name(p))
                        g = p.grad
                        if g is not None:
                            self._classify(self._track(g, "grad"), tw.GRADIENTS, self._param_name(p) + ".grad")
                for b in list(m._buffers.values()):
                    if isinstance(b, Tensor):
                        self._classify(self._track(b, "buffer"), tw.PARAMETERS, self._param_name(b))
            for opt in list(self._optimizers):
                self._watch_optimizer_state(opt)
                for group in opt.param_groups:
                    for p in group.get("params", ()):
                        if isinstance(p, Tensor):
                            self._classify(self._track(p, "parameter"), tw.PARAMETERS, self._param_name(p))
                            if p.grad is not None:
                                self._classify(self._track(p.grad, "grad"), tw.GRADIENTS,
                                               self._param_name(p) + ".grad")
                for p, state in list(opt.state.items()):
                    if isinstance(state, dict):
                        for k, v in state.items():
                            if isinstance(v, Tensor):
                                self._classify(self._track(v, str(k)), tw.OPTIMIZER_STATE,
                                               f"{k} {self._param_name(p)}")
        finally:
            self._internal -= 1

    def _reconcile_cuda(self):
        """Makes the rank's total equal torch.cuda.memory_allocated (the difference: allocator blocks no tensor
        showed); returns (allocated, reserved, max allocated)."""
        torch = self.torch
        dev = self.cuda_index
        allocated = int(torch.cuda.memory_allocated(dev))
        reserved = int(torch.cuda.memory_reserved(dev))
        peak = int(torch.cuda.max_memory_allocated(dev))
        self._reserved = reserved
        if self._unseen is None:
            self._unseen = _Storage(self._next_tensor_id, None, 0, tw.TEMPORARIES, None,
                                    "caching allocator: not seen as a tensor (workspaces, kernels' scratch)")
            self._next_tensor_id += 1
        delta = allocated - self.allocated
        if delta:
            self._unseen.bytes += delta
            self.allocated = allocated
            self._emit(tw.ALLOC if delta > 0 else tw.FREE, category=tw.TEMPORARIES, bytes=abs(delta),
                       allocated_after=allocated, reserved_after=self._reserved_now(), tensor=self._unseen.id,
                       text=self._unseen.name if delta > 0 else "")
        self.peak = max(self.peak, peak)
        return allocated, reserved, peak

    def _phase(self, name):
        """Emits phase `name` (lock held)."""
        self._poll_all()
        self._sync_model()
        self._poll_all()
        if self.cuda:
            try:
                allocated, reserved, peak = self._reconcile_cuda()
            except Exception:
                allocated, reserved, peak = self.allocated, self._reserved_now(), self.peak
        else:
            allocated = reserved = self.allocated
            peak = self.peak
        self._emit(tw.PHASE, text=name, allocated_after=allocated, reserved_after=reserved, bytes=peak)
        self._phases_seen += 1
        if self.cuda:
            try:
                free, total = self.torch.cuda.mem_get_info(self.cuda_index)
                self._emit(tw.DEVICE_MEMORY, bytes=int(total - free), reserved_after=int(total))
            except Exception:
                pass

    def _ensure_model_created(self, wrapped_too):
        if not self._model_created:
            self._model_created = True
            self._phase("model_created")
        if wrapped_too and not self._wrapped:
            self._emit_wrapped()

    def _emit_wrapped(self):
        """Phase `wrapped` (step 0); what follows is step 1, as ShardScope's step N runs from the end of the step
        before it (set-up) to its after_step, loading its batch included."""
        self._wrapped = True
        self._phase("wrapped")
        self.step = max(self.step, 1)

    def _next_step(self):
        self._state = "stepped"
        self.step += 1

    def _begin_forward_phase(self):
        """At a backward's start: phase `forward` of the step unless the step's forward phase was emitted."""
        if self._state != "forward":
            self._ensure_model_created(True)
            self._state = "forward"
            self._phase("forward")

    # ------------------------------------------------------------------ names

    def _name_modules(self, root):
        try:
            items = list(root.named_modules())
        except Exception:
            return
        inner = getattr(root, "module", None)
        strip = "module." if inner is not None and _is_module(inner) else ""
        for name, m in items:
            if strip and name.startswith(strip):
                name = name[len(strip):]
            elif strip and name == "module":
                name = ""
            key = id(m)
            entry = self._module_names.get(key)
            if entry is None or entry[0]() is not m or not entry[1] or entry[1] == type(m).__name__:
                self._module_names[key] = (weakref.ref(m), name or type(m).__name__)
            has_state = bool(m._parameters) or bool(m._buffers)
            if has_state:
                self._modules.add(m)
            for pname, p in list(m._parameters.items()) + list(m._buffers.items()):
                if p is not None:
                    self._param_names[id(p)] = (weakref.ref(p), f"{name}.{pname}" if name else pname)

    def _module_name(self, m):
        entry = self._module_names.get(id(m))
        if entry is not None and entry[0]() is m:
            return entry[1]
        return type(m).__name__

    def _param_name(self, p):
        entry = self._param_names.get(id(p))
        if entry is not None and entry[0]() is p:
            return entry[1]
        return f"tensor of {tuple(p.shape)}"

    # ------------------------------------------------------------------ hook callbacks

    @_guarded()
    def _on_register(self, module, name, value, buffer):
        if _ACTIVE is not self or value is None:
            return
        with self._lock:
            self._modules.add(module)
            if id(value) not in self._param_names:
                self._param_names[id(value)] = (weakref.ref(value), name)
            self._classify(self._track(value, "buffer" if buffer else "parameter"), tw.PARAMETERS, name)

    @_guarded()
    def _on_apply(self, module):
        with self._lock:
            self._drain()
            self._modules.add(module)
            for m in module.modules():
                if m._parameters or m._buffers:
                    self._modules.add(m)
                    for n, p in list(m._parameters.items()) + list(m._buffers.items()):
                        if p is not None:
                            self._classify(self._track(p, "parameter"), tw.PARAMETERS, self._param_name(p)
                                           if id(p) in self._param_names else n)

    @_guarded()
    def _on_optimizer_state(self, value, key, param_ref):
        if not _is_tensor(value):
            return
        with self._lock:
            p = param_ref() if param_ref is not None else None
            name = f"{key} {self._param_name(p)}" if p is not None else str(key)
            self._classify(self._track(value, str(key)), tw.OPTIMIZER_STATE, name)

    def _watch_optimizer_state(self, opt):
        state = getattr(opt, "state", None)
        if isinstance(state, dict) and not isinstance(state, _WatchedStates):
            watched = _WatchedStates()
            for p, s in state.items():
                watched[p] = s  # converts and reports its tensors
            try:
                opt.state = watched
            except Exception:
                pass

    def _pack(self, t):
        """saved_tensors_hooks pack: the saved tensor's storage is an activation; keeps a detached alias of a tensor
        with a grad_fn (returning such a t itself makes a cycle output -> grad_fn -> t, never freed without a
        backward)."""
        if _ACTIVE is self and not self._stopped:
            self._on_saved(t)
        # Only a tensor with a grad_fn can close the cycle (its own grad_fn saving it); others are kept as they are
        # (a Python number autograd saves arrives here as a wrapped-number tensor that cannot be dispatched).
        return t.detach() if t.grad_fn is not None else t

    @_guarded()
    def _on_saved(self, t):
        with self._lock:
            self._classify(self._track(t, "saved tensor"), tw.ACTIVATIONS)

    @staticmethod
    def _unpack(t):
        return t

    @_guarded()
    def _on_grad_accumulated(self, param_ref):
        p = param_ref()
        if p is None or _ACTIVE is not self:
            return
        with self._lock:
            g = p.grad
            if g is not None:
                self._classify(self._track(g, "grad"), tw.GRADIENTS, self._param_name(p) + ".grad")
            waiters = self._param_waiters.pop(id(p), None)
            if waiters:
                for span in waiters:
                    self._backward_signal(span)

    def _install_accumulate_hooks(self):
        """At a backward's start: know when each parameter's gradient lands (PyTorch 2.1+: a post-accumulate-grad
        hook once per parameter; before: a hook on the AccumulateGrad node of this graph, removed at the end)."""
        torch = self.torch
        params = []
        for m in list(self._modules):
            params.extend(p for p in m._parameters.values() if p is not None and p.requires_grad)
        for opt in list(self._optimizers):
            for group in opt.param_groups:
                params.extend(p for p in group.get("params", ()) if isinstance(p, torch.Tensor) and p.requires_grad)
        seen = set()
        self._internal += 1
        try:
            for p in params:
                if id(p) in seen:
                    continue
                seen.add(id(p))
                if hasattr(p, "register_post_accumulate_grad_hook"):
                    entry = self._post_accumulate_hooks.get(id(p))
                    if entry is not None and entry[0]() is p:
                        continue
                    ref = weakref.ref(p)
                    handle = p.register_post_accumulate_grad_hook(lambda _p, ref=ref: self._on_grad_accumulated(ref))
                    self._post_accumulate_hooks[id(p)] = (ref, handle)
                    self._handles.append(handle)
                else:
                    with torch.enable_grad():
                        node = p.view_as(p).grad_fn
                    if node is None or not node.next_functions or node.next_functions[0][0] is None:
                        continue
                    acc = node.next_functions[0][0]
                    ref = weakref.ref(p)
                    self._accumulate_handles.append(
                        (acc, acc.register_hook(lambda gi, go, ref=ref: self._on_grad_accumulated(ref))))
        finally:
            self._internal -= 1

    def _remove_accumulate_hooks(self):
        for _acc, handle in self._accumulate_handles:
            try:
                handle.remove()
            except Exception:
                pass
        self._accumulate_handles = []

    def _internal_error(self, where, error):
        self._internal_errors += 1
        if self._internal_errors == 1:
            print(f"shardscope.record: the recorder failed in {where} ({type(error).__name__}: {error}); the run goes "
                  f"on, the trace may miss events from here", file=sys.stderr)

    # spans
    def _new_op(self):
        op = self._next_op
        self._next_op += 1
        return op

    def _begin_span(self, label, stream=tw.COMPUTE):
        op = self._new_op()
        self._emit(tw.OP_BEGIN, op=op, stream=stream, text=label)
        return op

    def _end_span(self, op, stream=tw.COMPUTE):
        self._emit(tw.OP_END, op=op, stream=stream)

    @_guarded()
    def _forward_pre(self, module, inputs):
        if _ACTIVE is not self:
            return
        with self._lock:
            self._drain()
            if self._forward_depth == 0:
                named = self._named_roots.get(id(module))
                if named is None or named() is not module:
                    self._name_modules(module)
                    self._named_roots[id(module)] = weakref.ref(module)
                if not self._wrapped and self._ddp_init_depth == 0:
                    self._ensure_model_created(True)
            self._forward_depth += 1
            label = self._module_name(module)
            self._module_context.append(label + " forward")
            if self.spans and not module._modules:
                self._forward_stack.append((id(module), self._begin_span("forward " + label + _type_suffix(module))))

    @_guarded()
    def _forward_post(self, module, inputs, output):
        if _ACTIVE is not self:
            return
        torch = self.torch
        with self._lock:
            self._drain()
            self._forward_depth = max(0, self._forward_depth - 1)
            if self._module_context:
                self._module_context.pop()
            if not (self.spans and not module._modules):
                return
            if self._forward_stack and self._forward_stack[-1][0] == id(module):
                self._end_span(self._forward_stack.pop()[1])
            if not torch.is_grad_enabled():
                return
            out = _first_tensor(output, torch)
            if out is None or not out.requires_grad or out.grad_fn is None:
                return
            label = "backward " + self._module_name(module)
            ins = [x for x in _tensors_in(inputs, torch) if x.requires_grad]
            own = [p for p in module._parameters.values() if p is not None and p.requires_grad]
            span = _BackwardSpan(label, label + _type_suffix(module), len(ins) if ins else len(own))
            if span.pending == 0:
                return
            self._internal += 1
            try:
                span.handles.append(out.register_hook(lambda g, span=span: self._backward_begin(span)))
                for x in ins:
                    span.handles.append(x.register_hook(lambda g, span=span: self._backward_signal(span)))
            finally:
                self._internal -= 1
            if not ins:
                # Wait for these parameters' gradients after the span begins (see _backward_begin).
                span.handles.append(("params", [weakref.ref(p) for p in own]))

    @_guarded()
    def _backward_begin(self, span):
        with self._lock:
            if span.op is not None or _ACTIVE is not self:
                return
            span.op = self._begin_span(span.text)
            self._open_backward.add(span)
            self._module_context.append(span.label)
            for h in span.handles:
                if isinstance(h, tuple) and h[0] == "params":
                    for ref in h[1]:
                        p = ref()
                        if p is not None:
                            self._param_waiters.setdefault(id(p), []).append(span)

    def _close_backward_spans(self):
        """At a backward's end: spans still waiting for a signal end now."""
        for span in list(self._open_backward):
            span.pending = 1
            self._backward_signal(span)
        self._open_backward.clear()
        self._param_waiters.clear()

    @_guarded()
    def _backward_signal(self, span):
        with self._lock:
            if span.op is None:
                return
            span.pending -= 1
            if span.pending == 0:
                self._end_span(span.op)
                self._open_backward.discard(span)
                if span.label in self._module_context:
                    self._module_context.remove(span.label)
                for h in span.handles:
                    if not isinstance(h, tuple):
                        try:
                            h.remove()
                        except Exception:
                            pass
                span.handles = []

    # ------------------------------------------------------------------ patched entry points

    @_guarded()
    def _backward_enter(self):
        with self._lock:
            self._drain()
            self._forward_depth = 0
            self._begin_forward_phase()
            self._install_accumulate_hooks()
            self._module_context = ["backward"]

    @_guarded()
    def _backward_exit(self):
        with self._lock:
            self._remove_accumulate_hooks()
            self._close_backward_spans()
            self._module_context = []
            self._drain()
            if not self._optimizers and _ACTIVE is self:
                self._phase("before_step")
                self._next_step()  # no optimizer: the step ends with its backward

    def _wrap_backward(self, original):
        recorder = self

        def backward(*args, **kwargs):
            if _ACTIVE is not recorder or recorder._backward_depth > 0:
                return original(*args, **kwargs)
            recorder._backward_enter()
            recorder._backward_depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                recorder._backward_depth -= 1
                recorder._backward_exit()
        return backward

    @_guarded(default=None)
    def _step_begin(self, opt):
        with self._lock:
            self._drain()
            self._step_depth += 1
            if self._step_depth > 1:
                return None
            if self._state == "forward":
                self._state = "before_step"
                self._phase("before_step")
            self._watch_optimizer_state(opt)
            self._module_context = ["optimizer step"]
            return self._begin_span(f"optimizer step ({type(opt).__name__})") if self.spans else -1

    @_guarded()
    def _step_end(self, op):
        with self._lock:
            self._step_depth = max(0, self._step_depth - 1)
            if op is None:
                return
            self._drain()
            if op >= 0:
                self._end_span(op)
            self._module_context = []
            self._phase("after_step")
            self._next_step()

    def _wrap_step(self, opt):
        recorder = self
        original = opt.step  # bound (possibly wrapped by PyTorch's own profiling hook)

        def step(self_opt, *args, **kwargs):
            if _ACTIVE is not recorder:
                return original(*args, **kwargs)
            op = recorder._step_begin(self_opt)
            try:
                return original(*args, **kwargs)
            finally:
                recorder._step_end(op)
        step._shardscope_original = original
        return types.MethodType(step, opt)

    @_guarded()
    def _on_optimizer_init_begin(self):
        with self._lock:
            self._drain()
            self._ensure_model_created(self._ddp_init_depth == 0)

    @_guarded()
    def _on_optimizer_init_end(self, opt):
        with self._lock:
            self._optimizers.add(opt)
            self._watch_optimizer_state(opt)
            for group in getattr(opt, "param_groups", ()):
                for p in group.get("params", ()):
                    if _is_tensor(p):
                        self._classify(self._track(p, "parameter"), tw.PARAMETERS, self._param_name(p))
        if "step" not in opt.__dict__:
            try:
                opt.step = self._wrap_step(opt)
            except Exception:
                pass

    # DDP
    @_guarded()
    def _on_ddp_init_begin(self, module):
        with self._lock:
            self._drain()
            self._name_modules(module)
            self._ddp_init_depth += 1
            if self._ddp_init_depth == 1:
                self._ensure_model_created(False)
                self._ddp_window = []

    @_guarded()
    def _on_ddp_init_end(self, ddp, ok):
        with self._lock:
            self._ddp_init_depth -= 1
            if self._ddp_init_depth > 0:
                return
            self._poll_all()
            window, self._ddp_window = self._ddp_window or [], None
            if ok:
                self._name_modules(ddp)
                self._sync_model()
                self._buckets_from(window, tw.TEMPORARIES)
                if not self._wrapped:
                    self._emit_wrapped()

    def _buckets_from(self, window, born):
        """DDP's buckets among the storages born in its constructor or _rebuild_buckets: those still alive, of a
        floating dtype (a bucket holds gradients; the int32 tensors DDP broadcasts to agree on bucket indices and
        sizes, and its int32 map of used parameters, are not buckets)."""
        n = 0
        for rec, floating in window:
            if rec.alive and floating and rec.category == born:
                self._classify(rec, tw.DDP_BUCKETS, f"DDP bucket {n}")
                n += 1

    # collectives
    @_guarded(default=-1)
    def _collective_begin(self, name, args, kwargs, p2p):
        torch = self.torch
        with self._lock:
            self._drain()
            tensors = list(_tensors_in(args, torch)) + list(_tensors_in(tuple((kwargs or {}).values()), torch))
            payload = 0
            for t in tensors:
                rec = self._track(t, "collective input")
                if rec is not None:
                    payload += t.numel() * t.element_size()
                    if not p2p and rec.category == tw.TEMPORARIES:
                        self._classify(rec, tw.COMMUNICATION_BUFFERS)
            self._context.append(tw.COMMUNICATION_BUFFERS)
            label = f"{name} {format_bytes(payload)}" if payload else name
            return self._begin_span(label, tw.COMMUNICATION) if self.spans else -1

    @_guarded()
    def _collective_end(self, op):
        with self._lock:
            if len(self._context) > 1:
                self._context.pop()
            self._drain()
            if op >= 0:
                self._end_span(op, tw.COMMUNICATION)

    # ------------------------------------------------------------------ start / stop

    def start(self):
        global _ACTIVE
        if _ACTIVE is not None:
            raise RuntimeError("a ShardScope recorder is already recording in this process")
        torch = self.torch
        self._t0 = time.perf_counter_ns()
        self._t0_unix_ns = time.time_ns()
        self._recorded_at = _now_iso()
        if not self.cuda or torch.cuda.is_initialized():
            self._open_writer()
        _ACTIVE = self
        self._started = True
        try:
            self._install()
        except BaseException:
            _ACTIVE = None
            self._patches.undo()
            raise
        return self

    def _install(self):
        torch = self.torch
        from torch.utils._python_dispatch import TorchDispatchMode
        recorder = self

        detach = torch.ops.aten.detach.default
        number_dtypes = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}

        def _detach(args, kwargs):
            # Autograd saving a Python number (x * 2 saves it as a wrapped-number tensor) detaches it when saved
            # tensor hooks are set, at the save and at the unpack. The Python dispatcher hands a wrapped number
            # over, and back, as the number itself, which detach cannot take or return: a plain 0-d tensor of the
            # wrapped number's dtype stands in for it (what backward computes with it is the same).
            if args and type(args[0]) in number_dtypes:
                args = (torch.tensor(args[0], dtype=number_dtypes[type(args[0])]),) + tuple(args[1:])
            if _ACTIVE is recorder and not recorder._internal:
                recorder._before_op(args, kwargs)
            out = detach(*args, **kwargs)
            if type(out) in number_dtypes:
                out = torch.tensor(out, dtype=args[0].dtype if isinstance(args[0], torch.Tensor)
                                   else number_dtypes[type(out)])
            if _ACTIVE is recorder and not recorder._internal:
                recorder._after_op(detach, out, args, kwargs)
            return out

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func is detach:
                    return _detach(args, kwargs)
                if _ACTIVE is not recorder or recorder._internal:
                    return func(*args, **kwargs)
                recorder._before_op(args, kwargs)
                out = func(*args, **kwargs)
                recorder._after_op(func, out, args, kwargs)
                return out

        p = self._patches
        nn = torch.nn
        mm = nn.modules.module
        # Modules: parameters / buffers as they are registered; after .to / .cuda / .half.
        orig_register_parameter = nn.Module.register_parameter
        orig_register_buffer = nn.Module.register_buffer
        orig_apply = nn.Module._apply

        def register_parameter(module, name, param, *a, **k):
            result = orig_register_parameter(module, name, param, *a, **k)
            if _ACTIVE is recorder and param is not None:
                recorder._on_register(module, name, param, False)
            return result

        def register_buffer(module, name, tensor, *a, **k):
            result = orig_register_buffer(module, name, tensor, *a, **k)
            if _ACTIVE is recorder and tensor is not None:
                recorder._on_register(module, name, tensor, True)
            return result

        apply_depth = [0]

        def _apply(module, *a, **k):
            apply_depth[0] += 1
            try:
                return orig_apply(module, *a, **k)
            finally:
                apply_depth[0] -= 1
                if apply_depth[0] == 0 and _ACTIVE is recorder:
                    recorder._on_apply(module)

        p.set(nn.Module, "register_parameter", register_parameter)
        p.set(nn.Module, "register_buffer", register_buffer)
        p.set(nn.Module, "_apply", _apply)

        # Module forward hooks: root detection, names, spans (global hooks exist since 1.9).
        self._handles.append(mm.register_module_forward_pre_hook(self._forward_pre))
        self._handles.append(mm.register_module_forward_hook(self._forward_post))

        # Backward: phase `forward` at its start.
        p.set(torch.autograd, "backward", self._wrap_backward(torch.autograd.backward))

        # Optimizers.
        Optimizer = torch.optim.Optimizer
        orig_opt_init = Optimizer.__init__

        def opt_init(opt, *a, **k):
            if _ACTIVE is recorder:
                recorder._on_optimizer_init_begin()
            orig_opt_init(opt, *a, **k)
            if _ACTIVE is recorder:
                recorder._on_optimizer_init_end(opt)
        p.set(Optimizer, "__init__", opt_init)

        # GradScaler.step is the outermost step when AMP is used.
        for owner_name in ("torch.cuda.amp", "torch.amp"):
            owner = sys.modules.get(owner_name)
            scaler = getattr(owner, "GradScaler", None) if owner is not None else None
            if scaler is not None and "step" in scaler.__dict__ and not getattr(scaler.step, "_shardscope", False):
                orig_scaler_step = scaler.step

                def scaler_step(self_scaler, optimizer, *a, _orig=orig_scaler_step, **k):
                    if _ACTIVE is not recorder:
                        return _orig(self_scaler, optimizer, *a, **k)
                    op = recorder._step_begin(optimizer)
                    try:
                        return _orig(self_scaler, optimizer, *a, **k)
                    finally:
                        recorder._step_end(op)
                scaler_step._shardscope = True
                p.set(scaler, "step", scaler_step)

        # Distributed: DDP's constructor and buckets, collectives.
        if torch.distributed.is_available():
            self._install_distributed()

        # Spawned ranks record themselves.
        self._install_spawn()

        # Saved tensors: activations.
        if self.saved_tensor_hooks:
            self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
            self._saved_hooks.__enter__()

        self._mode = _Mode()
        self._mode.__enter__()

        global _FORK_HOOK_INSTALLED
        if not _FORK_HOOK_INSTALLED and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
            _FORK_HOOK_INSTALLED = True

    def _install_distributed(self):
        torch = self.torch
        dist = torch.distributed
        recorder = self
        p = self._patches
        c10d = sys.modules.get("torch.distributed.distributed_c10d")

        def wrap(name, original, p2p):
            def collective(*args, **kwargs):
                if _ACTIVE is not recorder or recorder._internal:
                    return original(*args, **kwargs)
                if recorder._collective_depth:
                    return original(*args, **kwargs)
                op = recorder._collective_begin(name, args, kwargs, p2p)
                recorder._collective_depth += 1
                try:
                    return original(*args, **kwargs)
                finally:
                    recorder._collective_depth -= 1
                    recorder._collective_end(op)
            collective.__wrapped__ = original
            collective.__name__ = name
            return collective

        for name in _COLLECTIVES + _P2P:
            original = getattr(dist, name, None)
            if original is None or not callable(original):
                continue
            wrapped = wrap(name, original, name in _P2P)
            p.set(dist, name, wrapped)
            if c10d is not None and getattr(c10d, name, None) is original:
                p.set(c10d, name, wrapped)
        if hasattr(dist, "_broadcast_coalesced"):
            p.set(dist, "_broadcast_coalesced", wrap("broadcast_coalesced", dist._broadcast_coalesced, False))

        DDP = torch.nn.parallel.DistributedDataParallel
        orig_ddp_init = DDP.__init__

        def ddp_init(ddp, module, *a, **k):
            if _ACTIVE is not recorder:
                return orig_ddp_init(ddp, module, *a, **k)
            recorder._on_ddp_init_begin(module)
            ok = False
            try:
                orig_ddp_init(ddp, module, *a, **k)
                ok = True
            finally:
                recorder._on_ddp_init_end(ddp, ok)
            if recorder.ddp_comm_hook and _ACTIVE is recorder:
                try:
                    recorder._install_ddp_hook(ddp)
                except Exception as e:  # noqa: BLE001
                    recorder._internal_error("DDP comm hook", e)
        p.set(DDP, "__init__", ddp_init)

        orig_register_comm_hook = DDP.register_comm_hook
        orig_register_builtin = getattr(DDP, "_register_builtin_comm_hook", None)

        def register_comm_hook(ddp, state, hook):
            ours = getattr(ddp, "_shardscope_hook_state", None)
            if ours is None:
                return orig_register_comm_hook(ddp, state, hook)
            ours.user = (state, hook)

        def register_builtin_comm_hook(ddp, comm_hook_type):
            ours = getattr(ddp, "_shardscope_hook_state", None)
            if ours is None:
                return orig_register_builtin(ddp, comm_hook_type)
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            if "FP16" in str(comm_hook_type):
                ours.user = (ddp.process_group, default_hooks.fp16_compress_hook)
            else:
                ours.user = None
        p.set(DDP, "register_comm_hook", register_comm_hook)
        if orig_register_builtin is not None:
            p.set(DDP, "_register_builtin_comm_hook", register_builtin_comm_hook)
        self._orig_register_comm_hook = orig_register_comm_hook

        Reducer = getattr(getattr(torch._C, "_distributed_c10d", None), "Reducer", None)
        if Reducer is not None and hasattr(Reducer, "_rebuild_buckets"):
            orig_rebuild = Reducer._rebuild_buckets

            def rebuild_buckets(reducer, *a, **k):
                if _ACTIVE is not recorder:
                    return orig_rebuild(reducer, *a, **k)
                with recorder._lock:
                    recorder._drain()
                    recorder._context.append(tw.COMMUNICATION_BUFFERS)
                    outer, recorder._ddp_window = recorder._ddp_window, []
                try:
                    return orig_rebuild(reducer, *a, **k)
                finally:
                    with recorder._lock:
                        recorder._context.pop()
                        recorder._poll_all()
                        window, recorder._ddp_window = recorder._ddp_window, outer
                        recorder._buckets_from(window, tw.COMMUNICATION_BUFFERS)
            try:
                p.set(Reducer, "_rebuild_buckets", rebuild_buckets)
            except (AttributeError, TypeError):
                pass

    @_guarded(default=-1)
    def _bucket_begin(self, buffer, index):
        op = -1
        with self._lock:
            self._drain()
            self._classify(self._track(buffer, "DDP bucket"), tw.DDP_BUCKETS, f"DDP bucket {index}")
            if self.spans:
                op = self._begin_span(
                    f"all_reduce DDP bucket {index} {format_bytes(buffer.numel() * buffer.element_size())}",
                    tw.COMMUNICATION)
            self._context.append(tw.COMMUNICATION_BUFFERS)
        return op

    @_guarded()
    def _bucket_end(self, op):
        with self._lock:
            self._end_span(op, tw.COMMUNICATION)

    def _install_ddp_hook(self, ddp):
        """A comm hook on a DDP model: the buffer each bucket hands it is ddp_buckets; the bucket's all-reduce is a
        span on the communication stream. Runs the user's own hook (registered later through the patched
        register_comm_hook) or the default all-reduce."""
        torch = self.torch
        dist = torch.distributed
        recorder = self
        state = types.SimpleNamespace(user=None, process_group=getattr(ddp, "process_group", None))

        def hook(hook_state, bucket):
            buffer = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
            index = bucket.index() if hasattr(bucket, "index") else 0
            op = recorder._bucket_begin(buffer, index) if _ACTIVE is recorder else -1
            try:
                if hook_state.user is not None:
                    user_state, user_hook = hook_state.user
                    fut = user_hook(user_state, bucket)
                    then = lambda f: f.value()
                else:
                    group = hook_state.process_group
                    world = dist.get_world_size(group) if group is not None else dist.get_world_size()
                    buffer.div_(world)
                    all_reduce = getattr(dist.all_reduce, "__wrapped__", dist.all_reduce)
                    fut = all_reduce(buffer, group=group, async_op=True).get_future()
                    then = lambda f: f.value()[0]
            finally:
                if _ACTIVE is recorder:
                    with recorder._lock:
                        if len(recorder._context) > 1:
                            recorder._context.pop()

            def done(f):
                value = then(f)
                if op >= 0 and _ACTIVE is recorder:
                    recorder._bucket_end(op)
                return value
            return fut.then(done)

        try:
            self._orig_register_comm_hook(ddp, state, hook)
            ddp._shardscope_hook_state = state
        except Exception as e:  # a hook registered already, or a DDP that takes none
            print(f"shardscope.record: no DDP comm hook ({e})", file=sys.stderr)

    def _install_spawn(self):
        spawn_module = sys.modules.get("torch.multiprocessing.spawn")
        if spawn_module is None:
            try:
                import torch.multiprocessing.spawn as spawn_module
            except Exception:
                return
        import torch.multiprocessing as tmp
        recorder = self
        orig_start = spawn_module.start_processes

        def start_processes(fn, args=(), nprocs=1, *a, **k):
            if _ACTIVE is recorder:
                fn = _SpawnedRank(fn, recorder._config(nprocs))
                recorder._on_spawn()
            return orig_start(fn, args, nprocs, *a, **k)
        self._patches.set(spawn_module, "start_processes", start_processes)
        if getattr(tmp, "start_processes", None) is orig_start:
            self._patches.set(tmp, "start_processes", start_processes)

    def _config(self, nprocs):
        return {"out": getattr(self, "out", self.path), "world_size": nprocs, "device": self.device_type,
                "spans": self.spans, "saved_tensor_hooks": self.saved_tensor_hooks,
                "ddp_comm_hook": self.ddp_comm_hook, "python_lines": self.python_lines,
                "command_line": self.command_line, "description": self.description}

    def _on_spawn(self):
        """The launching process of spawned ranks: it records nothing itself once it spawns before any phase."""
        if self._phases_seen == 0:
            self.stop(discard=True)

    def stop(self, error=None, discard=False, exit_text=None):
        """Ends the recording: RunEnd "ok" (or why it stopped, with an Error event first), the End record."""
        global _ACTIVE
        if self._stopped or not self._started:
            return
        torch = self.torch
        with self._lock:
            self._stopped = True
            try:
                self._poll_all()
            except Exception:
                pass
            if _ACTIVE is self:
                _ACTIVE = None
        if self._mode is not None:
            try:
                self._mode.__exit__(None, None, None)
            except Exception:
                pass
            self._mode = None
        if self._saved_hooks is not None:
            try:
                self._saved_hooks.__exit__(None, None, None)
            except Exception:
                pass
            self._saved_hooks = None
        for h in self._handles:
            try:
                h.remove()
            except Exception:
                pass
        self._handles = []
        self._remove_accumulate_hooks()
        self._patches.undo()
        for opt in list(self._optimizers):
            step = opt.__dict__.get("step")
            if getattr(getattr(step, "__func__", None), "_shardscope_original", None) is not None:
                try:
                    del opt.step
                except Exception:
                    pass
        if discard:
            if self._writer is not None:
                self._writer.close(end=False)
                try:
                    os.remove(self.path)
                except OSError:
                    pass
            return
        with self._lock:
            if self.cuda and self._writer is None:
                if torch.cuda.is_initialized():
                    self._open_writer()
            if self._writer is None:
                self._open_writer()
            if error is not None:
                self._emit(tw.ERROR, text=error)
            self._emit(tw.RUN_END, text=exit_text or ("ok" if error is None else error))
            self._writer.close(end=True)

    # context manager
    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        self.stop(error=_describe_exception(exc, tb) if exc is not None else None)
        return False


class _SpawnedRank:
    """The function a spawned process runs in place of the user's: records rank i into its own file."""

    def __init__(self, fn, config):
        self.fn, self.config = fn, config

    def __call__(self, i, *args):
        c = dict(self.config)
        world = c.pop("world_size")
        out = c.pop("out")
        import torch
        recorder = Recorder(rank_path(out, i, world), rank=i, world_size=world,
                            cuda_index=None if c["device"] == "cpu" else gpu_of(i, torch), **c)
        recorder.out = out
        recorder.start()
        try:
            result = self.fn(i, *args)
        except BaseException as e:
            recorder.stop(error=_describe_exception(e, e.__traceback__))
            raise
        recorder.stop()
        return result


def _after_fork_in_child():
    """A forked child (DataLoader worker, fork-started rank) does not write its parent's trace."""
    global _ACTIVE
    rec = _ACTIVE
    if rec is not None:
        rec._stopped = True
        rec._lock = threading.RLock()
        if rec._writer is not None:
            rec._writer.abandon()
        _ACTIVE = None


def _op_name(func):
    name = getattr(func, "__name__", None) or str(func)
    overload = name.split(".")
    return overload[0] if overload else name


def _is_module(x):
    import torch
    return isinstance(x, torch.nn.Module)


def _tensors_in(value, torch):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v, torch)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v, torch)


def _first_tensor(value, torch):
    for t in _tensors_in(value, torch):
        return t
    if hasattr(value, "values") and callable(value.values):  # ModelOutput-like
        try:
            for t in _tensors_in(list(value.values()), torch):
                return t
        except Exception:
            return None
    return None


def _describe_exception(exc, tb):
    if exc is None:
        return None
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or code == 0:
            return None
        return f"exit status {code}" if isinstance(code, int) else f"exit: {code}"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (KeyboardInterrupt)"
    where = ""
    while tb is not None:
        frame = tb.tb_frame
        name = frame.f_code.co_filename
        if "site-packages" not in name and "dist-packages" not in name and not name.startswith("<"):
            where = f" ({os.path.basename(name)}:{tb.tb_lineno})"
        tb = tb.tb_next
    text = f"{type(exc).__name__}: {exc}"
    if len(text) > 2000:
        text = text[:2000] + "…"
    return f"error: {text}{where}"


# ---------------------------------------------------------------------- public API

def record(path, **options):
    """A Recorder for this process, as a context manager: `with shardscope.record("run.sstrace"): train()`. Under
    torchrun the file is per rank (see rank_path). Options: see Recorder."""
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    recorder = Recorder(rank_path(path, rank, world), rank=rank, world_size=world, **options)
    recorder.out = path
    return recorder


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        split = argv.index("--")
        ours, target = argv[:split], argv[split + 1:]
    else:
        ours, target = argv, []
    parser = argparse.ArgumentParser(
        prog="python3 -m shardscope.record",
        description="Record a PyTorch training script as a ShardScope trace: memory by category per rank, phases, "
                    "a timeline. Usage: python3 -m shardscope.record --out run.sstrace -- train.py ARGS")
    parser.add_argument("--out", required=True, help="trace file (per rank under torchrun / spawn: OUT.rankR.sstrace)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                        help="whose memory to record (auto: cuda when available)")
    parser.add_argument("--no-spans", action="store_true", help="no module / optimizer / collective spans")
    parser.add_argument("--no-saved-tensor-hooks", action="store_true",
                        help="do not install saved_tensors_hooks (activations then count as temporaries)")
    parser.add_argument("--no-ddp-comm-hook", action="store_true", help="do not register a DDP comm hook")
    parser.add_argument("--no-python-lines", action="store_true", help="allocations do not name the source line")
    args = parser.parse_args(ours)
    if not target:
        parser.error("name the script after --: python3 -m shardscope.record --out run.sstrace -- train.py ARGS")

    module = None
    if target[0] == "-m":
        if len(target) < 2:
            parser.error("-m needs a module name")
        module, script_args = target[1], target[2:]
        sys.argv = [module] + script_args
        description = module
    else:
        script, script_args = target[0], target[1:]
        sys.argv = [script] + script_args
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        description = os.path.basename(script)
    command_line = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "shardscope.record"] + argv)
    recorder = record(args.out, device=args.device, spans=not args.no_spans,
                      saved_tensor_hooks=not args.no_saved_tensor_hooks, ddp_comm_hook=not args.no_ddp_comm_hook,
                      python_lines=not args.no_python_lines, command_line=command_line, description=description)

    def on_sigterm(signum, frame):
        raise SystemExit(128 + signum)
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, on_sigterm)

    recorder.start()
    status = 0
    try:
        if module is not None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        text = _describe_exception(e, None)
        recorder.stop(error=text)
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException as e:
        recorder.stop(error=_describe_exception(e, e.__traceback__))
        import traceback
        tb = e.__traceback__
        while tb is not None and (tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__)
                                  or tb.tb_frame.f_code.co_filename.startswith("<frozen runpy")):
            tb = tb.tb_next  # the script's own frames only
        traceback.print_exception(type(e), e, tb)
        status = 130 if isinstance(e, KeyboardInterrupt) else 1
    else:
        recorder.stop()
    if recorder._writer is not None and os.path.exists(recorder.path):
        print(f"shardscope.record: wrote {recorder.path}", file=sys.stderr)
    return status


class _CallableModule(types.ModuleType):
    """`shardscope.record` is this module and, called, record(): `with shardscope.record("run.sstrace"): ...`."""

    def __call__(self, path, **options):
        return record(path, **options)


if __name__ == "__main__":
    # Run as `python -m shardscope.record`: use the importable module, so that what spawned ranks unpickle
    # (shardscope.record._SpawnedRank) and the recorder they find are the same module's.
    from shardscope.record import main as _main
    sys.exit(_main())
else:
    sys.modules[__name__].__class__ = _CallableModule
