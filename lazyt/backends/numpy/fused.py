"""Runs a `FusedBlock` with numpy without per-op temporaries.

Each block is compiled once into a small generated Python function: one ufunc call per op, every
result written with `out=` into a register (a scratch buffer reused as soon as its value is dead)
or straight into an output. Large blocks run tile by tile, each tile small enough that the
registers stay in cache, and the tiles are spread over a small persistent thread pool (numpy
ufuncs release the GIL). `LAZYT_DEBUG=2` prints the generated function.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ...config import debug_level, numba_min
from ...ops import BinaryOp, UnaryOp
from ...shape import numel
from ..fused import FusedBlock
from . import jit, memory
from .pool import PARALLEL_MIN, TILE_BYTES, _get_pool, _nd_tiles, _quiet, _restore, _threads
from .ufuncs import BINARY, UNARY, erf_f32_into, where_into

U, B = UnaryOp, BinaryOp

# op -> ufunc name for ops whose backend implementation is exactly that ufunc.
_UNARY_UFUNC = {
    U.NEG: "negative", U.ABS: "absolute", U.EXP: "exp", U.LOG: "log", U.SQRT: "sqrt",
    U.TANH: "tanh", U.SIN: "sin", U.COS: "cos", U.SIGN: "sign", U.FLOOR: "floor",
    U.CEIL: "ceil", U.NOT: "logical_not",
}
# op -> lines computing `o` from `a` with the same sequence of roundings as lazyt.backends.numpy
# ({z} is a zero constant of the dtype). Outputs are passed positionally where numpy allows it
# (not for maximum/minimum): the calls hold the GIL the executor's threads share.
_UNARY_LINES = {
    U.SIGMOID: ("multiply({a}, 0.5, {o})", "tanh({o}, {o})",
                "multiply({o}, 0.5, {o})", "add({o}, 0.5, {o})"),
    U.RSQRT: ("sqrt({a}, {o})", "true_divide(1.0, {o}, {o})"),
    U.RECIPROCAL: ("true_divide(1.0, {a}, {o})",),
    U.RELU: ("maximum({a}, {z}, out={o})",),
}
_BINARY_UFUNC = {op: fn.__name__ for op, fn in BINARY.items()}
# np.maximum/minimum are ~3x faster against an array than against a scalar: such scalars are
# given as a constant tile instead.
_CONST_SCALAR_OPS = frozenset({B.MAXIMUM, B.MINIMUM})

_NAMESPACE = {name: getattr(np, name) for name in
              set(_UNARY_UFUNC.values()) | set(_BINARY_UFUNC.values()) |
              {"multiply", "tanh", "add", "sqrt", "true_divide", "maximum", "copyto"}}
_NAMESPACE["where_into"] = where_into
_NAMESPACE["erf_f32_into"] = erf_f32_into
_NAMESPACE["UNARY"] = UNARY
_NAMESPACE["BINARY"] = BINARY
_NAMESPACE["UnaryOp"], _NAMESPACE["BinaryOp"] = UnaryOp, BinaryOp


class _Program:
    """A compiled block: the generated function and how to call it."""

    __slots__ = ("fn", "source", "reg_dtypes", "consts", "scalar_types", "out_dtypes",
                 "inplace", "tile_elems", "in_dtypes")

    def __init__(self, fn, source, reg_dtypes, consts, scalar_types, out_dtypes, inplace,
                 tile_elems, in_dtypes):
        self.fn = fn
        self.source = source
        self.reg_dtypes = reg_dtypes      # numpy dtype of each register
        self.consts = consts              # (numpy dtype, None = zero | scalar index) per const
        self.scalar_types = scalar_types  # numpy dtype of each scalar operand
        self.out_dtypes = out_dtypes
        self.inplace = inplace            # (output k, input j) pairs that are safe to honour
        self.tile_elems = tile_elems
        self.in_dtypes = in_dtypes


_PROBE: dict = {}


def _natural(kind: str, op, dtype: np.dtype) -> np.dtype:
    """The dtype numpy's own implementation of `op` returns for operands of `dtype` (cached)."""
    key = (kind, op, dtype)
    d = _PROBE.get(key)
    if d is None:
        x = np.ones(1, dtype)
        with np.errstate(all="ignore"):
            try:
                r = UNARY[op](x) if kind == "unary" else BINARY[op](x, x)
                d = np.asarray(r).dtype
            except Exception:  # noqa: BLE001 - probing only; the generic line handles it
                d = np.dtype(object)
        _PROBE[key] = d
    return d


