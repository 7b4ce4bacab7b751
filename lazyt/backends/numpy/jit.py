"""Compiled kernels for the numpy backend: fused blocks as numba loops.

A `FusedBlock` of at least `LAZYT_NUMBA_MIN` elements becomes one numba function: one pass
over memory, every op on registers, the work split over numba's threads (which run without
the GIL), float32 transcendentals as SIMD polynomials (`jitmath`). The kernel is generated
from the same SSA program the GPU renderers read; it is compiled once per block structure and
broadcast pattern, kept in memory, and written with numba's own cache to
`LAZYT_CACHE_DIR/numba/`, so a later process loads it instead of compiling (file names hash
the source, numba's version and `jitmath`'s source: an edited kernel never runs stale).

Results equal the numpy program's (`fused.run_block`) op for op, except the float32 `exp`,
`tanh` and `sigmoid`, which are within 2 ulp of numpy's. Blocks with an op this module does
not compile (float16, shifts, integer division, float-to-int casts, ...) stay numpy programs,
as does everything when numba is absent or `LAZYT_NUMBA=0`. A strided input is copied first.

`try_reduce` compiles a block together with the float32 sum or mean over its trailing dims
that reads it (the Fusion layer hands it over: `NumpyBackend.run_prologue`); `rows_for` and
`attention_for` give the hand-written row and attention kernels (`jitrows`, `jitattn`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
import time

import numpy as np

from ... import config
from ...ops import BinaryOp, ReduceOp, UnaryOp
from ...config import max_threads
from ..fused import FusedBlock
from . import jitpar

U, B = UnaryOp, BinaryOp

#: A compile slower than this prints one line on stderr (issue: latency is shown, not hidden).
SLOW_COMPILE_S = 1.0

#: Elements per piece of the thread pool's work (smaller blocks run on the calling thread).
GRAIN = 1 << 18

_lock = threading.RLock()
_state: dict = {"numba": None, "tried": False}
_kernels: dict = {}   # source hash -> numba dispatcher
STATS = {"compiled": 0, "loaded": 0, "compile_s": 0.0, "runs": 0, "attention_kernel_runs": 0}

_CTYPE = {"float32": "np.float32", "float64": "np.float64", "uint8": "np.uint8",
          "int8": "np.int8", "int16": "np.int16", "int32": "np.int32", "int64": "np.int64",
          "bool": "np.bool_"}
_INTS = ("uint8", "int8", "int16", "int32", "int64")
_FLOATS = ("float32", "float64")


def _numba():
    """The numba module, or None when it is not installed (looked up once)."""
    if not _state["tried"]:
        with _lock:
            if not _state["tried"]:
                try:
                    import numba
                except ImportError:
                    numba = None
                _state["numba"] = numba
                _state["tried"] = True
    return _state["numba"]


def available() -> bool:
    """Whether fused blocks may run as numba kernels now (installed and `LAZYT_NUMBA` on)."""
    return config.numba_enabled() and _numba() is not None


# ------------------------------------------------------------------------------ codegen
def _unary(op, a: str, src: str, dst: str) -> str | None:
    """The expression of `op(a)` for an operand of dtype `src` giving `dst`, or None."""
    if op in (U.EXP, U.LOG, U.SQRT, U.RSQRT, U.TANH, U.SIGMOID, U.SIN, U.COS, U.ERF,
              U.RECIPROCAL):
        if src != dst or dst not in _FLOATS:
            return None
        c = _CTYPE[dst]
        if op is U.SQRT:
            return f"math.sqrt({a})"
        if op is U.RSQRT:  # as numpy: sqrt, then divide
            return f"fdiv({c}(1.0), math.sqrt({a}))"
        if op is U.RECIPROCAL:
            return f"fdiv({c}(1.0), {a})"
        if dst != "float32":
            return None  # numba's float64 transcendentals are scalar C calls: numpy is faster
        if op is U.EXP:
            return f"exp_f32({a})"
        if op is U.TANH:
            return f"tanh_f32({a})"
        if op is U.SIGMOID:  # as the numpy backend: 0.5 + 0.5 tanh(x / 2)
            return f"{c}(0.5) + {c}(0.5) * tanh_f32({a} * {c}(0.5))"
        if op is U.ERF:
            return f"erf_f32({a})"
        return None  # log, sin, cos: scalar C calls in numba, SIMD in numpy
    if op is U.NOT:
        return f"not {a}" if src == "bool" else f"{a} == 0"
    if src != dst or dst == "bool":
        return None
    c = _CTYPE[dst]
    if op is U.NEG:
        return f"-{a}"
    if op is U.ABS:
        return f"abs({a})"
    if op is U.RELU:
        return f"maximum({a}, {c}(0))"
    if op is U.SIGN:
        if dst in _FLOATS:  # numpy: sign(NaN) is NaN, sign(+-0) is 0
            return f"({c}(1) if {a} > 0 else {c}(-1) if {a} < 0 else {a} * {c}(0))"
        return f"({c}(1) if {a} > 0 else {c}(-1) if {a} < 0 else {c}(0))"
    if op in (U.FLOOR, U.CEIL):
        if dst not in _FLOATS:
            return a
        return f"np.{'floor' if op is U.FLOOR else 'ceil'}({a})"
    return None


_ARITH = {B.ADD: "+", B.SUB: "-", B.MUL: "*"}
_CMP = {B.EQ: "==", B.NE: "!=", B.LT: "<", B.LE: "<=", B.GT: ">", B.GE: ">="}
_BITS = {B.BITAND: "&", B.BITOR: "|", B.BITXOR: "^"}


def _binary(op, a: str, b: str, da: str, db: str, dst: str) -> str | None:
    """The expression of `a op b` (operand dtypes `da`, `db`) giving `dst`, or None."""
    if op in _CMP:
        return f"{a} {_CMP[op]} {b}" if dst == "bool" else None
    if op is B.AND:
        return f"({a} != 0) and ({b} != 0)" if dst == "bool" else None
    if op is B.OR:
        return f"({a} != 0) or ({b} != 0)" if dst == "bool" else None
    if op in _BITS:
        if da != db or (da not in _INTS and da != "bool") or dst != da:
            return None
        return f"{a} {_BITS[op]} {b}"
    if "bool" in (da, db, dst):
        return None
    if op in _ARITH:
        return f"{a} {_ARITH[op]} {b}"
    if op is B.DIV:
        if dst not in _FLOATS or da not in _FLOATS or db not in _FLOATS:
            return None
        c = _CTYPE["float64" if "float64" in (da, db) else "float32"]
        return f"fdiv({c}({a}), {c}({b}))"
    if op is B.MAXIMUM:
        return f"maximum({a}, {b})" if da == db == dst else None
    if op is B.MINIMUM:
        return f"minimum({a}, {b})" if da == db == dst else None
    return None  # pow (a scalar C call), floor_div, mod, shifts: numpy's integer rules; they stay numpy programs


def _cast(a: str, src: str, dst: str) -> str | None:
    if dst == "bool":
        return f"{a} != 0"
    if src in _FLOATS and dst not in _FLOATS:
        return None  # NaN / out of range: numpy's result is platform behaviour
    return f"{_CTYPE[dst]}({a})"


def _operand_dtype(block: FusedBlock, ref) -> str:
    if ref.kind == "in":
        return block.inputs[ref.index][1].name
    if ref.kind == "sc":
        return block.scalars[ref.index].name
    return block.instrs[ref.index].dtype.name


def _body(block: FusedBlock) -> list | None:
    """The kernel's per-element lines (`v{i} = ...`), or None if an op is not compiled."""
    if any(d.name not in _CTYPE for _, d in block.inputs) or \
            any(d.name not in _CTYPE for d in block.scalars):
        return None
    lines = []
    for i, ins in enumerate(block.instrs):
        dst = ins.dtype.name
        if dst not in _CTYPE:
            return None
        args = [f"v{r.index}" if r.kind == "v" else f"a{r.index}" if r.kind == "in"
                else f"s{r.index}" for r in ins.operands]
        dts = [_operand_dtype(block, r) for r in ins.operands]
        if ins.kind == "unary":
            e = _unary(ins.op, args[0], dts[0], dst)
        elif ins.kind == "binary":
            e = _binary(ins.op, args[0], args[1], dts[0], dts[1], dst)
        elif ins.kind == "where":
            e = f"{args[1]} if {args[0]} else {args[2]}"
            if not (dts[1] == dts[2] == dst):
                e = f"{_CTYPE[dst]}({args[1]}) if {args[0]} else {_CTYPE[dst]}({args[2]})"
        elif ins.kind == "cast":
            e = _cast(args[0], dts[0], dst)
        elif ins.kind == "full":
            e = _cast(args[0], dts[0], dst) if dts[0] != dst else args[0]
        else:
            e = None
        if e is None:
            return None
        # every value in its own dtype (numba widens integers to 64 bits, numpy wraps)
        lines.append(f"v{i} = {_CTYPE[dst]}({e})  # {ins!r}")
    return lines


