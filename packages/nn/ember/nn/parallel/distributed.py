"""``DistributedDataParallel``: torch's data-parallel wrapper over ``ember.distributed``.

Each process holds a replica of the module and runs it on its share of the batch; backward
averages the gradients over the ranks, so every replica takes the same optimizer step.

How (as torch's Reducer, in Python):

- Construction checks that every rank has the same parameters (shapes and dtypes), then
  broadcasts rank 0's parameters and buffers, so all replicas start alike.
- Parameters are grouped into buckets of about ``bucket_cap_mb`` (25 MiB; the first 1 MiB) in
  reverse registration order, which is roughly the order backward produces their gradients.
  A bucket owns one flat buffer.
- A post-accumulate-grad hook on every parameter copies its gradient into its bucket's slot.
  When a bucket's last gradient arrives it is divided by the world size and its all-reduce is
  started with ``async_op=True`` (the mpi backend runs it on its worker thread, in parallel with
  the rest of backward). Buckets start in index order on every rank, so ranks never start them in
  different orders.
- When the last bucket has started, the hook waits for all of them and copies the averaged
  values back into ``.grad``.
- ``find_unused_parameters=True`` walks the autograd graph from the forward's outputs and marks
  the parameters it does not reach as ready at once (their slots hold zeros); a parameter unused
  on every rank keeps its ``.grad`` (a small all-reduce of "used" flags says which).
- ``no_sync()``: backward inside it only accumulates local gradients; the first backward after
  it averages what was accumulated.
"""

from __future__ import annotations

import contextlib

import ember

from ..modules.module import Module

_DEFAULT_FIRST_BUCKET_BYTES = 1 << 20


def _dist():
    try:
        import ember.distributed as dist
    except ImportError:  # pragma: no cover - ember-mp missing
        raise RuntimeError("DistributedDataParallel needs ember.distributed: pip install "
                           "ember-mp") from None
    return dist


class _Bucket:
    __slots__ = ("params", "offsets", "buffer", "pending", "work", "index")

    def __init__(self, index: int, params: list) -> None:
        self.index = index
        self.params = params
        self.offsets = []
        pos = 0
        for p in params:
            self.offsets.append(pos)
            pos += p.numel()
        self.buffer = ember.zeros(pos, dtype=params[0].dtype, device=params[0].device)
        self.pending = len(params)
        self.work = None

    def slot(self, i: int):
        p = self.params[i]
        return self.buffer[self.offsets[i]:self.offsets[i] + p.numel()].view(p.shape)


