"""`lazyt.func`: torch.func's transforms (vmap, grad, vjp, jvp, jacrev, jacfwd, linearize) and
functional_call, against torch.func on the same inputs."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt
import lazyt.func as lf
import lazyt.nn as lnn
import lazyt.nn.functional as LF
from lazyt.errors import LazytError, MissingImplError

torch = pytest.importorskip("torch")
tf = torch.func
TF = torch.nn.functional

RNG = np.random.default_rng(0)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def tree_map(fn, tree):
    if isinstance(tree, (tuple, list)):
        return type(tree)(tree_map(fn, t) for t in tree)
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


def both(tree, device=None):
    """The numpy pytree `tree` as lazyt and as torch tensors."""
    def convert(make):
        return lambda a: make(a) if isinstance(a, (np.ndarray, np.generic)) else a

    return (tree_map(convert(lambda a: lazyt.tensor(a, device=device)), tree),
            tree_map(convert(torch.tensor), tree))


def same(got, want, atol=1e-5):
    """`got` (lazyt pytree) equals `want` (torch pytree): structure, shapes and values."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, atol)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want)
        for k in want:
            same(got[k], want[k], atol)
    elif isinstance(want, torch.Tensor):
        assert isinstance(got, lazyt.Tensor)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), atol=atol, rtol=1e-5)
    else:
        assert got == want


def raises_like_torch(torch_call, lazyt_call, match=None):
    """lazyt raises a LazytError that is also the built-in exception torch raises."""
    with pytest.raises(Exception) as want:
        torch_call()
    with pytest.raises(LazytError, match=match) as got:
        lazyt_call()
    base = next(t for t in type(want.value).__mro__ if t.__module__ == "builtins")
    assert isinstance(got.value, base), (type(got.value), type(want.value))