def _source(block: FusedBlock, body: list, present: tuple, ndim: int) -> str:
    """The kernel over `ndim` collapsed dims; `present[j]` says which of them input j spans
    (None: a scalar input). It runs the items [lo, hi) of its outer loop: the elements for
    one dim, the rows (every dim but the last, flattened) for more; the thread pool hands
    out the ranges."""
    n_in, n_sc, n_out = len(block.inputs), len(block.scalars), len(block.outputs)
    dims = [f"n{k}" for k in range(ndim)]
    params = ([f"x{j}" for j in range(n_in)] + [f"s{k}" for k in range(n_sc)] +
              [f"o{k}" for k in range(n_out)] + dims + ["lo", "hi"])
    t = [f"t{k}" for k in range(ndim)]
    lines = [f"def kernel({', '.join(params)}):"]
    if ndim == 1:
        # slices, then a loop from 0: numba then knows every index is >= 0 and drops the
        # negative-index wraparound from each access (a loop over range(lo, hi) measured 5x
        # slower, 12.4 against 2.6 ms for the 8-op chain on 4M floats)
        for j, p in enumerate(present):
            if p is not None:
                lines.append(f"    x{j} = x{j}[lo:hi]")
        lines += [f"    o{k} = o{k}[lo:hi]" for k in range(n_out)]
        lines.append("    for t0 in range(hi - lo):")
        ind = "        "
    else:  # a vector loop over the last dim inside a loop over the rows
        lines += ["    for q in range(lo, hi):", "        r = q"]
        for k in range(ndim - 2, -1, -1):
            lines.append(f"        {t[k]} = r % n{k}" if k else f"        {t[k]} = r")
            if k:
                lines.append(f"        r = r // n{k}")
        lines.append(f"        for {t[-1]} in range(n{ndim - 1}):")
        ind = "            "
    for j, p in enumerate(present):
        if p is None:
            lines.append(f"{ind}a{j} = x{j}")
        else:
            idx = ", ".join(t[k] for k in range(ndim) if p[k])
            lines.append(f"{ind}a{j} = x{j}[{idx}]")
    lines += [ind + ln for ln in body]
    for k, v in enumerate(block.outputs):
        lines.append(f"{ind}o{k}[{', '.join(t)}] = v{v}")
    return "\n".join(lines) + "\n"


