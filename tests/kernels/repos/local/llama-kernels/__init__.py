"""A local kernel repo for the tests: a renamed RMSNorm and a fused RMSNorm + gated MLP.

`CustomRMSNorm` is a composition of ordinary lazyt ops (autodiff differentiates it).
`RMSNormMLP` calls one backend extension op, `rms_norm_mlp`, with a numpy impl and a
handwritten Autodiff backward; Fusion records it as one opaque custom op. It declares
`devices = ("cpu",)`, so on other devices the hub falls back to the original modules."""
import math

import numpy as np

import lazyt
from lazyt import Dispatch, Tensor, nn
from lazyt.autodiff import Backward, Tracked, UnTracked
from lazyt.backends import Autodiff, Fusion, Numpy
from lazyt.extension import backend_extension, fusion
from lazyt.kernels import Concatenate, WeightConverter, WeightRenaming
from lazyt.ops import BinaryOp, ReduceOp, UnaryOp


def _rms(x, scale, eps):
    h = x.float()
    h = h * ((h * h).mean(-1, keepdim=True) + eps).rsqrt()
    return (h * scale.float()).to(x.dtype)


# ---------------------------------------------------------------------- the extension op
def rms_norm_mlp_shape(x: tuple, scale: tuple, gate_up_weight: tuple, down_weight: tuple,
                       eps) -> tuple:
    """The output shape of the fused op (x's); raises on shapes the kernel cannot take."""
    if len(x) < 1:
        raise ValueError(f"x needs a feature dim, got shape {x}")
    hidden = x[-1]
    if tuple(scale) != (hidden,):
        raise ValueError(f"scale must have shape ({hidden},), got {tuple(scale)}")
    if len(gate_up_weight) != 2 or gate_up_weight[1] != hidden or gate_up_weight[0] % 2:
        raise ValueError(f"gate_up_weight must be (2 * intermediate, {hidden}), got "
                         f"{tuple(gate_up_weight)}")
    inter = gate_up_weight[0] // 2
    if tuple(down_weight) != (hidden, inter):
        raise ValueError(f"down_weight must be ({hidden}, {inter}), got {tuple(down_weight)}")
    return tuple(x)


@backend_extension(Autodiff, Numpy, Fusion)
class RMSNormMLPBackend(lazyt.Backend):
    """`down(silu(gate(n)) * up(n))` with `n = rmsnorm(x) * scale`, in one op."""

    @fusion(dtype="x", shape=rms_norm_mlp_shape)
    def rms_norm_mlp(x, scale, gate_up_weight, down_weight, eps):
        """The RMSNorm (float32 math for float16 x, like nn.RMSNorm) and the gated SiLU MLP."""


def _np_sigmoid(g: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(g))  # never overflows
    return np.where(g >= 0, 1 / (1 + e), e / (1 + e)).astype(g.dtype, copy=False)


@RMSNormMLPBackend.implement(Numpy)
def rms_norm_mlp(x, scale, gate_up_weight, down_weight, eps):
    compute = np.float32 if x.dtype == np.float16 else x.dtype
    h = x.astype(compute, copy=False)
    h = h / np.sqrt((h * h).mean(-1, keepdims=True) + np.asarray(eps, compute))
    h = (h * scale.astype(compute, copy=False)).astype(x.dtype, copy=False)
    gate_up = h @ gate_up_weight.T
    inter = gate_up_weight.shape[0] // 2
    gate, up = gate_up[..., :inter], gate_up[..., inter:]
    return ((gate * _np_sigmoid(gate) * up) @ down_weight.T).astype(x.dtype, copy=False)


