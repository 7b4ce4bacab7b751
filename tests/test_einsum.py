"""torch.einsum as a composite (`lazyt/einsum.py`): values against numpy's einsum on every
device, torch's extensions (size-1 broadcasting of any subscript, summed ellipsis dims, the
sublist form), float64 gradients on cpu, errors, and torch where installed."""
import numpy as np
import pytest

import lazyt
from lazyt.testing import gradcheck

try:
    import torch
except ImportError:  # the comparisons with torch skip; the numpy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed here")

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),           # matmul
    ("ij,jk", [(2, 3), (3, 4)]),               # implicit output
    ("ij->ji", [(2, 3)]),                      # transpose
    ("ij->", [(2, 3)]),                        # sum
    ("ii->i", [(3, 3)]),                       # diagonal
    ("ii", [(3, 3)]),                          # trace
    ("iij->j", [(2, 2, 3)]),
    ("iji->j", [(2, 3, 2)]),
    ("i,i->", [(3,), (3,)]),                   # dot
    ("i,j->ij", [(2,), (3,)]),                 # outer
    ("ij,ij->ij", [(2, 3), (2, 3)]),           # elementwise
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),  # batched matmul
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]),  # broadcast batch dims
    ("...ij,jk", [(5, 2, 3), (3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 2)]),  # three operands
    ("ab,cd,ef->", [(1, 2), (2, 3), (2, 1)]),
    ("i,i,i->i", [(3,), (3,), (3,)]),
    ("Ab,bA->", [(2, 3), (3, 2)]),
    ("ba", [(2, 3)]),                          # implicit output sorts: ab
    ("ij,jk->ki", [(2, 3), (3, 4)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),    # spaces
    ("", [()]),
    (",->", [(), ()]),
    ("i->", [(0,)]),                           # empty dims
    ("ij,jk->ik", [(2, 0), (0, 3)]),
]


def _arrays(shapes, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("eq, shapes", CASES, ids=[c[0] or "scalar" for c in CASES])
def test_einsum_every_device(device, check, eq, shapes):
    arrs = _arrays(shapes)
    got = lazyt.einsum(eq, *[lazyt.tensor(a, device=device) for a in arrs])
    check(got, np.einsum(eq.replace(" ", ""), *arrs).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_einsum_forms_and_dtypes(device, check):
    a, b = _arrays([(2, 3), (3, 4)])
    ta, tb = lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)
    want = a @ b
    check(lazyt.einsum("ij,jk->ik", [ta, tb]), want, rtol=1e-5)         # operands as a list
    check(lazyt.einsum(ta, [0, 1], tb, [1, 2], [0, 2]), want, rtol=1e-5)  # sublist form
    check(lazyt.einsum(ta, [0, 1], tb, [1, 2]), want, rtol=1e-5)
    check(lazyt.einsum(ta, [Ellipsis, 1], [1, Ellipsis]), a.T)
    i = np.arange(6).reshape(2, 3)
    check(lazyt.einsum("ij,ij->i", lazyt.tensor(i, device=device),
                       lazyt.tensor(i, device=device)), (i * i).sum(1))


def test_einsum_torch_extensions(device, check):
    # size-1 dims broadcast for any subscript; ellipsis dims missing from an explicit
    # output are summed (numpy refuses both)
    a, b = _arrays([(2, 1), (3, 4)])
    ta, tb = lazyt.tensor(a, device=device), lazyt.tensor(b, device=device)
    check(lazyt.einsum("ij,jk->ik", ta, tb), a.sum(1, keepdims=True) * b.sum(0), rtol=1e-5)
    c, d = _arrays([(1, 3), (2, 1)], 1)
    check(lazyt.einsum("ij,ij->ij", lazyt.tensor(c, device=device),
                       lazyt.tensor(d, device=device)), c * d)
    (e,) = _arrays([(2, 3, 4)], 2)
    check(lazyt.einsum("...ij->ij", lazyt.tensor(e, device=device)), e.sum(0), rtol=1e-5)
    check(lazyt.einsum("ij...->j", lazyt.tensor(e, device=device)), e.sum((0, 2)), rtol=1e-5)


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("i,j->ij", [(2,), (3,)]), ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]),
    ("ijk,ikl,lm->jm", [(2, 3, 4), (2, 4, 5), (5, 2)]), ("iji->j", [(2, 3, 2)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]), ("ij,ij->", [(2, 3), (2, 3)]),
])
def test_einsum_gradients(eq, shapes):
    rng = np.random.default_rng(0)
    ts = [lazyt.tensor(rng.normal(size=s), dtype=lazyt.float64).require_grad() for s in shapes]
    assert gradcheck(lambda *xs: lazyt.einsum(eq, *xs), ts)


