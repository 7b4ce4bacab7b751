"""`LBFGS`: limited-memory BFGS over all parameters as one flat vector, with torch's iteration,
stopping rules, optional strong Wolfe line search and state (`torch.optim.LBFGS`).

Each `step(closure)` runs up to `max_iter` iterations, calling the closure (which zeroes the
gradients, computes the loss and calls `backward()`) for every function value it needs. The
vectors (directions, gradient differences, the two-loop recursion) stay lazy tensors; the
decisions (tolerances, the line search) read scalars on the host, as torch does."""
from __future__ import annotations

import math
import numbers
from typing import Callable, Iterable

from .. import capture_state as _capture
from ..autodiff import enable_grad as _enable_grad
from ..autodiff import no_grad as _no_grad
from ..creation import zeros as _zeros
from ..functional import cat as _cat
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .optimizer import Optimizer, OptimizerError

#: The global state vectors: of the flat parameter vector's length.
_FLAT_STATE = ("d", "prev_flat_grad")
#: The global state lists of such vectors.
_FLAT_LISTS = ("old_dirs", "old_stps")


class LBFGS(Optimizer):
    """L-BFGS as torch.optim.LBFGS: one parameter group only; `step(closure)` needs a closure
    that re-evaluates the model and returns the loss; `line_search_fn="strong_wolfe"` picks each
    step length by a strong Wolfe line search, None moves by `lr` (the first iteration by
    `lr * min(1, 1 / |g|_1)`). Its state (`func_evals`, `n_iter`, `d`, `t`, `old_dirs`,
    `old_stps`, `ro`, `H_diag`, `prev_flat_grad`, `prev_loss`, `al`) is kept, as torch's, under
    the first parameter."""

    scalar_state: tuple = ()

    def __init__(self, params: Iterable, lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None, *, maximize: bool = False):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn,
                        maximize=maximize)
        self._check(defaults)
        super().__init__(params, defaults)
        self._params: list[Parameter] = self.param_groups[0]["params"]

    def add_param_group(self, group: dict) -> None:
        if self.param_groups:
            raise OptimizerError("LBFGS doesn't support per-parameter options (parameter "
                                 "groups)")
        super().add_param_group(group)

    def _check(self, group: dict) -> None:
        lr = group.get("lr", 0)
        if not lr >= 0.0:
            raise OptimizerError(f"LBFGS: learning rate must be >= 0, got {lr!r}")
        for key in ("max_iter", "max_eval", "history_size"):
            v = group.get(key, 1)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise OptimizerError(f"LBFGS: {key} must be an int >= 1, got {v!r}")
        fn = group.get("line_search_fn")
        if fn not in (None, "strong_wolfe"):
            raise OptimizerError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                                 f"{fn!r}")

    # ------------------------------------------------------------------ flat vectors
    def _gather_flat_grad(self) -> Tensor:
        """All parameters' `.grad` as one vector (zeros for a parameter without one),
        negated under `maximize`."""
        views = []
        for p in self._params:
            g = p.grad
            views.append(_zeros((p.numel(),), dtype=p.dtype, device=p.device) if g is None
                         else g.detach().reshape(-1).to(p.dtype))
        flat = _cat(views) if len(views) > 1 else views[0]
        return -flat if self.param_groups[0]["maximize"] else flat

    def _add_grad(self, t, d: Tensor) -> None:
        """Move the parameters by `t * d` (`d` flat, in parameter order)."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.assign(p.detach() + t * d[offset:offset + n].reshape(p.shape), cast=True)
            offset += n

    def _directional_evaluate(self, closure: Callable, x: list, t, d: Tensor):
        """The loss and flat gradient at `x + t d`; the parameters are put back to `x`."""
        self._add_grad(t, d)
        loss = self._loss(closure)
        flat_grad = self._gather_flat_grad()
        for p, v in zip(self._params, x):
            p.assign(v)
        return loss, flat_grad

    def _loss(self, closure: Callable) -> float:
        loss = _item(self._call(closure))
        return -loss if self.param_groups[0]["maximize"] else loss

    @staticmethod
    def _call(closure: Callable):
        with _enable_grad():
            return closure()

    # ------------------------------------------------------------------ step
    def step(self, closure: Callable = None):  # type: ignore[override]
        """Run up to `max_iter` L-BFGS iterations; `closure()` zeroes the gradients, computes
        the loss, calls `backward()` and returns the loss. Returns the closure's first loss."""
        if closure is None or not callable(closure) or hasattr(closure, "get"):
            raise OptimizerError(f"LBFGS.step: needs a closure that re-evaluates the model "
                                 f"and returns the loss (it calls it several times), got "
                                 f"{type(closure).__name__}")
        _capture.refuse("LBFGS.step", "its stopping rules and line search read values on "
                                      "the host")
        if len(self.param_groups) != 1:
            raise OptimizerError(f"LBFGS doesn't support per-parameter options (parameter "
                                 f"groups): it has {len(self.param_groups)}")
        with _no_grad():
            return self._step_lbfgs(closure)

    def _step_lbfgs(self, closure: Callable):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        maximize = group["maximize"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._call(closure)
        loss = -_item(orig_loss) if maximize else _item(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max().item() <= tol_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # the direction: steepest descent first, then the two-loop recursion
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys.item() > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)   # the initial inverse Hessian's scale
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r = r + (al[i] - be_i) * old_stps[i]
                d = r
            prev_flat_grad = flat_grad
            prev_loss = loss

            # the step length
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d).item()
            if gtd > -tol_change:
                break   # not a descent direction (to tolerance)

            ls_func_evals = 0
            if group["line_search_fn"] is not None:
                x_init = [p.detach() for p in self._params]
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    lambda x, step, direction: self._directional_evaluate(closure, x, step,
                                                                          direction),
                    x_init, t, d, loss, flat_grad, gtd, tolerance_change=tol_change,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max().item() <= tol_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:   # the last iteration's loss is the next step's
                    loss = self._loss(closure)
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max().item() <= tol_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if (d * t).abs().max().item() <= tol_change:
                break   # the parameters hardly move
            if abs(loss - prev_loss) < tol_change:
                break   # the loss hardly changes

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    # ------------------------------------------------------------------ state dict
    def _load_value(self, call: str, index, key: str, value, p: Parameter):
        """The global state: flat vectors (lists of them) of all parameters' total size, on
        the first parameter's device and dtype; numbers as they are."""
        if isinstance(value, (list, tuple)):
            return [self._load_value(call, index, key, v, p) for v in value]
        if not isinstance(value, Tensor):
            return value
        n = sum(q.numel() for q in self._params)
        if (key in _FLAT_STATE or key in _FLAT_LISTS) and tuple(value.shape) != (n,):
            raise OptimizerError(f"{call}: state {key!r} has shape {value.shape}, expected "
                                 f"({n},): the parameters' total size")
        return value.detach().to(p.device).to(p.dtype)