_HEADER = '''# generated by lazyt: one fused elementwise block as a numba kernel
import math
import numpy as np
from lazyt.backends.numpy.jitmath import (exp_f32, tanh_f32, erf_f32, fdiv, maximum, minimum,
                                         sum_f32)

'''


def _stamp() -> str:
    """What a cached kernel depends on besides its own source."""
    stamp = _state.get("stamp")
    if stamp is None:
        import numba
        from . import jitmath
        with open(jitmath.__file__, "rb") as f:
            h = hashlib.sha256(f.read())
        h.update(numba.__version__.encode())
        h.update(sys.version.encode())
        stamp = _state["stamp"] = h.hexdigest()[:16]
    return stamp


def _cache_folder() -> str | None:
    folder = os.path.join(config.cache_dir(), "numba")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _dispatcher(source: str):
    """The compiled kernel of `source`: from memory, else from the disk cache (a module file
    numba caches beside), else compiled now."""
    key = hashlib.sha256((_stamp() + source).encode()).hexdigest()[:24]
    fn = _kernels.get(key)
    if fn is not None:
        return fn
    with _lock:
        fn = _kernels.get(key)
        if fn is not None:
            return fn
        from numba import njit
        code = _HEADER + source
        folder = _cache_folder()
        name = f"lazyt_kernel_{key}"
        if folder is not None:
            module = jitpar.load_module(folder, name, code)
            py = module.kernel
        else:
            ns: dict = {}
            exec(compile(code, f"<{name}>", "exec"), ns)
            py = ns["kernel"]
        # nogil: Python's pool may run the pieces (`jitpar`); error_model "python" keeps the
        # loops free of numpy-mode error bookkeeping (divisions go through `fdiv`, which
        # never raises)
        fn = njit(nogil=True, cache=folder is not None, error_model="python")(py)
        if folder is not None:
            module.kernel = fn  # what the kernel's parallel launcher imports (`jitpar`)
        fn.lazyt_source = code
        _kernels[key] = fn
    if config.debug_level() >= 2:
        print(code, flush=True)
    return fn


