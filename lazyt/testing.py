"""Testing helpers: `gradcheck` (analytic gradients against float64 finite differences),
`assert_close` (torch.testing's: tensors, arrays, numbers and containers of them against a
reference) and `check_extension`."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .device import device as _make_device
from .autodiff import no_grad
from .creation import tensor as _tensor
from .dispatch import Dispatch, DispatchTensor
from .errors import DeviceError, InvalidArgumentError
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


#: torch.testing's default (rtol, atol) per dtype; integers and bools compare exactly.
_TOLERANCES = {np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
               np.dtype(np.float64): (1e-7, 1e-7)}


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True,
                 check_stride: bool = False, msg=None) -> None:
    """torch.testing.assert_close: `actual` equals `expected` within `|a - e| <= atol + rtol *
    |e|` (torch's default tolerances for the dtype; exact for integers and bools). Tensors,
    arrays, numbers, and sequences or mappings of them compared item by item; with
    `check_dtype`/`check_device`, two tensors must also share dtype and device. NaNs are equal
    only with `equal_nan=True`. `msg` (a string or a function of the default message) replaces
    the message."""
    if (rtol is None) != (atol is None):
        raise InvalidArgumentError("assert_close: give both rtol and atol, or neither")
    _compare(actual, expected, "", dict(rtol=rtol, atol=atol, equal_nan=equal_nan,
                                         check_device=check_device, check_dtype=check_dtype,
                                         msg=msg))


def _fail(where: str, text: str, opts: dict) -> None:
    text = f"assert_close{' at ' + where if where else ''}: {text}"
    msg = opts["msg"]
    raise AssertionError(msg(text) if callable(msg) else msg if msg else text)


def _compare(actual, expected, where: str, opts: dict) -> None:
    if isinstance(expected, dict) or isinstance(actual, dict):
        if not (isinstance(actual, dict) and isinstance(expected, dict)):
            _fail(where, f"a {type(actual).__name__} against a {type(expected).__name__}", opts)
        if set(actual) != set(expected):
            _fail(where, f"keys {sorted(map(str, actual))} != {sorted(map(str, expected))}",
                  opts)
        for k in expected:
            _compare(actual[k], expected[k], f"{where}[{k!r}]", opts)
        return
    if isinstance(expected, (list, tuple)) and not isinstance(actual, (Tensor, np.ndarray)) \
            and isinstance(actual, (list, tuple)) \
            and any(isinstance(v, (Tensor, list, tuple, dict)) for v in (*actual, *expected)):
        if len(actual) != len(expected):
            _fail(where, f"length {len(actual)} != {len(expected)}", opts)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, f"{where}[{i}]", opts)
        return
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if opts["check_dtype"] and actual.dtype != expected.dtype:
            _fail(where, f"dtype {actual.dtype.name} != {expected.dtype.name}", opts)
        if opts["check_device"] and actual.device.type != expected.device.type:
            _fail(where, f"device {actual.device} != {expected.device}", opts)
    a, e = _to_numpy(actual), _to_numpy(expected)
    if a.shape != e.shape:
        _fail(where, f"shape {a.shape} != expected {e.shape}", opts)
    rtol, atol = opts["rtol"], opts["atol"]
    if rtol is None:
        if a.dtype.kind in "biu" and e.dtype.kind in "biu":
            rtol = atol = 0.0
        else:
            narrow = a.dtype if a.dtype in _TOLERANCES else e.dtype
            rtol, atol = _TOLERANCES.get(narrow, _TOLERANCES[np.dtype(np.float64)])
    af, ef = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(af - ef) <= atol + rtol * np.abs(ef))
        bad &= ~(af == ef)                                              # equal infinities
        if opts["equal_nan"]:
            bad &= ~(np.isnan(af) & np.isnan(ef))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        diff = np.abs(af - ef)
        _fail(where, f"{int(bad.sum())} of {bad.size} elements differ (greatest absolute "
                     f"difference {np.nanmax(np.where(bad, diff, np.nan)):.3g}; first at "
                     f"{idx}: {af[idx]!r} vs {ef[idx]!r}; rtol {rtol}, atol {atol})", opts)


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
    tol = {} if atol is None and rtol is None else \
        {"atol": atol if atol is not None else 0.0, "rtol": rtol if rtol is not None else 0.0}

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
                assert_close(g, w, **tol, equal_nan=True,
                             msg=lambda m, i=i: f"{m} (output {i})")

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
                assert_close(x.numpy(), y.numpy(), **tol, equal_nan=True,
                             msg=lambda m, i=i: f"{m} (output {i}, fused vs fusion=False)")

        record("metadata", metadata)
        record("values", values)
        record("gradcheck", gradients)
        record("fused vs fusion=False", fused_vs_eager)
    if failures:
        raise ExtensionCheckError(f"check_extension({ext.name}): {len(failures)} failing "
                                  "check(s):\n  " + "\n  ".join(failures))
    return report