class RMSNormMLPBackward(Backward, n_parents=4):
    """Gradients of x, scale, gate_up_weight and down_weight, recomputing the forward's
    intermediates from the checkpointed inputs (all math in the compute dtype)."""

    def backward(self, ops, grads, checkpointer):
        node_x, node_scale, node_gu, node_down = ops.parents
        grad = grads.consume(ops.node)
        *states, eps = ops.state
        B = ops.backend
        x, scale, w_gu, w_down = (checkpointer.retrieve_node_output(s) for s in states)
        dtypes = [B.dtype_of(t) for t in (x, scale, w_gu, w_down)]
        compute = lazyt.float32 if dtypes[0] is lazyt.float16 else dtypes[0]

        def c(t):
            return t if B.dtype_of(t) is compute else B.cast(t, compute)

        def back(t, dtype):
            return t if dtype is compute else B.cast(t, dtype)

        mul, add, sub = (lambda a, b: B.binary(BinaryOp.MUL, a, b),
                         lambda a, b: B.binary(BinaryOp.ADD, a, b),
                         lambda a, b: B.binary(BinaryOp.SUB, a, b))
        shape_x = B.shape_of(x)
        hidden = shape_x[-1]
        rows = math.prod(shape_x[:-1])
        inter = B.shape_of(w_gu)[0] // 2
        x2 = c(B.reshape(x, (rows, hidden)))
        dy = c(B.reshape(grad, (rows, hidden)))
        scale, w_gu, w_down = c(scale), c(w_gu), c(w_down)
        # forward recomputed: r = rsqrt(mean(x^2) + eps), n = x r, h = n scale
        r = B.unary(UnaryOp.RSQRT, add(B.reduce(ReduceOp.MEAN, mul(x2, x2), (1,), True), eps))
        n = mul(x2, r)
        h = mul(n, scale)
        gate_up = B.float_matmul(h, B.float_transpose(w_gu))
        gate = B.slice(gate_up, ((0, rows, 1), (0, inter, 1)))
        up = B.slice(gate_up, ((0, rows, 1), (inter, 2 * inter, 1)))
        sig = B.unary(UnaryOp.SIGMOID, gate)
        act = mul(gate, sig)
        # y = (act * up) @ w_down^T
        if node_down is not None:
            g_down = B.float_matmul(B.float_transpose(dy), mul(act, up))
            grads.register(node_down, back(g_down, dtypes[3]))
        d_m = B.float_matmul(dy, w_down)
        d_up = mul(d_m, act)
        # silu'(g) = s (1 + g (1 - s))
        d_gate = mul(mul(d_m, up), mul(sig, add(1.0, mul(gate, sub(1.0, sig)))))
        d_gate_up = B.cat([d_gate, d_up], 1)
        if node_gu is not None:
            g_gu = B.float_matmul(B.float_transpose(d_gate_up), h)
            grads.register(node_gu, back(g_gu, dtypes[2]))
        d_h = B.float_matmul(d_gate_up, w_gu)
        if node_scale is not None:
            g_scale = B.reduce(ReduceOp.SUM, mul(d_h, n), (0,), False)
            grads.register(node_scale, back(g_scale, dtypes[1]))
        if node_x is not None:
            # dx = r (dn - n mean(dn n)), dn = dh scale
            d_n = mul(d_h, scale)
            proj = B.reduce(ReduceOp.MEAN, mul(d_n, n), (1,), True)
            d_x = mul(r, sub(d_n, mul(n, proj)))
            grads.register(node_x, back(B.reshape(d_x, shape_x), dtypes[0]))


@RMSNormMLPBackend.implement(Autodiff, name="rms_norm_mlp")
def rms_norm_mlp_autodiff(B, ckpt, x, scale, gate_up_weight, down_weight, eps):
    inputs = (x, scale, gate_up_weight, down_weight)
    prep = RMSNormMLPBackward().prepare(ckpt, [t.node for t in inputs])
    prims = [t.primitive for t in inputs]
    match prep.compute_bound().stateful():
        case Tracked(prep):
            # inputs checkpointed; the backward recomputes the cheap intermediates and the
            # gate/up matmul rather than keeping (rows, 2 * intermediate) values alive
            states = tuple(prep.checkpoint(t) for t in inputs)
            return prep.finish((*states, eps), B.rms_norm_mlp(*prims, eps))
        case UnTracked(prep):
            return prep.finish(B.rms_norm_mlp(*prims, eps))


def rms_norm_mlp_op(x: Tensor, scale: Tensor, gate_up_weight: Tensor, down_weight: Tensor,
                    eps: float) -> Tensor:
    """Tensor-level entry of the extension op."""
    return Tensor.from_dispatch(Dispatch.rms_norm_mlp(
        x.into_dispatch(), scale.into_dispatch(), gate_up_weight.into_dispatch(),
        down_weight.into_dispatch(), float(eps)))


def rms_norm_mlp_reference(x, scale, gate_up_weight, down_weight, eps):
    """The same computation from ordinary ops (what the unfused modules do)."""
    h = _rms(x, scale, eps)
    gate, up = h.matmul(gate_up_weight.mT).chunk(2, dim=-1)
    return (gate.silu() * up).matmul(down_weight.mT)


# ---------------------------------------------------------------------- the kernels
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
    """The fused kernel: one `rms_norm_mlp` extension op (numpy impl; elsewhere: fallback)."""

    devices = ("cpu",)

    def forward(self, x):
        return rms_norm_mlp_op(x, self.scale, self.gate_up_proj.weight, self.down_proj.weight,
                               self.variance_epsilon)


class RMSNormMLPCuda(RMSNormMLP):
    """The fused kernel, declared for CUDA only (elsewhere the hub falls back)."""

    devices = ("cuda",)


class RMSNormMLPCudaLayout(RMSNormMLPLayout):
    pass


class layers:
    CustomRMSNorm = CustomRMSNorm
    RMSNormMLP = RMSNormMLP
    RMSNormMLPCuda = RMSNormMLPCuda