# ---------------------------------------------------------------------- vmap
VMAP_CASES = [
    ("elementwise", lambda x: x.sin() * 2, 0, 0, [arr(3, 4)]),
    ("reduce dim 1", lambda x: x.sum(0), 1, 0, [arr(3, 4)]),
    ("scalar per example", lambda x: (x * x).sum(), 0, 0, [arr(5, 2)]),
    ("unmapped arg", lambda x, y: x * y, (0, None), 0, [arr(3, 4), arr(4)]),
    ("different dims", lambda x, y: (x * y).sum(), (1, 0), 0, [arr(4, 3), arr(3, 4)]),
    ("negative dims", lambda x: x.exp(), -1, -1, [arr(2, 3, 4)]),
    ("out_dims 1", lambda x: x.unsqueeze(0) * x.unsqueeze(1), 0, 1, [arr(3, 4)]),
    ("out_dims -2", lambda x: x * 3, 0, -2, [arr(3, 4, 2)]),
    ("tuple outputs", lambda x: (x.sin(), x.sum()), 0, (1, 0), [arr(3, 4)]),
    ("one out_dim for all", lambda x: [x.cos(), x * 2], 0, 1, [arr(3, 4)]),
    ("dict output", lambda x: {"a": x, "b": (x.sum(), x * 2)}, 0, {"a": 1, "b": 0},
     [arr(3, 2)]),
    ("dict input", lambda d: d["w"] * d["b"], ({"w": 0, "b": None},), 0,
     [{"w": arr(3, 4), "b": arr(4)}]),
    ("tuple input, per-leaf dims", lambda p: p[0] + p[1], ((0, 1),), 0,
     [(arr(3, 4), arr(4, 3))]),
    ("int broadcast to a list", lambda p, s: (p[0] * p[1]) * s, (0, None), 0,
     [[arr(2, 3), arr(2, 3)], 2.0]),
    ("control flow on shapes", lambda x: x[: x.shape[0] // 2] if x.shape[0] > 2 else x, 1, 0,
     [arr(6, 3)]),
    ("batch of zero", lambda x: x.sum(0), 0, 1, [arr(0, 4, 2)]),
    ("returns a closure tensor unbatched", None, 0, (0, None), [arr(3, 2)]),
]


@pytest.mark.parametrize("case", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_matches_torch(case, device):
    name, fn, in_dims, out_dims, args = case
    lw, tw = both(arr(2), device)
    if fn is None:
        def make(w):
            return lambda x: (x * w, w * 2)
        lfn, tfn = make(lw), make(tw)
    else:
        lfn = tfn = fn
    largs, targs = both(args, device)
    want = tf.vmap(tfn, in_dims=in_dims, out_dims=out_dims)(*targs)
    got = lf.vmap(lfn, in_dims=in_dims, out_dims=out_dims)(*largs)
    same(got, want)


def test_vmap_kwargs_are_not_mapped_and_chunk_size_changes_nothing(device):
    (lx, ls), (tx, ts) = both((arr(3, 4), arr(4)), device)

    def f(x, scale=None):
        return x * scale

    same(lf.vmap(f, chunk_size=2)(lx, scale=ls), tf.vmap(f, chunk_size=2)(tx, scale=ts))


def test_nested_vmap_and_vmap_of_a_library_function(device):
    (la, lb), (ta, tb) = both((arr(3, 5), arr(4, 5)), device)

    def dot(x, y):
        return (x * y).sum()

    want = tf.vmap(tf.vmap(dot, in_dims=(None, 0)), in_dims=(0, None))(ta, tb)
    got = lf.vmap(lf.vmap(dot, in_dims=(None, 0)), in_dims=(0, None))(la, lb)
    same(got, want)
    same(lf.vmap(lazyt.outer)(la, la), tf.vmap(torch.outer)(ta, ta))
    assert lf.vmap(dot).__name__ == "dot"


def test_vmap_is_differentiable_through_lazyt_autograd():
    x = lazyt.tensor(arr(3, 4)).requires_grad_()
    tx = torch.tensor(x.numpy()).requires_grad_()
    lf.vmap(lambda r: (r.sin() * r).sum())(x).sum().backward()
    tf.vmap(lambda r: (r.sin() * r).sum())(tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)


VMAP_ERRORS = [
    ("in_dims list", lambda x: x, dict(in_dims=[0]), [arr(3)]),
    ("in_dims float", lambda x: x, dict(in_dims=1.0), [arr(3)]),
    ("in_dim float leaf", lambda x: x, dict(in_dims=(1.0,)), [arr(3)]),
    ("in_dim too large", lambda x: x, dict(in_dims=2), [arr(3, 4)]),
    ("in_dim on 0-d", lambda x: x, dict(in_dims=0), [np.float32(1.0) * np.ones((), np.float32)]),
    ("in_dim on non-tensor", lambda x, y: x, dict(in_dims=0), [arr(3), 2.0]),
    ("in_dim on None", lambda x, y: x, dict(in_dims=0), [arr(3), None]),
    ("wrong structure", lambda x: x[0], dict(in_dims=([0],)), [(arr(3),)]),
    ("sizes differ", lambda x, y: x, dict(in_dims=(0, 0)), [arr(3, 4), arr(4)]),
    ("nothing mapped", lambda x: x, dict(in_dims=(None,)), [arr(3)]),
    ("no inputs", lambda: 1, dict(), []),
    ("non-tensor output", lambda x: 3, dict(), [arr(3)]),
    ("None output", lambda x: None, dict(), [arr(3)]),
    ("out_dims float", lambda x: x, dict(out_dims=1.5), [arr(3)]),
    ("out_dims structure", lambda x: (x,), dict(out_dims=[0]), [arr(3)]),
    ("out_dim out of range", lambda x: x, dict(out_dims=3), [arr(3, 4)]),
    ("out_dim -3", lambda x: x, dict(out_dims=-3), [arr(3, 4)]),
    ("batched output with out_dims None", lambda x: x * 2, dict(out_dims=None), [arr(3, 4)]),
]


@pytest.mark.parametrize("case", VMAP_ERRORS, ids=[c[0] for c in VMAP_ERRORS])
def test_vmap_errors_as_torch(case):
    _, fn, kw, args = case
    largs, targs = both(args)
    raises_like_torch(lambda: tf.vmap(fn, **kw)(*targs), lambda: lf.vmap(fn, **kw)(*largs))


def test_vmap_argument_checks():
    raises_like_torch(lambda: tf.vmap(lambda x: x, randomness="x"),
                      lambda: lf.vmap(lambda x: x, randomness="x"), match="randomness")
    raises_like_torch(lambda: tf.vmap(lambda x: x, chunk_size=0),
                      lambda: lf.vmap(lambda x: x, chunk_size=0), match="chunk_size")
    x = lazyt.tensor(arr(4, 3))
    with pytest.raises(lazyt.ShapeError, match="shape must not depend on the data"):
        lf.vmap(lambda r: r[: int((r > 0).sum().item())])(x * 0 + lazyt.tensor(
            np.array([[1, 1, 1], [1, -1, 1], [1, 1, 1], [1, 1, 1]], np.float32)))


def test_vmap_randomness():
    x = lazyt.zeros(4, 3)
    with pytest.raises(lazyt.InvalidArgumentError, match="randomness='error'"):
        lf.vmap(lambda r: r + lazyt.rand(3))(x)
    with pytest.raises(RuntimeError):                 # what torch raises for the same call
        tf.vmap(lambda r: r + torch.rand(3))(torch.zeros(4, 3))
    lazyt.manual_seed(3)
    once = lazyt.rand(3).numpy()
    after_one = lazyt.rand(3).numpy()
    lazyt.manual_seed(3)
    got = lf.vmap(lambda r: r + lazyt.rand(3), randomness="same")(x).numpy()
    np.testing.assert_array_equal(got, np.stack([once] * 4))
    np.testing.assert_array_equal(lazyt.rand(3).numpy(), after_one)   # drew once, as torch
    got = lf.vmap(lambda r: r + lazyt.rand(3), randomness="different")(x).numpy()
    assert len({tuple(row) for row in got}) == 4
    dropped = lf.vmap(lambda r: LF.dropout(r + 1, 0.5), randomness="same")(lazyt.zeros(5, 64))
    rows = dropped.numpy()
    assert (rows == rows[0]).all() and 0 < (rows[0] == 0).sum() < 64


def test_vmap_is_exported_at_top_level():
    assert getattr(lazyt, "vmap", lf.vmap) is lf.vmap


# ---------------------------------------------------------------------- grad
def f_xy(x, y):
    return (x.sin() * y).sum() + (x * x).sum()


@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1,)])
def test_grad_and_value_argnums(argnums, device):
    (lx, ly), (tx, ty) = both((arr(3), arr(3)), device)
    same(lf.grad(f_xy, argnums=argnums)(lx, ly), tf.grad(f_xy, argnums=argnums)(tx, ty))
    same(lf.grad_and_value(f_xy, argnums=argnums)(lx, ly),
         tf.grad_and_value(f_xy, argnums=argnums)(tx, ty))


