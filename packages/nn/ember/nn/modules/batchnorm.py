"""torch.nn.modules.batchnorm: the BatchNorm classes (defined in ``normalization``), their lazy
forms, and SyncBatchNorm."""

from __future__ import annotations

import ember

from .lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    _LazyNormBase,  # noqa: F401  (torch.nn.modules.batchnorm's base classes)
)
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    _BatchNorm,
    _NormBase,  # noqa: F401
)

__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d",
           "LazyBatchNorm3d", "SyncBatchNorm"]

def _distributed_world(process_group):
    """The number of processes to synchronise with (1 when ember.distributed is not installed
    or not initialised)."""
    try:
        import ember.distributed as dist
    except ImportError:
        return 1, None
    if not dist.is_initialized():
        return 1, None
    return dist.get_world_size(process_group), dist


class SyncBatchNorm(_BatchNorm):
    """BatchNorm whose batch statistics are computed over all processes of ``process_group``
    while training under ``ember.distributed``; in one process it is BatchNorm (of any input
    of 2 or more dims)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        world, dist = (_distributed_world(self.process_group) if bn_training and self.training
                       else (1, None))
        if world <= 1:
            return super().forward(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                eaf = 1.0 / float(self.num_batches_tracked)
        return _sync_batch_norm(input, self, eaf, dist)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm sharing its parameters
        and running statistics."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = cls(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group,
                                bias=module.bias is not None)
            if module.affine:
                module_output.weight = module.weight
                module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output


def _all_reduce_sum(t, dist, group):
    """Sum over the processes, differentiable: the gradient of a sum over processes is the
    sum of the gradients (all_reduce again in backward)."""
    from ember.autograd import Function

    class _AllReduceSum(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.clone()
            dist.all_reduce(out, group=group)
            return out

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            dist.all_reduce(grad, group=group)
            return grad

    return _AllReduceSum.apply(t)


def _sync_batch_norm(input, bn, eaf, dist):
    """Batch norm with the per-channel sum, sum of squares and count taken over all processes;
    autograd carries the gradient through the (differentiable) all_reduce."""
    c = input.shape[1]
    dims = [0] + list(range(2, input.dim()))
    local_count = input.numel() // c
    stats = ember.cat([input.sum(dim=dims), (input * input).sum(dim=dims),
                       ember.full((1,), float(local_count), dtype=input.dtype,
                                  device=input.device)])
    stats = _all_reduce_sum(stats, dist, bn.process_group)
    total = stats[2 * c]
    mean = stats[:c] / total
    var = stats[c:2 * c] / total - mean * mean
    shape = [1, c] + [1] * (input.dim() - 2)
    out = (input - mean.reshape(shape)) * (var.reshape(shape) + bn.eps).rsqrt()
    if bn.weight is not None:
        out = out * bn.weight.reshape(shape)
    if bn.bias is not None:
        out = out + bn.bias.reshape(shape)
    if bn.track_running_stats and bn.running_mean is not None:
        with ember.no_grad():
            n = float(total.item())
            bn.running_mean.mul_(1 - eaf).add_(mean.detach() * eaf)
            unbiased = var.detach() * (n / max(n - 1.0, 1.0))
            bn.running_var.mul_(1 - eaf).add_(unbiased * eaf)
    return out