def _plan(block: FusedBlock, shapes: tuple):
    """(kernel source, group sizes, per-input group shapes or None) for inputs of `shapes`,
    cached on the block; None when the block is not compiled."""
    cache = block.cache.setdefault("numba_plans", {})
    plan = cache.get(shapes, False)
    if plan is not False:
        return plan
    body = block.cache.get("numba_body", False)
    if body is False:
        body = block.cache["numba_body"] = _body(block)
    plan = None
    if body is not None:
        shape = block.shape
        d = len(shape)
        padded = [(1,) * (d - len(s)) + tuple(s) for s in shapes]
        sizes, pats = _groups(shape, padded, range(d))
        if sizes:
            g = len(sizes)
            present = []
            in_shapes = []
            for j in range(len(shapes)):
                p = tuple(pats[k][j] for k in range(g))
                if any(p):
                    present.append(p)
                    in_shapes.append(tuple(sizes[k] for k in range(g) if p[k]))
                else:
                    present.append(None)
                    in_shapes.append(None)
            plan = (_source(block, body, tuple(present), g), tuple(sizes), tuple(in_shapes))
    cache[shapes] = plan
    return plan


def try_run(block: FusedBlock, inputs: list, scalars: list, outs: list) -> bool:
    """Run `block` as a numba kernel into `outs` (arrays of the block's shape); False (and
    nothing written) when this block is not compiled."""
    shapes = tuple(np.shape(x) for x in inputs)
    plan = _plan(block, shapes)
    if plan is None:
        return False
    source, sizes, in_shapes = plan
    # the kernel of a plan that already ran: its argument types are the plan's (contiguous
    # inputs of `in_shapes`, the block's dtypes), so neither the source's hash nor the
    # compiling call below is needed again (two numba dispatches a run became one)
    ready = block.cache.setdefault("numba_ready", {})
    fn = ready.get(shapes)
    args = []
    for x, s in zip(inputs, in_shapes):
        # a strided input (a transposed weight gradient) is copied first: a copy and the
        # kernel took half the time of the numpy program reading it in place (Adam's update
        # of a 784x512 weight: 1.55 against 3.1 ms on 2 cores)
        x = np.asarray(x)
        args.append(x.reshape(-1)[0] if s is None else np.ascontiguousarray(x).reshape(s))
    args += [d.np.type(v) for d, v in zip(block.scalars, scalars)]
    args += [o.reshape(sizes) for o in outs]
    args += sizes
    items = sizes[0] if len(sizes) == 1 else int(np.prod(sizes[:-1]))
    per_item = 1 if len(sizes) == 1 else sizes[-1]
    if fn is None:
        fn = _compiled(block, shapes, source, args)
        if fn is None:
            return False
    launch(fn, args, items, max(1, GRAIN // per_item), "a fused block's kernel")
    STATS["runs"] += 1
    return True


def _compiled(block: FusedBlock, shapes: tuple, source: str, args: list):
    """The kernel of `source` compiled (or loaded) for `args`' types, remembered on the block
    for inputs of `shapes`; None (remembered too) when numba cannot type it."""
    fn = _dispatcher(source)
    compiles = len(fn.signatures)
    t0 = time.perf_counter()
    try:  # an empty range: compiles (or loads) for these argument types, if they are new
        fn(*args, 0, 0)
    except Exception as e:  # noqa: BLE001 - a kernel numba cannot type runs as numpy
        block.cache["numba_plans"][shapes] = None
        if config.debug_level():
            print(f"lazyt: numba could not compile a fused block ({type(e).__name__}: {e}); "
                  "it runs as a numpy program", file=sys.stderr, flush=True)
        return None
    _count_compile(fn, compiles, time.perf_counter() - t0, block)
    block.cache.setdefault("numba_ready", {})[shapes] = fn
    return fn


def _count_compile(fn, compiles: int, dt: float, what) -> None:
    """Count a call of `fn` that took `dt` s as a compile or a disk-cache load when it added
    a signature to the `compiles` it had, and say so on stderr when the compile was slow.
    `what` is the fused block compiled, or the words for another kernel."""
    if len(fn.signatures) == compiles:
        return
    loaded = bool(fn.stats.cache_hits)
    STATS["loaded" if loaded else "compiled"] += 1
    STATS["compile_s"] += dt
    if dt > SLOW_COMPILE_S and not loaded:
        if isinstance(what, FusedBlock):
            what = f"a numba kernel for a fused block of {len(what.instrs)} ops"
        print(f"lazyt: compiled {what} in {dt:.1f} s (kept in {config.cache_dir()}/numba "
              "for later runs)", file=sys.stderr, flush=True)


def _cache() -> tuple:
    return _cache_folder(), _stamp()


def launch(kernel, args, n: int, grain: int, what: str) -> None:
    """`kernel(*args, lo, hi)` over `range(n)` in pieces of at least `grain` items, over
    numba's threads (`jitpar`), as many as the backend's; the first call of each argument
    type compiles (or loads) the parallel launcher, counted as kernels are."""
    made = jitpar.launch(kernel, tuple(args), n, grain, max_threads(), _cache)
    if made is not None:
        _count_compile(*made, f"the parallel launcher of {what}")


# ------------------------------------------------------------------------------ reductions
#: Elements of a reduced row computed into the scratch row between two of its partial sums.
REDUCE_CHUNK = 2048
#: A full reduction runs per row of dim 0 only when the rows have at least this many elements
#: (2 cores, 4M floats: rows of 4 took 3.2 ms against 1.7 for the block then numpy's sum; rows
#: of 16 0.9 against 1.5).
FULL_ROW_MIN = 32


def _groups(shape: tuple, padded: list, dims: range) -> tuple:
    """The dims `dims` of a block of `shape` collapsed into groups of neighbouring dims that
    every input spans alike (size-1 dims dropped): (group sizes, per group the inputs'
    presence)."""
    sizes: list = []
    pats: list = []
    for k in dims:
        if shape[k] == 1:
            continue
        pat = tuple(p[k] != 1 for p in padded)
        if pats and pats[-1] == pat:
            sizes[-1] *= shape[k]
        else:
            sizes.append(shape[k])
            pats.append(pat)
    return sizes, pats


def _reduce_source(block: FusedBlock, body: list, present: tuple, n_kept: int,
                   mean: bool) -> str:
    """A kernel that computes `block`'s one output and sums it over its last group (the
    reduced elements), a row of `n_kept` outer groups at a time: the block's values of a
    chunk of the row go to a scratch row in cache, which `sum_f32` adds up (the block's own
    arithmetic keeps numpy's order; only the sum is reassociated), and the chunks' sums are
    added in float64. It writes one value per row (divided by the row's length for a mean)
    for the rows [lo, hi)."""
    n_in, n_sc = len(block.inputs), len(block.scalars)
    g = n_kept + 1
    t = [f"t{k}" for k in range(n_kept)]
    params = ([f"x{j}" for j in range(n_in)] + [f"s{k}" for k in range(n_sc)] + ["o0"] +
              [f"n{k}" for k in range(g)] + ["lo", "hi"])
    lines = [f"def kernel({', '.join(params)}):",
             f"    buf = np.empty({REDUCE_CHUNK}, np.float32)",
             "    for q in range(lo, hi):",
             "        r = q"]
    for k in range(n_kept - 1, -1, -1):
        lines.append(f"        {t[k]} = r % n{k}" if k else f"        {t[k]} = r")
        if k:
            lines.append(f"        r = r // n{k}")
    along = [j for j, p in enumerate(present) if p is not None and p[-1]]
    for j, p in enumerate(present):  # per row: the inputs' rows (1-D) or values
        idx = "" if p is None else ", ".join(t[k] for k in range(n_kept) if p[k])
        if p is None:
            lines.append(f"        a{j} = x{j}")
        elif p[-1]:
            lines.append(f"        w{j} = x{j}[{idx}]" if idx else f"        w{j} = x{j}")
        else:
            lines.append(f"        a{j} = x{j}[{idx}]")
    lines += ["        acc = 0.0  # float64: chunk sums of a long row lose nothing here",
              f"        for c in range(0, n{g - 1}, {REDUCE_CHUNK}):",
              f"            m = min({REDUCE_CHUNK}, n{g - 1} - c)"]
    # slices, then a loop from 0: every index is then known to be >= 0 (see `_source`)
    lines += [f"            y{j} = w{j}[c:c + m]" for j in along]
    lines.append("            for u in range(m):")
    ind = "                "
    lines += [f"{ind}a{j} = y{j}[u]" for j in along]
    lines += [ind + ln for ln in body]
    lines.append(f"{ind}buf[u] = v{block.outputs[0]}")
    lines.append("            acc += sum_f32(buf, m)")
    if mean:
        lines.append(f"        o0[q] = np.float32(acc / n{g - 1})")
    else:
        lines.append("        o0[q] = np.float32(acc)")
    return "\n".join(lines) + "\n"


def _full_rows(shape: tuple) -> int | None:
    """The leading dims whose product makes the rows of a full reduction (each row summed by
    one thread, numpy adding the rows' sums): the fewest that give every thread a row, while
    rows stay long enough; None when there are none (too few rows would leave threads idle,
    too short ones cost more per row than they save: numpy's one sum is then faster)."""
    n = 1
    for sz in shape:
        n *= sz
    rows = 1
    for k in range(1, len(shape)):
        rows *= shape[k - 1]
        if rows >= max_threads():
            return k if n // rows >= FULL_ROW_MIN else None
    return None


def reduce_applies(block: FusedBlock, op, dims: tuple) -> bool:
    """Whether `try_reduce` may run `op` over `dims` of `block` (what metadata tells: the op,
    the dtype, the size, trailing dims; the inputs' layouts are checked when it runs)."""
    shape = tuple(block.shape)
    nd = len(shape)
    n = 1
    for sz in shape:
        n *= sz
    if (op not in (ReduceOp.SUM, ReduceOp.MEAN) or len(block.outputs) != 1 or not dims
            or block.instrs[block.outputs[0]].dtype.name != "float32" or n == 0
            or n < config.numba_min() or not available()):
        return False
    dims = tuple(sorted(d % nd for d in dims))
    if dims != tuple(range(nd - len(dims), nd)):
        return False
    if len(dims) == nd and _full_rows(shape) is None:
        return False
    body = block.cache.get("numba_body", False)
    if body is False:
        body = block.cache["numba_body"] = _body(block)
    return body is not None


def try_reduce(block: FusedBlock, inputs: list, scalars: list, op, dims: tuple,
               keepdim: bool):
    """The float32 sum or mean over `dims` of `block`'s one output, computed in one numba pass
    that never writes the block's value: `dims` must be the block's trailing dims (or all of
    them: then per row of dim 0, and numpy adds the rows' sums), numba must compile the block
    (`reduce_applies`), and every input must span the reduced dims alike, so they collapse
    into one group. None when it does not apply (the caller runs the block, then numpy's
    reduction)."""
    if not reduce_applies(block, op, dims):
        return None
    shape = tuple(block.shape)
    nd = len(shape)
    n = 1
    for sz in shape:
        n *= sz
    full = len(dims) == nd
    first = _full_rows(shape) if full else nd - len(dims)
    if first is None:
        return None
    shapes = tuple(np.shape(x) for x in inputs)
    key = (shapes, first, op)
    cache = block.cache.setdefault("numba_reduce", {})
    plan = cache.get(key, False)
    if plan is False:
        plan = cache[key] = _reduce_plan(block, shapes, first, op is ReduceOp.MEAN and not full)
    if plan is None:
        return None
    source, sizes, in_shapes = plan
    args = []
    for x, s in zip(inputs, in_shapes):
        x = np.asarray(x)
        args.append(x.reshape(-1)[0] if s is None else np.ascontiguousarray(x).reshape(s))
    args += [d.np.type(v) for d, v in zip(block.scalars, scalars)]
    kept = 1
    for sz in sizes[:-1]:
        kept *= sz
    out = np.empty(kept, np.float32)
    args.append(out)
    args += sizes
    fn = block.cache.setdefault("numba_reduce_ready", {}).get(key)
    if fn is None:
        fn = _compiled_reduce(block, key, source, args)
        if fn is None:
            return None
    launch(fn, args, kept, max(1, GRAIN // sizes[-1]), "a fused reduction's kernel")
    STATS["runs"] += 1
    if full:
        total = out.sum(dtype=np.float32)
        if op is ReduceOp.MEAN:
            total = np.float32(total / np.float32(n))
        out = np.asarray(total, np.float32)
    kept_shape = shape[:first] if not full else ()
    if keepdim:
        return out.reshape(kept_shape + (1,) * (nd - len(kept_shape)))
    return out.reshape(kept_shape)


def _reduce_plan(block: FusedBlock, shapes: tuple, first: int, mean: bool):
    """(source, group sizes, per-input group shapes or None) of `try_reduce`, or None."""
    body = block.cache.get("numba_body", False)
    if body is False:
        body = block.cache["numba_body"] = _body(block)
    if body is None:
        return None
    shape = tuple(block.shape)
    d = len(shape)
    padded = [(1,) * (d - len(s)) + tuple(s) for s in shapes]
    kept, kept_pats = _groups(shape, padded, range(first))
    red, red_pats = _groups(shape, padded, range(first, d))
    if len(red) != 1:
        return None  # an input broadcast along part of the reduced dims, or nothing reduced
    if not kept:  # one row: a group of one, which no input spans
        kept, kept_pats = [1], [tuple(False for _ in shapes)]
    sizes = kept + red
    pats = kept_pats + red_pats
    present, in_shapes = [], []
    for j in range(len(shapes)):
        p = tuple(pats[k][j] for k in range(len(sizes)))
        if any(p):
            present.append(p)
            in_shapes.append(tuple(sizes[k] for k in range(len(sizes)) if p[k]))
        else:
            present.append(None)
            in_shapes.append(None)
    source = _reduce_source(block, body, tuple(present), len(kept), mean)
    return source, tuple(sizes), tuple(in_shapes)


def _compiled_reduce(block: FusedBlock, key: tuple, source: str, args: list):
    """`_compiled` for a reduction kernel (remembered under `key`, None when numba cannot
    type it)."""
    fn = _dispatcher(source)
    compiles = len(fn.signatures)
    t0 = time.perf_counter()
    try:
        fn(*args, 0, 0)
    except Exception as e:  # noqa: BLE001 - a kernel numba cannot type runs as numpy
        block.cache["numba_reduce"][key] = None
        if config.debug_level():
            print(f"lazyt: numba could not compile a fused reduction ({type(e).__name__}: "
                  f"{e}); it runs as a numpy program", file=sys.stderr, flush=True)
        return None
    _count_compile(fn, compiles, time.perf_counter() - t0, block)
    block.cache["numba_reduce_ready"][key] = fn
    return fn


# ------------------------------------------------------------------------------ row kernels
def rows_for(x: np.ndarray):
    """The row-kernel module (`jitrows`) when `x` should use it: float32, at least
    `LAZYT_NUMBA_MIN` elements, numba available; else None."""
    if x.dtype != np.float32 or x.size < config.numba_min() or not available():
        return None
    module = _state.get("rows")
    if module is None:
        with _lock:
            module = _state.get("rows")
            if module is None:
                t0 = time.perf_counter()
                from . import jitrows
                module = _state["rows"] = jitrows
                STATS["compile_s"] += time.perf_counter() - t0
    return module


def attention_for(q: np.ndarray):
    """The one-kernel attention (`jitattn.attention_heads`) when `q` should use it: float32,
    at least `LAZYT_NUMBA_MIN` elements, numba and SciPy installed (numba's BLAS calls go
    through SciPy); else None."""
    if q.dtype != np.float32 or q.size < config.numba_min() or not available():
        return None
    kernel = _state.get("attention", False)
    if kernel is False:
        with _lock:
            kernel = _state.get("attention", False)
            if kernel is False:
                t0 = time.perf_counter()
                if importlib.util.find_spec("scipy") is None:
                    kernel = None
                else:
                    from .jitattn import attention_heads as kernel
                _state["attention"] = kernel
                STATS["compile_s"] += time.perf_counter() - t0
    return kernel


def rows_wanted(shape: tuple, dtype, dim: int) -> bool:
    """Whether a row op over `dim` of a tensor of `shape` and lazyt `dtype` would run as a
    numba row kernel (for `kernel(when=...)`: read at record time, from metadata only)."""
    n = 1
    for s in shape:
        n *= s
    return (dtype.name == "float32" and len(shape) > 0 and dim in (-1, len(shape) - 1)
            and n >= config.numba_min() and n > 0 and available())


def run_rows(kernel, n_rows: int, row_len: int, *args) -> None:
    """`kernel(*args, lo, hi)` over the rows, in pieces of about GRAIN elements spread over
    the thread pool (the first call of a kernel compiles it, or loads numba's cache)."""
    if not kernel.signatures:
        t0 = time.perf_counter()
        kernel(*args, 0, 0)
        dt = time.perf_counter() - t0
        STATS["compile_s"] += dt
        if dt > SLOW_COMPILE_S:
            print(f"lazyt: compiled the numba row kernel {kernel.__name__} in {dt:.1f} s "
                  "(numba caches it for later runs)", file=sys.stderr, flush=True)
    launch(kernel, args, n_rows, max(1, GRAIN // max(row_len, 1)), kernel.__name__)
    STATS["runs"] += 1
