"""`DistributedDataParallel`: data-parallel training over the ranks of `lazyt.distributed`.

```python
dist.init_process_group("mpi")
model = DistributedDataParallel(MLP())          # rank 0's parameters are broadcast
loss = F.cross_entropy(model(x_shard), y_shard)
grads = loss.backward()                         # p.grad and grads[p]: the mean over ranks
opt.step(grads)
```

Gradients are averaged in buckets (`bucket_cap_mb` per bucket, parameters in reverse order,
one dtype and device per bucket): a hook on each parameter
(`Tensor.register_post_accumulate_grad_hook`) notes when its gradient of the pass is final,
and as soon as a bucket is complete (and every bucket before it was launched, so all ranks
launch in one order) its gradients are flattened into one tensor and all-reduced. The
all-reduce is recorded as a lazy op (`lazyt/distributed/deferred.py`): it runs where the
pending work runs, between the gradient ops that feed it and the rest of backward, and a
step under `lazyt.compile` records and replays it. After backward every parameter's `.grad`
and its entry in the returned `Gradients` hold the averaged gradient (the same tensor).

`no_sync()` skips the reduction: gradients accumulate locally in `.grad`, and the next
synchronized backward averages the accumulated gradients.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from .. import distributed as dist
from ..autodiff import hooks as _hooks
from ..autodiff import no_grad
from ..distributed import deferred
from ..distributed import group as _dgroup
from ..errors import InvalidArgumentError
from .module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    __slots__ = ("index", "params", "numels", "ready", "launched")

    def __init__(self, index: int, params: list):
        self.index = index
        self.params = params
        self.numels = [p.numel() for p in params]
        self.ready: set[int] = set()      # ids of params whose gradient is final this pass
        self.launched = False


class DistributedDataParallel(Module):
    """Wraps `module` for data-parallel training: forward calls it; backward averages its
    parameters' gradients over the ranks. The keyword arguments are torch's; `device_ids`,
    `output_device`, `find_unused_parameters` and `gradient_as_bucket_view` are accepted
    for compatibility (a parameter without a gradient on this rank takes part with zeros)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None,
                 bucket_cap_mb: float = 25.0, find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False):
        super().__init__()
        if not isinstance(module, Module):
            raise InvalidArgumentError(f"DistributedDataParallel: expected a lazyt.nn.Module, "
                                       f"got {type(module).__name__}")
        if not bucket_cap_mb > 0:
            raise InvalidArgumentError(f"DistributedDataParallel: bucket_cap_mb must be "
                                       f"positive, got {bucket_cap_mb!r}")
        group = _dgroup.current("DistributedDataParallel")
        self.module = module
        self.world_size = group.size
        self.bucket_cap_mb = float(bucket_cap_mb)
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        params = [p for p in module.parameters() if p.trainable]
        self._params = params
        self._sync_module_states(broadcast_buffers)
        self._buckets = self._make_buckets(params, int(self.bucket_cap_mb * 2 ** 20))
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._next = 0                    # the next bucket to launch this pass
        self._launched: list = []         # (bucket, reduction, Gradients) awaiting the join
        self._in_pass = False
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready)
                         for p in params]

    # ------------------------------------------------------------------ setup
    def _sync_module_states(self, buffers: bool) -> None:
        """Give every rank rank 0's parameters (and buffers): one broadcast per dtype."""
        tensors = list(self.module.parameters())
        if buffers:
            tensors += [b for b in self.module.buffers() if b is not None]
        by_kind: dict = {}
        for t in tensors:
            by_kind.setdefault((t.dtype, t.device), []).append(t)
        import lazyt
        with no_grad():
            for group in by_kind.values():
                flat = lazyt.cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, src=0)
                offset = 0
                for t in group:
                    n = t.numel()
                    dist._assign(t, flat[offset:offset + n].reshape(t.shape), "broadcast")
                    offset += n

    @staticmethod
    def _make_buckets(params: list, cap_bytes: int) -> list[_Bucket]:
        """Parameters in reverse order (roughly the order backward finishes them), cut into
        buckets of at most `cap_bytes` (a larger parameter gets a bucket of its own)."""
        buckets: list[_Bucket] = []
        open_: dict = {}                  # (dtype, device) -> (params, bytes)
        for p in reversed(params):
            key = (p.dtype, p.device)
            group, size = open_.get(key, ([], 0))
            nbytes = p.numel() * p.dtype.itemsize
            if group and size + nbytes > cap_bytes:
                buckets.append(_Bucket(len(buckets), group))
                group, size = [], 0
            open_[key] = (group + [p], size + nbytes)
        for group, _ in open_.values():
            if group:
                buckets.append(_Bucket(len(buckets), group))
        return buckets

    @property
    def bucket_sizes(self) -> list[int]:
        """Elements per bucket, in launch order."""
        return [sum(b.numels) for b in self._buckets]

    # ------------------------------------------------------------------ forward / no_sync
    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside accumulate gradients locally without all-reducing them;
        the first synchronized backward after it averages the accumulated `.grad`."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ------------------------------------------------------------------ the reduction
    def _grad_ready(self, p) -> None:
        if not self.require_backward_grad_sync:
            return
        if not self._in_pass:
            self._in_pass = True
            _hooks.queue_callback(self._finish_pass)
        bucket = self._bucket_of.get(id(p))
        if bucket is None:
            return
        bucket.ready.add(id(p))
        while self._next < len(self._buckets):
            b = self._buckets[self._next]
            if len(b.ready) < len(b.params):
                break
            self._launch(b)
            self._next += 1

    def _finish_pass(self) -> None:
        """End of backward: buckets with a parameter that got no gradient this pass are
        reduced now (that parameter with zeros); then every bucket's reduction is joined and
        its slices become the parameters' gradients, and the next pass starts afresh."""
        try:
            while self._next < len(self._buckets):
                self._launch(self._buckets[self._next])
                self._next += 1
            self._join_all()
        finally:
            for b in self._buckets:
                b.ready.clear()
                b.launched = False
            self._launched.clear()
            self._next = 0
            self._in_pass = False

    def _launch(self, b: _Bucket) -> None:
        """Start averaging bucket `b`'s gradients over the ranks: one flattened, lazily
        recorded all-reduce, which on NCCL runs on a stream of its own beside the rest of
        backward (recorded after it); `_join_all` hands the results out at the end."""
        import lazyt
        with no_grad():
            parts = []
            for p, n in zip(b.params, b.numels):
                g = p.grad
                parts.append(g.reshape(-1) if g is not None else
                             lazyt.zeros(n, dtype=p.dtype, device=p.device))
            flat = parts[0] if len(parts) == 1 else lazyt.cat(parts)
            reduced = deferred.all_reduce(flat, dist.ReduceOp.AVG, overlap=True)
        self._launched.append((b, reduced, _hooks.current_gradients()))
        b.launched = True

    def _join_all(self) -> None:
        """Wait for each launched reduction (in record order: after all of backward) and give
        each parameter its slice, in `.grad` and in the pass's `Gradients`."""
        with no_grad():
            for b, reduced, grads in self._launched:
                joined = deferred.join(reduced)
                offset = 0
                for p, n in zip(b.params, b.numels):
                    avg = joined[offset:offset + n].reshape(p.shape)
                    offset += n
                    p.grad = avg
                    nid = p.device.backend.leaf_id(p.primitive)
                    if grads is not None and nid is not None:
                        grads.replace(nid, avg.primitive)

    # ------------------------------------------------------------------ checkpoints
    def save_pretrained(self, directory) -> None:
        """Rank 0 writes the wrapped module's checkpoint (`Module.save_pretrained`); every
        rank waits until it is written."""
        if dist.get_rank() == 0:
            self.module.save_pretrained(directory)
        dist.barrier()

    def extra_repr(self) -> str:
        return f"world_size={self.world_size}, buckets={len(self._buckets)}"
