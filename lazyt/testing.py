"""Testing helpers: `gradcheck` (analytic gradients against float64 finite differences) and
`assert_close` (tensors or arrays against a reference)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .device import device as _make_device
from .autodiff import no_grad
from .creation import tensor as _tensor
from .dispatch import Dispatch, DispatchTensor
from .errors import DeviceError
from .extension import checking_meta, op_of
from .tensor import Tensor

__all__ = ["ExtensionCheckError", "GradcheckError", "assert_close", "check_extension", "gradcheck"]

# Tolerances for gradients computed in a dtype narrower than float64 (the finite differences
# are always float64): a float32 gradient cannot match to 1e-5.
_NARROW_TOL = {"float32": (1e-3, 1e-2), "float16": (2e-2, 5e-2)}


class GradcheckError(AssertionError):
    """An analytic gradient differs from its finite-difference estimate."""


def _to_numpy(x) -> np.ndarray:
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def assert_close(actual, expected, *, atol: float | None = None, rtol: float | None = None,
                 msg: str = "") -> None:
    """Values, shape (and for two tensors, dtype) of `actual` equal `expected` within tolerances
    (`|a - e| <= atol + rtol * |e|`, NaNs equal). Tensors or array-likes on either side; the
    default tolerances follow the dtype of `actual`."""
    if isinstance(actual, Tensor) and isinstance(expected, Tensor) \
            and actual.dtype != expected.dtype:
        raise AssertionError(f"assert_close: dtype {actual.dtype.name} != {expected.dtype.name}"
                             + (f" ({msg})" if msg else ""))
    a, e = _to_numpy(actual), _to_numpy(expected)
    if a.shape != e.shape:
        raise AssertionError(f"assert_close: shape {a.shape} != expected {e.shape}"
                             + (f" ({msg})" if msg else ""))
    if a.dtype.kind in "biu" and e.dtype.kind in "biu" and atol is None and rtol is None:
        np.testing.assert_array_equal(a, e, err_msg=msg)
        return
    default = {np.dtype(np.float16): (1e-3, 1e-3), np.dtype(np.float32): (1e-6, 1e-5)}
    d_atol, d_rtol = default.get(a.dtype, (1e-10, 1e-7))
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), equal_nan=True,
                               atol=d_atol if atol is None else atol,
                               rtol=d_rtol if rtol is None else rtol, err_msg=msg)


def _host_tensor(arr: np.ndarray, device):
    """`lazyt.tensor(arr)` keeping 0-d shapes."""
    t = _tensor(arr, device=device)
    return t if t.shape == arr.shape else t.reshape(arr.shape)


def _outputs(out) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, Tensor) for o in out):
        return list(out)
    raise TypeError(f"gradcheck: fn must return a Tensor or a sequence of Tensors, got "
                    f"{type(out).__name__}")


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3, *, seed: int = 0) -> bool:
    """Check the gradients of `fn(*inputs)` for every input that requires grad.

    The analytic gradients come from one backward pass with a random seed gradient `w` (so
    every output element counts); the numeric ones are central differences of `sum(w * fn)` in
    float64 on cpu, one input element at a time. Raises `GradcheckError` (an AssertionError)
    naming the input, the index and both values; returns True when all match within
    `|analytic - numeric| <= atol + rtol * |numeric|` (looser for float32/float16 gradients).
    """

    inputs = list(inputs)
    tracked = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.is_tracked]
    if not tracked:
        raise ValueError("gradcheck: no input requires grad (call .require_grad() on the "
                         "inputs to check)")

    outs = _outputs(fn(*inputs))
    rng = np.random.default_rng(seed)
    weights = [np.asarray(rng.uniform(-1.0, 1.0, o.shape)).reshape(o.shape) for o in outs]
    if len(outs) == 1:
        w = _host_tensor(weights[0].astype(outs[0].dtype.np), outs[0].device)
        grads = outs[0].backward(w)
    else:
        loss = None
        for o, wt in zip(outs, weights):
            term = (o * _host_tensor(wt.astype(o.dtype.np), o.device)).sum()
            loss = term if loss is None else loss + term
        grads = loss.backward()
    analytic = {}
    for i in tracked:
        g = grads.get(inputs[i])
        analytic[i] = np.zeros(inputs[i].shape) if g is None else g.numpy().astype(np.float64)
    del grads, outs

    # numeric: float64 copies on cpu (same layer switches), evaluated without tracking
    def cpu_device(dev):
        return _make_device("cpu", autodiff=dev.autodiff, fusion=dev.fusion,
                            checkpointing=dev.checkpointing)

    base = []
    for t in inputs:
        if isinstance(t, Tensor):
            arr = t.numpy()
            arr = arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy()
            base.append((arr, cpu_device(t.device)))
        else:
            base.append(None)

    def evaluate(i: int, j: int, delta: float) -> float:
        args = []
        for k, (t, b) in enumerate(zip(inputs, base)):
            if b is None:
                args.append(t)
                continue
            arr, dev = b
            if k == i:
                arr = arr.copy()
                arr.flat[j] += delta
            args.append(_host_tensor(arr, dev))
        with no_grad():
            res = _outputs(fn(*args))
        return float(sum(np.sum(r.numpy().astype(np.float64) * wt)
                         for r, wt in zip(res, weights)))

    for i in tracked:
        arr = base[i][0]
        numeric = np.empty(arr.shape)
        for j in range(arr.size):
            numeric.flat[j] = (evaluate(i, j, eps) - evaluate(i, j, -eps)) / (2 * eps)
        a_tol, r_tol = atol, rtol
        narrow = _NARROW_TOL.get(inputs[i].dtype.name)
        if narrow is not None:
            a_tol, r_tol = max(atol, narrow[0]), max(rtol, narrow[1])
        a = analytic[i]
        if a.shape != numeric.shape:
            raise GradcheckError(f"gradcheck: input {i}: gradient shape {a.shape} differs from "
                                 f"the input's shape {numeric.shape}")
        err = np.abs(a - numeric) - (a_tol + r_tol * np.abs(numeric))
        bad = ~(err <= 0)  # NaN counts as a mismatch
        if bad.any():
            k = int(np.argmax(np.where(np.isnan(err), np.inf, err)))
            idx = np.unravel_index(k, a.shape) if a.shape else ()
            raise GradcheckError(
                f"gradcheck: gradient of input {i} (shape {inputs[i].shape}, "
                f"{inputs[i].dtype.name}) differs at index {tuple(int(x) for x in idx)}: "
                f"analytic {float(a.flat[k]):.10g} vs numeric {float(numeric.flat[k]):.10g} "
                f"(atol={a_tol}, rtol={r_tol}; {int(bad.sum())} of {a.size} elements differ)")
    return True


class ExtensionCheckError(AssertionError):
    """`check_extension` found a failing check; the message lists each one and where."""


def _available_bases() -> list:
    bases = []
    for name in ("cpu", "wgpu", "cuda"):
        try:
            _make_device(name).backend  # noqa: B018 - builds the stack or raises
        except DeviceError:
            continue
        bases.append(name)
    return bases


def check_extension(op, sample_inputs: Sequence[Any], reference: Callable | None = None, *,
                    devices: Sequence[str] | None = None, grad: bool = True,
                    atol: float | None = None, rtol: float | None = None) -> dict:
    """Validate an extension op on every backend available (or `devices`).

    `op` is `Dispatch.<name>`; `sample_inputs` are numpy arrays (become tensors) and other
    values (passed through); `reference(*tensors)` computes the expected outputs with ordinary
    ops. Per device it checks: (1) metadata vs the real outputs' shapes and dtypes, (2) values
    vs the reference, (3) float64 finite-difference gradcheck of every float input (finite
    differences on cpu where the device has no float64), (4) fused vs `fusion=False` values.
    Raises `ExtensionCheckError` naming each failing check and device; returns the report
    `{(device, check): "ok" | message}` when all pass.
    """

    ext = op_of(op)
    entry = getattr(Dispatch, ext.name)

    def call(tensors):
        args = [t.into_dispatch() if isinstance(t, Tensor) else t for t in tensors]
        out = entry(*args)
        if isinstance(out, tuple):
            return tuple(Tensor.from_dispatch(o) if isinstance(o, DispatchTensor) else o
                         for o in out)
        return Tensor.from_dispatch(out)

    def tensors_only(out):
        return [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, Tensor)]

    def make(dev, dtype=None):
        out = []
        for x in sample_inputs:
            if isinstance(x, np.ndarray):
                arr = x.astype(dtype) if dtype is not None and x.dtype.kind == "f" else x
                out.append(_host_tensor(arr, dev))
            else:
                out.append(x)
        return out

    report: dict = {}
    failures = []
    for base in (devices or _available_bases()):
        dev = _make_device(base)
        has_f64 = base == "cpu" or base == "cuda"
        dtype = None if has_f64 else np.float32

        def record(check, fn):
            try:
                fn()
                report[(base, check)] = "ok"
            except Exception as e:  # report every failing check, not just the first
                msg = f"{type(e).__name__}: {e}"
                report[(base, check)] = msg
                failures.append(f"[{base}] {check}: {msg}")

        def metadata():
            with checking_meta():
                for o in tensors_only(call(make(dev, dtype))):
                    o.numpy()

        def values():
            if reference is None:
                return
            got = tensors_only(call(make(dev, dtype)))
            want = reference(*make(dev, dtype))
            want = [want] if isinstance(want, Tensor) else list(want)
            want = [w for w in want if isinstance(w, Tensor)]
            if len(got) != len(want):
                raise AssertionError(f"{len(got)} tensor outputs, reference has {len(want)}")
            for i, (g, w) in enumerate(zip(got, want)):
                assert_close(g, w, atol=atol, rtol=rtol, msg=f"output {i}")

        def gradients():
            if not grad:
                return
            ins = make(dev, dtype)
            floats = [t for t in ins if isinstance(t, Tensor) and t.dtype.is_float]
            if not floats:
                return
            for t in floats:
                t.require_grad()
            gradcheck(lambda *xs: tensors_only(call(list(xs))), ins)

        def fused_vs_eager():
            eager = _make_device(base, fusion=False)
            a = tensors_only(call(make(dev, dtype)))
            b = tensors_only(call(make(eager, dtype)))
            for i, (x, y) in enumerate(zip(a, b)):
                assert_close(x.numpy(), y.numpy(), atol=atol, rtol=rtol,
                             msg=f"output {i}, fused vs fusion=False")

        record("metadata", metadata)
        record("values", values)
        record("gradcheck", gradients)
        record("fused vs fusion=False", fused_vs_eager)
    if failures:
        raise ExtensionCheckError(f"check_extension({ext.name}): {len(failures)} failing "
                                  "check(s):\n  " + "\n  ".join(failures))
    return report
