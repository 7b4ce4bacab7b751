"""A local kernel repo for the tests: a renamed RMSNorm and a fused RMSNorm + gated MLP.

Both kernels are compositions of ordinary lazyt ops (their gradients come from autodiff)."""
import lazyt
from lazyt import nn
from lazyt.kernels import Concatenate, WeightConverter, WeightRenaming


def _rms(x, scale, eps):
    h = x.float()
    h = h * ((h * h).mean(-1, keepdim=True) + eps).rsqrt()
    return (h * scale.float()).to(x.dtype)


class CustomRMSNormLayout(nn.Module):
    """Holds the norm's weight as `scale`."""

    conversion_mapping = [WeightRenaming("weight", "scale")]

    def __init__(self, normalized_shape, eps=1e-6, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.scale = nn.Parameter(lazyt.ones(normalized_shape, dtype=dtype, device=device))
        self.variance_epsilon = eps


class CustomRMSNorm(nn.Module):
    def forward(self, x):
        return _rms(x, self.scale, self.variance_epsilon)


class RMSNormMLPLayout(nn.Module):
    """post_attention_layernorm + MLP in one module, gate and up projections concatenated."""

    conversion_mapping = [
        WeightRenaming("norm.weight", "scale"),
        WeightConverter(["mlp.gate_proj.weight", "mlp.up_proj.weight"], "gate_up_proj.weight",
                        operations=[Concatenate(dim=0)]),
        WeightRenaming("mlp.down_proj.weight", "down_proj.weight"),
    ]

    def __init__(self, norm, mlp):
        super().__init__()
        self.variance_epsilon = norm.eps
        self.scale = nn.Parameter(norm.weight.detach())
        gate, up = mlp.gate_proj, mlp.up_proj
        self.gate_up_proj = nn.Linear(gate.in_features, gate.out_features + up.out_features,
                                      bias=False)
        self.down_proj = nn.Linear(mlp.down_proj.in_features, mlp.down_proj.out_features,
                                   bias=False)
        self.act_fn = mlp.act_fn


class RMSNormMLP(nn.Module):
    def forward(self, x):
        h = _rms(x, self.scale, self.variance_epsilon)
        gate, up = self.gate_up_proj(h).chunk(2, dim=-1)
        return self.down_proj(self.act_fn(gate) * up)


class RMSNormMLPCuda(RMSNormMLP):
    """The fused kernel, declared for CUDA only (elsewhere the hub falls back)."""

    devices = ("cuda",)


class RMSNormMLPCudaLayout(RMSNormMLPLayout):
    pass


class layers:
    CustomRMSNorm = CustomRMSNorm
    RMSNormMLP = RMSNormMLP
    RMSNormMLPCuda = RMSNormMLPCuda