def test_grad_pytrees_aux_kwargs_and_unused_inputs(device):
    def f(p, x, *, scale):
        out = ((p["w"] @ x + p["b"][0]).tanh() * scale).sum()
        return out, {"out": out * 2, "x": [x]}

    p = {"w": arr(2, 3), "b": [arr(2), arr(5)]}            # b[1] is unused: zeros
    (lp, lx), (tp, tx) = both((p, arr(3)), device)
    same(lf.grad(f, has_aux=True)(lp, lx, scale=2.0), tf.grad(f, has_aux=True)(tp, tx, scale=2.0))
    same(lf.grad_and_value(f, argnums=(0, 1), has_aux=True)(lp, lx, scale=0.5),
         tf.grad_and_value(f, argnums=(0, 1), has_aux=True)(tp, tx, scale=0.5))
    same(lf.grad(lambda a, b: (b * 2).sum())(lx, lx), tf.grad(lambda a, b: (b * 2).sum())(tx, tx))
    same(lf.grad(lambda a: lazyt.tensor(1.0))(lx), tf.grad(lambda a: torch.tensor(1.0))(tx))


def test_grad_leaves_the_callers_tensors_alone():
    x = lazyt.tensor(arr(3))
    w = lazyt.tensor(arr(3)).requires_grad_()
    g = lf.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, w)
    assert not x.requires_grad and w.requires_grad and w.grad is None
    assert not g[0].requires_grad
    np.testing.assert_allclose(g[0].numpy(), w.numpy())
    model = lnn.Linear(3, 2)
    gm = lf.grad(lambda p: lf.functional_call(model, p, (x,)).sum())(dict(model.named_parameters()))
    assert model.weight.grad is None and set(gm) == {"weight", "bias"}