def compile_block(block: FusedBlock) -> _Program:
    """Generate the block's function (registers allocated by liveness, outputs written
    directly)."""
    instrs = block.instrs
    out_of = {v: k for k, v in enumerate(block.outputs)}
    last_use: dict = {}
    reads_in: dict = {}  # input j -> instruction indices reading it
    for i, ins in enumerate(instrs):
        for r in ins.operands:
            if r.kind == "v":
                last_use[r.index] = i
            elif r.kind == "in":
                reads_in.setdefault(r.index, []).append(i)

    reg_dtypes: list = []
    free: dict = {}  # dtype -> free register numbers
    consts: list = []
    const_of: dict = {}
    loc: list = []  # value -> its variable name
    lines: list = []

    def const(dtype, source):
        key = (dtype, source)
        c = const_of.get(key)
        if c is None:
            c = const_of[key] = f"c{len(consts)}"
            consts.append(key)
        return c

    def name(ref):
        return loc[ref.index] if ref.kind == "v" else f"i{ref.index}" if ref.kind == "in" \
            else f"s{ref.index}"

    def release(i, ins):
        for r in set(ins.operands):  # an operand may appear twice (x * x)
            if r.kind == "v" and last_use.get(r.index) == i and r.index not in out_of:
                v = loc[r.index]
                if v.startswith("r"):
                    free.setdefault(reg_dtypes[int(v[1:])], []).append(v)

    for i, ins in enumerate(instrs):
        d = ins.dtype.np
        if ins.kind != "where":
            release(i, ins)  # an elementwise ufunc may write over its own input
        if i in out_of:
            o = f"o{out_of[i]}"
        elif free.get(d):
            o = free[d].pop()
        else:
            o = f"r{len(reg_dtypes)}"
            reg_dtypes.append(d)
        if ins.kind == "where":
            release(i, ins)
        loc.append(o)
        args = [name(r) for r in ins.operands]
        comment = f"  # v{i} = {ins!r}"
        if ins.kind == "unary":
            a = args[0]
            in_dtype = _operand_dtype(block, ins.operands[0])
            if ins.op is U.ERF and d == in_dtype == np.float32:
                body = [f"erf_f32_into({a}, {o})"]
            elif ins.op in _UNARY_UFUNC and _natural("unary", ins.op, in_dtype) == d:
                body = [f"{_UNARY_UFUNC[ins.op]}({a}, {o})"]
            elif ins.op in _UNARY_LINES and _natural("unary", ins.op, in_dtype) == d:
                z = const(d, None)
                body = [ln.format(a=a, o=o, z=z) for ln in _UNARY_LINES[ins.op]]
            else:
                body = [f"copyto({o}, UNARY[{ins.op}]({a}), casting='unsafe')"]
        elif ins.kind == "binary":
            a, b = args
            in_dtype = _operand_dtype(block, ins.operands[0] if ins.operands[0].kind != "sc"
                                      else ins.operands[1])
            if _natural("binary", ins.op, in_dtype) == d:
                if ins.op in _CONST_SCALAR_OPS:
                    if ins.operands[0].kind == "sc":
                        a = const(in_dtype, ins.operands[0].index)
                    if ins.operands[1].kind == "sc":
                        b = const(in_dtype, ins.operands[1].index)
                ufunc = _BINARY_UFUNC[ins.op]
                # outputs positionally (~60 ns less per call) except where numpy deprecates it
                out = f"out={o}" if ufunc in ("maximum", "minimum") else o
                body = [f"{ufunc}({a}, {b}, {out})"]
            else:
                body = [f"copyto({o}, BINARY[{ins.op}]({a}, {b}), casting='unsafe')"]
        elif ins.kind == "where":
            c, a, b = args
            body = [f"where_into({c}, {a}, {b}, {o})"]
        elif ins.kind == "cast":
            body = [f"copyto({o}, {args[0]}, casting='unsafe')"]
        elif ins.kind == "full":
            body = [f"copyto({o}, {args[0]})"]
        else:  # pragma: no cover - FusedBlock only holds the kinds above
            raise ValueError(f"fused block: unknown instruction kind {ins.kind!r}")
        body[0] += comment
        lines.extend(body)

    params = ([f"i{j}" for j in range(len(block.inputs))] +
              [f"s{k}" for k in range(len(block.scalars))] +
              [f"c{k}" for k in range(len(consts))] +
              [f"r{k}" for k in range(len(reg_dtypes))] +
              [f"o{k}" for k in range(len(block.outputs))])
    header = (f"# fused block: {len(instrs)} ops, shape {block.shape}; inputs "
              + (", ".join(f"i{j} {s} {dt.name}" for j, (s, dt) in enumerate(block.inputs))
                 or "none"))
    source = "\n".join([header, f"def fused_block({', '.join(params)}):"] +
                       [f"    {ln}" for ln in lines]) + "\n"
    ns = dict(_NAMESPACE)
    exec(compile(source, f"<fused block {id(block):x}>", "exec"), ns)
    inplace = []
    for k, j in block.inplace:
        p = block.outputs[k]
        reads = reads_in.get(j, [])
        # safe when every read of input j happens at or before the instruction writing
        # output k, and that instruction does not read j after writing (where does)
        if all(i <= p for i in reads) and not (instrs[p].kind == "where" and p in reads):
            inplace.append((k, j))
    itemsize = max([d.itemsize for d in reg_dtypes] +
                   [ins.dtype.itemsize for ins in instrs] + [1])
    prog = _Program(ns["fused_block"], source, tuple(reg_dtypes), tuple(consts),
                    tuple(d.np for d in block.scalars),
                    tuple(instrs[v].dtype.np for v in block.outputs), tuple(inplace),
                    max(1024, TILE_BYTES // itemsize), tuple(d.np for _, d in block.inputs))
    if debug_level() >= 2:
        print(source, flush=True)
    return prog


def _operand_dtype(block: FusedBlock, ref) -> np.dtype:
    if ref.kind == "in":
        return block.inputs[ref.index][1].np
    if ref.kind == "sc":
        return block.scalars[ref.index].np
    return block.instrs[ref.index].dtype.np


_local = threading.local()


def _scratch(dtypes, elems: int) -> list:
    """Per-thread flat scratch buffers, one per register (reused across runs)."""
    pool = getattr(_local, "scratch", None)
    if pool is None:
        pool = _local.scratch = {}
    used: dict = {}
    out = []
    for d in dtypes:
        k = used.get(d, 0)
        used[d] = k + 1
        bufs = pool.setdefault(d, [])
        if k == len(bufs):
            bufs.append(np.empty(elems, d))
        elif bufs[k].size < elems:
            bufs[k] = np.empty(elems, d)
        out.append(bufs[k])
    return out


_PROGRAMS: OrderedDict = OrderedDict()  # block signature -> _Program, shared across plans
_PROGRAMS_MAX = 2048


def program_for(block: FusedBlock) -> _Program:
    """The compiled program of `block`: cached on the block, and by the block's structure
    (a long stream repeats the same blocks; each is generated and compiled once)."""
    prog = block.cache.get("numpy")
    if prog is None:
        sig = (block.shape, tuple((s, d.name) for s, d in block.inputs),
               tuple(d.name for d in block.scalars),
               tuple((i.kind, i.op, i.operands, i.dtype.name) for i in block.instrs),
               block.outputs, block.inplace)
        prog = _PROGRAMS.get(sig)
        if prog is None:
            prog = _PROGRAMS[sig] = compile_block(block)
            if len(_PROGRAMS) > _PROGRAMS_MAX:
                _PROGRAMS.popitem(last=False)
        block.cache["numpy"] = prog
    return prog


def run_block(block: FusedBlock, inputs: list, scalars: list) -> list:
    """Run `block` on numpy arrays; returns the output arrays."""
    prog = block.cache.get("numpy")
    if prog is None:
        prog = program_for(block)
    shape = block.shape
    # scalars as 0-d arrays: a ufunc takes them ~0.25 us faster than numpy scalars
    sc = [np.array(v, d) for d, v in zip(prog.scalar_types, scalars)]
    outs = [None] * len(prog.out_dtypes)
    for k, j in prog.inplace:
        x = inputs[j]
        if (type(x) is np.ndarray and x.flags.c_contiguous and x.flags.writeable
                and x.shape == shape and x.dtype == prog.out_dtypes[k]):
            outs[k] = x
    for k, d in enumerate(prog.out_dtypes):
        if outs[k] is None:
            outs[k] = memory.empty(shape, d)
    n = numel(shape)
    if n >= numba_min() and jit.available() and jit.try_run(block, inputs, scalars, outs):
        return outs
    if n <= prog.tile_elems:
        regs = [np.empty(shape, d) for d in prog.reg_dtypes]
        consts = [np.zeros((), d) if s is None else sc[s] for d, s in prog.consts]
        token = _quiet()  # like the numpy backend's binary ops: no floating-point warnings
        try:
            prog.fn(*inputs, *sc, *consts, *regs, *outs)
        finally:
            _restore(token)
        return outs
    _run_tiled(prog, shape, n, inputs, sc, outs)
    return outs


def _run_tiled(prog: _Program, shape: tuple, n: int, inputs: list, sc: list, outs: list):
    tile = prog.tile_elems
    flat = all(x.size == 1 or (x.shape == shape and x.flags.c_contiguous) for x in inputs)
    if flat:
        in_views = [x.reshape(()) if x.size == 1 else x.reshape(-1) for x in inputs]
        out_views = [o.reshape(-1) for o in outs]
        tiles = [(slice(s, min(s + tile, n)),) for s in range(0, n, tile)]
    else:
        in_views = [x.reshape(()) if x.size == 1 else
                    x if x.shape == shape else np.broadcast_to(x, shape) for x in inputs]
        out_views = outs
        tiles = _nd_tiles(shape, tile)
    sliced = [v.ndim > 0 for v in in_views]

    def work(part):
        token = _quiet()  # per thread: the error state is a context variable
        try:
            bufs = _scratch(prog.reg_dtypes, tile)
            per_shape: dict = {}
            fn = prog.fn
            for idx in part:
                ins = [v[idx] if s else v for v, s in zip(in_views, sliced)]
                os_ = [v[idx] for v in out_views]
                tshape = os_[0].shape
                rc = per_shape.get(tshape)
                if rc is None:
                    m = numel(tshape)
                    regs = [b[:m].reshape(tshape) for b in bufs]
                    consts = [np.full(tshape, 0 if s is None else sc[s], d)
                              for d, s in prog.consts]
                    rc = per_shape[tshape] = consts + regs
                fn(*ins, *sc, *rc, *os_)
        finally:
            _restore(token)

    pool = _get_pool() if n >= PARALLEL_MIN else None
    if pool is None or len(tiles) < 2:
        work(tiles)
        return
    parts = min(_threads(), len(tiles))
    step = -(-len(tiles) // parts)
    chunks = [tiles[i:i + step] for i in range(0, len(tiles), step)]
    futures = [pool.submit(work, c) for c in chunks[1:]]
    try:
        work(chunks[0])
    finally:
        for f in futures:
            f.result()