def test_einsum_errors():
    a, b = lazyt.ones(2, 3), lazyt.ones(3, 4)
    with pytest.raises(lazyt.InvalidArgumentError, match="more operands"):
        lazyt.einsum("ij->i", a, b)
    with pytest.raises(lazyt.InvalidArgumentError, match="fewer operands"):
        lazyt.einsum("ij,jk,kl->il", a, b)
    with pytest.raises(lazyt.InvalidArgumentError, match="invalid subscript '1'"):
        lazyt.einsum("i1,jk->ik", a, b)
    with pytest.raises(lazyt.InvalidArgumentError, match="not part of an ellipsis"):
        lazyt.einsum("i.j->i", a)
    with pytest.raises(lazyt.InvalidArgumentError, match="more than one ellipsis"):
        lazyt.einsum("...i...->i", a)
    with pytest.raises(lazyt.InvalidArgumentError, match="appears more than once"):
        lazyt.einsum("ij->ii", a)
    with pytest.raises(lazyt.InvalidArgumentError, match="does not appear"):
        lazyt.einsum("ij->k", a)
    with pytest.raises(lazyt.ShapeError, match="do not match its 2 dims"):
        lazyt.einsum("ijk->i", a)
    with pytest.raises(lazyt.ShapeError, match="more than its 2 dims"):
        lazyt.einsum("ijk...->i", a)
    with pytest.raises(lazyt.ShapeError, match="subscript j has size 3 in operand 0 and 4"):
        lazyt.einsum("ij,jk->ik", a, lazyt.ones(4, 3))
    with pytest.raises(lazyt.ShapeError, match="sizes don't match"):
        lazyt.einsum("ii->i", a)
    with pytest.raises(lazyt.InvalidArgumentError, match="at least one operand"):
        lazyt.einsum("ij")
    with pytest.raises(lazyt.DTypeError, match="operand 1 must be a lazyt.Tensor"):
        lazyt.einsum("ij,jk", a, np.ones((3, 4)))
    with pytest.raises(lazyt.InvalidArgumentError, match=r"\[0, 52\)"):
        lazyt.einsum(a, [0, 60])
    with pytest.raises(lazyt.DeviceError):
        lazyt.einsum("ij,jk", a, lazyt.ones(3, 4, device=lazyt.device("cpu", fusion=False)))


def test_exported_as_a_function_only():
    assert "einsum" in lazyt.__all__ and not hasattr(lazyt.Tensor, "einsum")


@needs_torch
@pytest.mark.parametrize("eq, shapes", CASES[:24] + [
    ("ij,jk->ik", [(2, 1), (3, 4)]), ("...ij->ij", [(2, 3, 4)]), ("ij...->j", [(2, 3, 4)]),
    ("ij,ij->ij", [(1, 3), (2, 1)])], ids=lambda v: v if isinstance(v, str) else None)
def test_against_torch(eq, shapes):
    arrs = _arrays(shapes, dtype=np.float64)
    ts = [lazyt.tensor(a).require_grad() for a in arrs]
    xs = [torch.tensor(a, requires_grad=True) for a in arrs]
    got, want = lazyt.einsum(eq, *ts), torch.einsum(eq, *xs)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(5).normal(size=want.shape)
    grads = (got * lazyt.tensor(w)).sum().backward()
    tgrads = torch.autograd.grad((want * torch.tensor(w)).sum(), xs)
    for t, g in zip(ts, tgrads):
        np.testing.assert_allclose(grads.get(t).numpy(), g.numpy(), rtol=1e-10, atol=1e-12)