GRAD_ERRORS = [
    ("vector output", lambda x: x * 2, dict(), None),
    ("non-tensor output", lambda x: 3.0, dict(), None),
    ("aux not a pair", lambda x: x.sum(), dict(has_aux=True), None),
    ("argnums out of range", lambda x: x.sum(), dict(argnums=1), None),
    ("argnums repeated", lambda x: x.sum(), dict(argnums=(0, 0)), None),
    ("argnums empty", lambda x: x.sum(), dict(argnums=()), None),
    ("argnums float", lambda x: x.sum(), dict(argnums=0.0), None),
    ("non-tensor argument", lambda x: 1.0 * x, dict(), 2.0),
]


@pytest.mark.parametrize("case", GRAD_ERRORS, ids=[c[0] for c in GRAD_ERRORS])
def test_grad_errors_as_torch(case):
    _, fn, kw, arg = case
    lx, tx = both(arr(3) if arg is None else arg)
    raises_like_torch(lambda: tf.grad(fn, **kw)(tx), lambda: lf.grad(fn, **kw)(lx))


def test_int_tensors_cannot_be_differentiated():
    with pytest.raises(lazyt.DTypeError, match="floating-point"):
        lf.grad(lambda x: x.sum())(lazyt.tensor([1, 2]))


# ---------------------------------------------------------------------- vjp, jvp
def test_vjp_pytree_outputs_and_repeated_calls(device):
    def f(x, y):
        return {"s": (x * y).sin(), "t": (x.exp(), y.sum())}

    (lx, ly), (tx, ty) = both((arr(2, 3), arr(2, 3)), device)
    lo, lfn = lf.vjp(f, lx, ly)
    to, tfn = tf.vjp(f, tx, ty)
    same(lo, to)
    cots = {"s": arr(2, 3), "t": (arr(2, 3), np.full((), 2.0, np.float32))}
    lc, tc = both(cots, device)
    same(lfn(lc), tfn(tc))
    lc2, tc2 = both(tree_map(lambda a: a * 3 + 1, cots), device)
    same(lfn(lc2), tfn(tc2))          # a second call runs the forward again
    same(lfn(lc), tfn(tc))


def test_vjp_has_aux_unused_primal_and_errors():
    (lx, ly), (tx, ty) = both((arr(3), arr(3)))
    f = lambda x, y: (x.sin(), {"aux": x * 2})  # noqa: E731
    lo, lfn, la = lf.vjp(f, lx, ly, has_aux=True)
    to, tfn, ta = tf.vjp(f, tx, ty, has_aux=True)
    same((lo, la), (to, ta))
    (lv,), (tv,) = both((arr(3),))
    same(lfn(lv), tfn(tv))
    _, lfn = lf.vjp(lambda x: x * 2, lx)
    _, tfn = tf.vjp(lambda x: x * 2, tx)
    raises_like_torch(lambda: tfn(torch.ones(4)), lambda: lfn(lazyt.ones(4)), match="shape")
    raises_like_torch(lambda: tfn((torch.ones(3),)), lambda: lfn((lazyt.ones(3),)),
                      match="structure")
    raises_like_torch(lambda: tf.vjp(lambda x: x * 2, 3.0), lambda: lf.vjp(lambda x: x * 2, 3.0))
    with pytest.raises(MissingImplError):
        lfn(lazyt.ones(3), create_graph=True)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")  # torch's linearize
def test_jvp_and_linearize(device):
    def f(x, y):
        return (x.sin() * y, (x @ y.unsqueeze(-1)).sum())

    p, t = (arr(3), arr(3)), (arr(3), arr(3))
    (lp, lt), (tp, tt) = both((p, t), device)
    same(lf.jvp(f, lp, lt), tf.jvp(f, tp, tt))
    g = lambda x: ((x * x).sum(), x.cos())  # noqa: E731
    same(lf.jvp(g, lp[:1], lt[:1], has_aux=True), tf.jvp(g, tp[:1], tt[:1], has_aux=True))
    lo, ljvp = lf.linearize(f, *lp)
    to, tjvp = tf.linearize(f, *tp)
    same(lo, to)
    same(ljvp(*lt), tjvp(*tt))
    same(ljvp(*lp), tjvp(*tp))


