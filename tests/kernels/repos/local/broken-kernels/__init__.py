"""Kernels that break the hub's rules, one rule each (for the error tests)."""
import lazyt
from lazyt import nn
from lazyt.kernels import WeightRenaming


class _NormLayout(nn.Module):
    conversion_mapping = [WeightRenaming("weight", "scale")]

    def __init__(self, normalized_shape, eps=1e-6, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.scale = nn.Parameter(lazyt.ones(normalized_shape, dtype=dtype, device=device))
        self.eps = eps


class _Norm(nn.Module):
    def forward(self, x):
        h = x * ((x * x).mean(-1, keepdim=True) + self.eps).rsqrt()
        return h * self.scale


class NoLayout(_Norm):
    pass


class Stateful(_Norm):
    def __init__(self):
        super().__init__()


class StatefulLayout(_NormLayout):
    pass


class BadSignature(nn.Module):
    def forward(self, hidden_states, residual):
        return hidden_states + residual


class BadSignatureLayout(_NormLayout):
    pass


class NoBackward(_Norm):
    has_backward = False


class NoBackwardLayout(_NormLayout):
    pass


class CudaOnly(_Norm):
    devices = ("cuda",)


class CudaOnlyLayout(_NormLayout):
    pass


class CudaOnlyReference(_Norm):
    devices = ("cuda",)


class CudaOnlyReferenceLayout(_NormLayout):
    """Defines its own forward: the reference the hub falls back to."""

    calls = 0

    def forward(self, x):
        type(self).calls += 1
        return _Norm.forward(self, x)


class WrongMapping(_Norm):
    pass


class WrongMappingLayout(_NormLayout):
    conversion_mapping = [WeightRenaming("weight", "gain")]


class layers:
    NoLayout = NoLayout
    Stateful = Stateful
    BadSignature = BadSignature
    NoBackward = NoBackward
    CudaOnly = CudaOnly
    CudaOnlyReference = CudaOnlyReference
    WrongMapping = WrongMapping