class DistributedDataParallel(Module):
    """Data-parallel training over the processes of ``process_group`` (the default group)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        dist = _dist()
        if not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure "
                             "to call init_process_group.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        if len({p.device.type for p in module.parameters()}) > 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type "
                             "of devices, but input module parameters locate in "
                             f"{sorted({p.device.type for p in module.parameters()})}.")
        self.module = module
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * (1 << 20))
        self._world = dist.get_world_size(self.process_group)
        self._params = params
        self._verify_same_model(dist)
        if init_sync:
            self._sync_module_states(dist)
        self._build_buckets()
        self._where = {}  # id(param) -> (bucket, index in bucket)
        for b in self._buckets:
            for i, p in enumerate(b.params):
                self._where[id(p)] = (b, i)
        self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]
        self._prepared = False
        self._next_bucket = 0
        self._ready_buckets = set()
        self._marked = set()
        self._used_work = None
        self._used_flags = None

    # -- construction ---------------------------------------------------------------------------
    def _verify_same_model(self, dist) -> None:
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        everyone = [None] * self._world
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for r, theirs in enumerate(everyone):
            if theirs != mine:
                if len(theirs) != len(mine):
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank "
                                       f"{dist.get_rank(self.process_group)} has {len(mine)} "
                                       f"params, while rank {r} has inconsistent {len(theirs)} "
                                       "params.")
                k = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
                raise RuntimeError(f"DDP expects same model across all ranks, but parameter {k} "
                                   f"is {mine[k][0]} {mine[k][1]} on this rank and "
                                   f"{theirs[k][0]} {theirs[k][1]} on rank {r}.")

    def _sync_module_states(self, dist) -> None:
        self._broadcast_coalesced(dist, [*self.module.parameters(), *self.module.buffers()])

    def _broadcast_coalesced(self, dist, tensors) -> None:
        """Rank 0's values into every rank's tensors: one broadcast per dtype and device, of all
        the tensors flattened together (torch coalesces the same way)."""
        src = dist.get_global_rank(self.process_group, 0)
        groups = {}
        for t in tensors:
            groups.setdefault((t.dtype, t.device), []).append(t.detach())
        for ts in groups.values():
            flat = ember.cat([t.reshape(-1) for t in ts])
            dist.broadcast(flat, src=src, group=self.process_group)
            pos = 0
            for t in ts:
                t.copy_(flat[pos:pos + t.numel()].view(t.shape))
                pos += t.numel()

    def _build_buckets(self) -> None:
        """Reverse registration order, split by dtype and size (first bucket 1 MiB)."""
        self._buckets = []
        open_by_dtype = {}
        for p in reversed(self._params):
            key = (p.dtype, p.device)
            cur = open_by_dtype.get(key)
            cap = self.bucket_bytes_cap
            if not self._buckets:
                cap = min(cap, _DEFAULT_FIRST_BUCKET_BYTES)
            if cur is not None and cur[1] + p.numel() * p.element_size() > cap and cur[0]:
                self._buckets.append(_Bucket(len(self._buckets), cur[0]))
                cur = None
            if cur is None:
                cur = open_by_dtype[key] = [[], 0]
            cur[0].append(p)
            cur[1] += p.numel() * p.element_size()
        for params, _ in open_by_dtype.values():
            if params:
                self._buckets.append(_Bucket(len(self._buckets), params))

    # -- forward --------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        dist = _dist()
        if self._prepared:
            self._reset()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new "
                "one. This error indicates that your module has parameters that were not used in "
                "producing loss. You can enable unused parameter detection by passing the keyword "
                "argument `find_unused_parameters=True` to "
                "`ember.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss.")
        if self.broadcast_buffers and self.require_forward_param_sync and self._world > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast_coalesced(dist, buffers)
        out = self.module(*inputs, **kwargs)
        if ember.is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(out, dist)
        return out

    def _prepare_for_backward(self, out, dist) -> None:
        self._prepared = True
        self._next_bucket = 0
        self._ready_buckets = set()
        self._marked = set()
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
        if not self.find_unused_parameters:
            return
        reached = _reachable_leaves(out)
        used = [id(p) in reached for p in self._params]
        self._used_flags = ember.tensor(used, dtype=ember.int32,
                                        device=self._params[0].device)
        self._used_work = dist.all_reduce(self._used_flags, group=self.process_group,
                                          async_op=True)
        for p, u in zip(self._params, used):
            if not u:
                b, i = self._where[id(p)]
                b.slot(i).zero_()
                self._mark(p, b)

    # -- backward -------------------------------------------------------------------------------
    def _grad_ready(self, p) -> None:
        if not self._prepared:
            return  # no_sync(), eval without grad, or a backward that DDP's forward didn't make
        where = self._where.get(id(p))
        if where is None:
            return
        b, i = where
        if id(p) in self._marked:
            self._reset()
            raise RuntimeError(f"Expected to mark a variable ready only once. Parameter {i} of "
                               f"bucket {b.index} got its gradient twice in one iteration (it "
                               "was used by two backward passes without no_sync()).")
        slot = b.slot(i)
        if p.grad is not None and not (self.gradient_as_bucket_view and
                                       p.grad.data_ptr() == slot.data_ptr()):
            slot.copy_(p.grad)
        self._mark(p, b)

    def _mark(self, p, bucket: _Bucket) -> None:
        self._marked.add(id(p))
        bucket.pending -= 1
        if bucket.pending == 0:
            self._ready_buckets.add(bucket.index)
            # start buckets in index order, so that every rank starts them in the same order
            while self._next_bucket in self._ready_buckets:
                self._launch(self._buckets[self._next_bucket])
                self._next_bucket += 1
            if self._next_bucket == len(self._buckets):
                self._finalize()

    def _launch(self, bucket: _Bucket) -> None:
        dist = _dist()
        bucket.buffer.div_(self._world)
        bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)

    def _finalize(self) -> None:
        globally_used = None
        if self._used_work is not None:
            self._used_work.wait()
            globally_used = self._used_flags.tolist()
            self._used_work = None
        try:
            for b in self._buckets:
                b.work.wait()
        finally:
            self._prepared = False
        for k, p in enumerate(self._params):
            if globally_used is not None and not globally_used[k]:
                continue  # unused everywhere: its .grad stays as it was
            b, i = self._where[id(p)]
            slot = b.slot(i)
            if self.gradient_as_bucket_view:
                p.grad = slot
            elif p.grad is None:
                p.grad = slot.clone()
            else:
                p.grad.copy_(slot)

    def _reset(self) -> None:
        for b in self._buckets:
            if b.work is not None:
                try:
                    b.work.wait()
                except RuntimeError:
                    pass
                b.work = None
        self._prepared = False

    # -- torch's other controls -----------------------------------------------------------------
    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate local gradients; the first one after it
        averages everything accumulated."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def __getstate__(self):
        raise RuntimeError("DistributedDataParallel cannot be pickled; save .module instead")


def _reachable_leaves(out) -> set:
    """ids of the leaf tensors whose AccumulateGrad the autograd graph of ``out`` reaches."""
    roots = []

    def collect(x):
        if isinstance(x, ember.Tensor):
            if x.grad_fn is not None:
                roots.append(x.grad_fn)
        elif isinstance(x, (list, tuple)):
            for y in x:
                collect(y)
        elif isinstance(x, dict):
            for y in x.values():
                collect(y)

    collect(out)
    seen, leaves = set(), set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            leaves.add(id(var))
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return leaves