def test_jvp_errors_as_torch():
    (lx,), (tx,) = both((arr(3),))
    f = lambda x: x * 2  # noqa: E731
    raises_like_torch(lambda: tf.jvp(f, tx, tx), lambda: lf.jvp(f, lx, lx), match="tuple")
    raises_like_torch(lambda: tf.jvp(f, (tx,), (tx, tx)), lambda: lf.jvp(f, (lx,), (lx, lx)),
                      match="structure")
    raises_like_torch(lambda: tf.jvp(f, (tx,), (torch.ones(4),)),
                      lambda: lf.jvp(f, (lx,), (lazyt.ones(4),)), match="shape")


# ---------------------------------------------------------------------- Jacobians
JAC_CASES = [
    ("vector to vector", lambda x: x.sin() * x.sum(), 0, [arr(4)]),
    ("matrix to scalar", lambda x: (x * x).sum(), 0, [arr(2, 3)]),
    ("two args, argnums tuple", lambda x, y: x * y.sum(), (0, 1), [arr(3), arr(2)]),
    ("second arg", lambda x, y: (x @ y).tanh(), 1, [arr(2, 3), arr(3, 2)]),
    ("pytree in, tuple out", lambda p: (p["a"] * 2, p["b"].exp()), 0,
     [{"a": arr(2), "b": arr(3)}]),
    ("unused input", lambda x, y: x * 2, (0, 1), [arr(2), arr(3)]),
]


@pytest.mark.parametrize("kind", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("case", JAC_CASES, ids=[c[0] for c in JAC_CASES])
def test_jacobians_match_torch(case, kind, device):
    _, fn, argnums, args = case
    largs, targs = both(args, device)
    same(getattr(lf, kind)(fn, argnums=argnums)(*largs),
         getattr(tf, kind)(fn, argnums=argnums)(*targs))


def test_jacobian_has_aux_and_chunk_size():
    (lx,), (tx,) = both((arr(3),))
    f = lambda x: (x.sin(), x.sum())  # noqa: E731
    same(lf.jacrev(f, has_aux=True, chunk_size=1)(lx), tf.jacrev(f, has_aux=True, chunk_size=1)(tx))
    same(lf.jacfwd(f, has_aux=True)(lx), tf.jacfwd(f, has_aux=True)(tx))
    raises_like_torch(lambda: tf.jacrev(f, chunk_size=0), lambda: lf.jacrev(f, chunk_size=0))
    with pytest.raises(lazyt.InvalidArgumentError, match="randomness"):
        lf.jacfwd(lambda x: x * lazyt.rand(3))(lx)
    lazyt.manual_seed(0)
    j = lf.jacrev(lambda x: x * lazyt.rand(3))(lx).numpy()     # each row replays the draw
    np.testing.assert_allclose(np.diag(np.diag(j)), j)


def test_second_order_is_refused_not_silently_zero():
    x = lazyt.tensor(arr(3))
    f = lambda x: (x ** 3).sum()  # noqa: E731
    with pytest.raises(MissingImplError, match="gradients of gradients"):
        lf.hessian(f)
    with pytest.raises(MissingImplError, match="gradients of gradients"):
        lf.grad(lambda x: lf.grad(f)(x).sum())(x)
    with pytest.raises(MissingImplError, match="gradients of gradients"):
        lf.jacrev(lf.jacrev(f))(x)
    with pytest.raises(MissingImplError, match="gradients of gradients"):
        lf.grad(lambda w: lf.grad(lambda y: (w * y).sum())(x).sum())(x)       # via a closure
    with pytest.raises(MissingImplError):
        lf.jacfwd(lf.vmap(lf.grad(f)))(x.reshape(1, 3))
    _, vjp_fn = lf.vjp(lambda x: x.sin(), x)
    with pytest.raises(MissingImplError, match="gradients of gradients"):
        lf.grad(lambda u: vjp_fn(u)[0].sum())(x)
    # a transform inside another one, independent of its arguments, is fine; so is a jvp
    # differentiated w.r.t. its tangents (J v is linear in v)
    tx = torch.tensor(x.numpy())
    same(lf.grad(lambda v: lf.jvp(lambda p: p.sin() * p, (x,), (v,))[1].sum())(x),
         tf.grad(lambda v: tf.jvp(lambda p: p.sin() * p, (tx,), (v,))[1].sum())(tx))
    got = lf.grad(lambda w: (w * lf.grad(f)(lazyt.ones(3))).sum())(x)
    np.testing.assert_allclose(got.numpy(), [3.0, 3.0, 3.0])


# ---------------------------------------------------------------------- functional_call
def pair_of_models():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Tanh(),
                             torch.nn.Linear(6, 3))
    lm = lnn.Sequential(lnn.Linear(4, 6), lnn.BatchNorm1d(6), lnn.Tanh(), lnn.Linear(6, 3))
    lm.load_state_dict({k: lazyt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    tm.eval()
    lm.eval()
    return lm, tm


def test_functional_call_parameters_and_buffers():
    lm, tm = pair_of_models()
    state = {"0.weight": arr(6, 4), "3.bias": arr(3), "1.running_mean": arr(6),
             "1.running_var": np.abs(arr(6)) + 0.5}
    (ls, lx), (ts, tx) = both((state, arr(5, 4)))
    before = lm.state_dict()
    same(lf.functional_call(lm, ls, (lx,)), tf.functional_call(tm, ts, (tx,)))
    same(lf.functional_call(lm, ls, lx), tf.functional_call(tm, ts, tx))     # args not a tuple
    params = {k: v for k, v in ls.items() if "running" not in k}
    buffers = {k: v for k, v in ls.items() if "running" in k}
    same(lf.functional_call(lm, (params, buffers), (lx,)), tf.functional_call(tm, ts, (tx,)))
    after = lm.state_dict()
    assert all(after[k] is not None and np.array_equal(after[k].numpy(), before[k].numpy())
               for k in before)
    assert lm[0].weight is lm.get_parameter("0.weight") and isinstance(lm[0].weight,
                                                                      lnn.Parameter)


def test_functional_call_kwargs_strict_and_restore_on_error():
    class Scale(lnn.Module):
        def __init__(self):
            super().__init__()
            self.w = lnn.Parameter(lazyt.ones(2))
            self.register_buffer("b", lazyt.zeros(2))

        def forward(self, x, shift=0.0):
            return x * self.w + self.b + shift

    m = Scale()
    x = lazyt.tensor([1.0, 2.0])
    got = lf.functional_call(m, {"w": lazyt.tensor([2.0, 3.0])}, (x,), {"shift": 1.0})
    np.testing.assert_allclose(got.numpy(), [3.0, 7.0])
    with pytest.raises(lazyt.InvalidArgumentError, match=r"Missing key\(s\): 'b'"):
        lf.functional_call(m, {"w": lazyt.ones(2)}, (x,), strict=True)
    with pytest.raises(lazyt.InvalidArgumentError, match=r"Unexpected key\(s\): 'c'"):
        lf.functional_call(m, {"w": x, "b": x, "c": x}, (x,), strict=True)
    with pytest.raises(RuntimeError):                 # torch raises RuntimeError for both
        tf.functional_call(torch.nn.Linear(2, 2), {"weight": torch.ones(2, 2)}, (torch.ones(2),),
                           strict=True)
    out = lf.functional_call(m, {"w": x, "extra": x}, (x,))       # not strict: extra is set
    np.testing.assert_allclose(out.numpy(), [1.0, 4.0])
    assert not hasattr(m, "extra")
    with pytest.raises(LazytError):
        lf.functional_call(m, {"w": lazyt.ones(3)}, (x,))         # the forward fails ...
    np.testing.assert_array_equal(m.w.numpy(), [1.0, 1.0])          # ... and w is restored
    assert isinstance(m.w, lnn.Parameter)
    with pytest.raises(lazyt.InvalidArgumentError, match="ambiguous"):
        lf.functional_call(m, ({"w": x}, {"w": x}), (x,))
    with pytest.raises(lazyt.InvalidArgumentError, match="dict"):
        lf.functional_call(m, [x], (x,))


def test_functional_call_tied_weights():
    class Tied(lnn.Module):
        def __init__(self, mod):
            super().__init__()
            self.a = mod.Linear(2, 2, bias=False)
            self.b = mod.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    class TTied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(2, 2, bias=False)
            self.b = torch.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    lm, tm = Tied(lnn), TTied()
    lm.a.weight = lnn.Parameter(lazyt.tensor(tm.a.weight.detach().numpy()))
    lm.b.weight = lm.a.weight
    (lw, lw2, lx), (tw, tw2, tx) = both((arr(2, 2), arr(2, 2), arr(2)))
    same(lf.functional_call(lm, {"a.weight": lw}, (lx,)), tf.functional_call(tm, {"a.weight": tw},
                                                                             (tx,)))
    same(lf.functional_call(lm, {"a.weight": lw}, (lx,), tie_weights=False),
         tf.functional_call(tm, {"a.weight": tw}, (tx,), tie_weights=False))
    raises_like_torch(lambda: tf.functional_call(tm, {"a.weight": tw, "b.weight": tw2}, (tx,)),
                      lambda: lf.functional_call(lm, {"a.weight": lw, "b.weight": lw2}, (lx,)),
                      match="tied")


# ---------------------------------------------------------------------- recipes
def test_per_sample_gradients_recipe_on_an_mlp():
    torch.manual_seed(1)
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    lm = lnn.Sequential(lnn.Linear(5, 8), lnn.ReLU(), lnn.Linear(8, 3))
    lm.load_state_dict({k: lazyt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    data, targets = arr(6, 5), RNG.integers(0, 3, 6)

    def make_loss(call, model, ce):
        def compute_loss(params, buffers, sample, target):
            predictions = call(model, (params, buffers), (sample.unsqueeze(0),))
            return ce(predictions, target.unsqueeze(0))
        return compute_loss

    tloss = make_loss(tf.functional_call, tm, TF.cross_entropy)
    lloss = make_loss(lf.functional_call, lm, LF.cross_entropy)
    tp = {k: v.detach() for k, v in tm.named_parameters()}
    lp = {k: v.detach() for k, v in lm.named_parameters()}
    want = tf.vmap(tf.grad(tloss), in_dims=(None, None, 0, 0))(
        tp, {}, torch.tensor(data), torch.tensor(targets))
    got = lf.vmap(lf.grad(lloss), in_dims=(None, None, 0, 0))(
        lp, {}, lazyt.tensor(data), lazyt.tensor(targets))
    same(got, want)
    # the per-sample gradients average to the batch gradient
    LF.cross_entropy(lm(lazyt.tensor(data)), lazyt.tensor(targets)).backward()
    np.testing.assert_allclose(got["0.weight"].numpy().mean(0), lm[0].weight.grad.numpy(),
                               atol=1e-6)


def test_model_ensembling_with_stack_module_state():
    torch.manual_seed(2)
    tms = [torch.nn.Linear(3, 2) for _ in range(4)]
    lms = [lnn.Linear(3, 2) for _ in range(4)]
    for lmod, tmod in zip(lms, tms):
        lmod.load_state_dict({k: lazyt.tensor(v.detach().numpy())
                              for k, v in tmod.state_dict().items()})
    lparams, lbuffers = lf.stack_module_state(lms)
    tparams, tbuffers = tf.stack_module_state(tms)
    same(lparams, tparams)
    assert lparams["weight"].requires_grad and lparams["weight"].is_leaf
    (lx,), (tx,) = both((arr(5, 3),))
    lbase, tbase = lnn.Linear(3, 2), tms[0]

    def make(call, base):
        return lambda p, b, x: call(base, (p, b), (x,))

    want = tf.vmap(make(tf.functional_call, tbase), in_dims=(0, 0, None))(tparams, tbuffers, tx)
    got = lf.vmap(make(lf.functional_call, lbase), in_dims=(0, 0, None))(lparams, lbuffers, lx)
    same(got, want)
    with pytest.raises(lazyt.InvalidArgumentError, match="same class"):
        lf.stack_module_state([lnn.Linear(3, 2), lnn.Tanh()])