def _item(loss) -> float:
    return loss.item() if isinstance(loss, Tensor) else float(loss)


def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: tuple | None = None) -> float:
    """The minimizer of the cubic through `(x1, f1)` and `(x2, f2)` with slopes `g1`, `g2`,
    clamped to `bounds` (default: between x1 and x2); their midpoint when it has none."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


def _strong_wolfe(obj_func: Callable, x: list, t: float, d: Tensor, f: float, g: Tensor,
                  gtd: float, c1: float = 1e-4, c2: float = 0.9,
                  tolerance_change: float = 1e-9, max_ls: int = 25):
    """A step length along `d` from `x` (loss `f`, gradient `g`, slope `gtd`) that meets the
    strong Wolfe conditions (sufficient decrease `c1`, curvature `c2`): bracket such a step,
    then zoom in by cubic interpolation; at most `max_ls` evaluations after the first.
    Returns (loss, flat gradient, step, evaluations)."""
    d_norm = d.abs().max().item()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d).item()

    # bracketing: grow t until the interval [t_prev, t] holds an acceptable step
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        # extrapolate: between 1.01 t and 10 t
        min_step, max_step = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                          bounds=(min_step, max_step))
        f_prev, g_prev, gtd_prev = f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d).item()
        ls_iter += 1
    if ls_iter >= max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket around a step that meets the conditions
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # a trial too close to an end, twice or outside: move it a tenth of the bracket in
        b_lo, b_hi = min(bracket), max(bracket)
        eps = 0.1 * (b_hi - b_lo)
        if min(b_hi - t, t - b_lo) < eps:
            if insuf_progress or t >= b_hi or t <= b_lo:
                t = b_hi - eps if abs(t - b_hi) < abs(t - b_lo) else b_lo + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d).item()
        ls_iter += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            # no sufficient decrease, or not below the low end: t is the new high end
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                # the slope points away from the high end: the low end becomes the high one
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals
