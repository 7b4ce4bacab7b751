"""Blas: cuBLAS and cuBLASLt for the CUDA backend, through NVIDIA's nvmath-python bindings
(`nvmath.bindings.cublas`, `nvmath.bindings.cublasLt`), which take device pointers and stream
handles as plain ints.

lazyt tensors are row-major and cuBLAS is column-major. A row-major matrix is the column-major
matrix of its transpose, so `C = A @ B` is computed as the column-major `C^T = B^T @ A^T`: cuBLAS
gets (m, n, k) = (n, m, k) with its first operand read from B and its second from A, and writes
C^T column-major, which is C row-major. Each operand is either "N" (its row stride is the leading
dimension) or "T" (its column stride is); anything else cannot be expressed and `gemm` answers
False so the caller copies to contiguous or runs its own kernel.

A plain product is one strided-batched GEMM of the classic API (the sgemm / dgemm family, or
`cublasGemmStridedBatchedEx` for float16 and TF32). A product with a bias (and ReLU) is one
cuBLASLt matmul with a BIAS / RELU_BIAS epilogue; in the column-major view the bias is indexed by
the row of D, which is exactly cuBLASLt's convention. Lt descriptors, layouts and the chosen
algorithm are cached per shape, so a repeated shape costs one attribute write and one launch.

The heuristic's first algorithm is not always the fastest: on MiniLM's [4096, 1536] @ [1536, 384]
the heuristic's pick took 127 µs and a split-K candidate 119 µs (H200, float32). So the first
call of a large enough Lt product (`TUNE_MIN_MACS`), outside a CUDA-graph capture, times up to
`TUNE_CANDIDATES` of the heuristic's answers on its own operands and keeps the fastest for the
shape; every later call, and every graph captured after, uses that one, so results stay the same
bits within a process. `LAZYT_CUDA_TUNE=0` keeps the heuristic's first (the same choice in every
process, as torch makes it).
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from ...config import cuda_tune
from ...errors import LazytError

#: Bytes of the workspace shared by cuBLAS and cuBLASLt (both run on the one stream, so their
#: kernels never overlap). 32 MiB is what NVIDIA recommends for Hopper.
WORKSPACE_BYTES = 32 << 20
#: cuBLASLt plans (descriptors, layouts, algorithm) kept, least recently used dropped first.
MAX_LT_PLANS = 256
#: Alignment (bytes) cuBLASLt assumes for A, B, C and D unless told less.
MAX_ALIGNMENT = 256
#: Alignment (bytes) a fused bias must have: the heuristic has no preference for it and may pick
#: a kernel that loads it in 16-byte vectors.
BIAS_ALIGNMENT = 16
#: Heuristic answers timed the first time an Lt product of a shape runs.
TUNE_CANDIDATES = 8
#: Multiply-adds (m*n*k*batches) from which an Lt product is tuned: below, a launch costs more
#: than any algorithm can save, and the timing would cost more than it brings back.
TUNE_MIN_MACS = 1 << 27
#: Products per timing of a candidate (behind one untimed), and rounds over the candidates.
TUNE_LAUNCHES = 5
TUNE_ROUNDS = 3

_INT32_MAX = (1 << 31) - 1
_OP_N, _OP_T = 0, 1                  # cublasOperation_t: CUBLAS_OP_N, CUBLAS_OP_T
_ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2}
_INSTALL = 'pip install -e ".[cuda]" in the lazyt checkout'


class BlasUnavailable(LazytError):
    """nvmath-python or cuBLAS is missing, or failed to initialize."""


class BlasError(LazytError, RuntimeError):
    """cuBLAS or cuBLASLt failed on a product it had accepted."""


class GemmPlan(NamedTuple):
    """The arguments of one strided-batched cuBLAS GEMM, in cuBLAS's (column-major) terms: its
    first operand is read from the row-major B, its second from the row-major A, and C is
    written with `ldc` = row length of the row-major C."""

    m: int
    n: int
    k: int
    transa: int
    lda: int
    stride_a: int
    transb: int
    ldb: int
    stride_b: int
    ldc: int
    stride_c: int
    batches: int


def _operand(rows: int, cols: int, rs: int, cs: int) -> tuple[int, int] | None:
    """How cuBLAS reads the transpose of a row-major `rows x cols` matrix with element strides
    (`rs`, `cs`): `(op, ld)`, or None when it cannot.

    A unit column stride makes the memory the column-major `cols x rows` transpose with leading
    dimension `rs` (operation N); a unit row stride makes it the column-major `rows x cols`
    matrix itself with leading dimension `cs` (operation T). The stride of a dim of size 1 is
    never used, so it is chosen to make the layout legal; cuBLAS needs the leading dimension at
    least the stored row count (and at least 1), and below 2**31.
    """
    if rows < 1 or cols < 1:
        return None
    if cols == 1:
        cs = 1
    if rows == 1:
        rs = max(1, cols) if cs == 1 else 1
    if cs == 1 and max(1, cols) <= rs <= _INT32_MAX:
        return _OP_N, rs
    if rs == 1 and max(1, rows) <= cs <= _INT32_MAX:
        return _OP_T, cs
    return None


@functools.lru_cache(maxsize=1024)
def _plan(m: int, n: int, k: int, a_rs: int, a_ks: int, b_ks: int, b_cs: int,
          batches: int = 1, a_bstride: int = 0, b_bstride: int = 0) -> GemmPlan | None:
    """The cuBLAS GEMM computing row-major `C[i] = A[i] @ B[i]` (see `Blas.gemm` for the
    arguments), or None when the layout cannot be expressed.

    When B is shared by every batch and the batches of A are stacked rows (batch stride = m row
    strides), the batches fold into one `(batches*m) x k` product: C's batches are stacked the
    same way, and one large GEMM beats many small ones.
    """
    if min(m, n, k, batches) < 1:
        return None
    if batches > 1 and b_bstride == 0:
        rs = a_bstride if m == 1 else a_rs
        if a_bstride == m * rs:
            folded = _plan(m * batches, n, k, rs, a_ks, b_ks, b_cs)
            if folded is not None:
                return folded
    if batches == 1:
        a_bstride = b_bstride = 0
    if max(m, n, k, batches) > _INT32_MAX:
        return None
    first = _operand(k, n, b_ks, b_cs)
    second = _operand(m, k, a_rs, a_ks)
    if first is None or second is None:
        return None
    return GemmPlan(n, m, k, first[0], first[1], b_bstride, second[0], second[1], a_bstride,
                    n, m * n, batches)


def _alignment(ptr: int, *strides_bytes: int) -> int:
    """The largest power of two (at most `MAX_ALIGNMENT`) dividing `ptr` and every batch stride
    in bytes: the alignment every batch's pointer has."""
    x = ptr | MAX_ALIGNMENT
    for s in strides_bytes:
        x |= abs(s)
    return x & -x


@dataclass(eq=False)
class _LtPlan:
    """One cached cuBLASLt product: descriptor, layouts (first, second, C/D) and algorithm."""

    desc: int
    layouts: tuple[int, int, int]
    heuristic: Any                  # cublasLt.MatmulHeuristicResult; its algo is at offset 0
    bias: np.ndarray                # int64[1]: the BIAS_POINTER attribute value
    bias_set: int = 0               # the bias pointer last written to `desc`
    algo: int = 0                   # the address of the chosen algorithm (heuristic.ptr)
    bias_p: int = 0                 # the address of `bias`
    candidates: tuple = ()          # addresses of the algorithms to time on the first call
    timings: tuple = ()             # (address, median seconds) per candidate, once tuned


class Blas:
    """cuBLAS and cuBLASLt handles bound to one CUDA stream of the current context."""

    version: int        #: cuBLAS version, e.g. 130100 for 13.1.0
    lt_version: int     #: cuBLASLt version, same encoding

    def __init__(self, stream: int, alloc: Callable[[int], Any],
                 timer: Callable[[Callable[[], None]], float | None] | None = None):
        """`stream`: the CUstream handle as an int. `alloc(nbytes)` returns an object whose
        `int()` is a device pointer; the workspace it gives is kept for the life of `self`.
        `timer(fn)`: the device seconds of the work `fn` queues on the stream, or None when it
        cannot time now (a graph is being captured); without it nothing is tuned."""
        self._timer = timer
        try:
            import nvmath
            from nvmath.bindings import cublas, cublasLt
        except Exception as e:           # ImportError, or a library nvmath failed to load
            raise BlasUnavailable(f"cuBLAS needs nvmath-python ({_INSTALL}): {e}") from e
        self._cublas = cublas
        self._lt = cublasLt
        self._errors: tuple[type[BaseException], ...] = (
            cublas.cuBLASError, cublasLt.cuBLASLtError, RuntimeError)
        self.stream = int(stream)
        self._handle: int | None = None
        self._lt_handle: int | None = None
        self._pref: int | None = None
        self._plans: OrderedDict[tuple, _LtPlan | None] = OrderedDict()
        dt = nvmath.CudaDataType
        self._types = {"float32": int(dt.CUDA_R_32F), "float64": int(dt.CUDA_R_64F),
                       "float16": int(dt.CUDA_R_16F)}
        ct = cublas.ComputeType
        self._compute = {"float32": int(ct.COMPUTE_32F), "float64": int(ct.COMPUTE_64F),
                         "float16": int(ct.COMPUTE_32F), "tf32": int(ct.COMPUTE_32F_FAST_TF32)}
        self._algo = int(cublas.GemmAlgo.DFALT)
        ep = cublasLt.Epilogue   # as ints once: an enum's attribute costs host time per call
        self._epi_relu, self._epi_relu_bias, self._epi_bias = (
            int(ep.RELU), int(ep.RELU_BIAS), int(ep.BIAS))
        self._bias_pointer = int(cublasLt.MatmulDescAttribute.BIAS_POINTER)
        self._lt_error = cublasLt.cuBLASLtError
        self._unsupported = (int(cublas.Status.NOT_SUPPORTED), int(cublas.Status.INVALID_VALUE))
        # alpha = 1, beta = 0 as host scalars (pointer mode host), kept alive with `self`
        self._one32 = np.ones(1, np.float32)
        self._zero32 = np.zeros(1, np.float32)
        self._one64 = np.ones(1, np.float64)
        self._zero64 = np.zeros(1, np.float64)
        self._count = np.zeros(1, np.int32)
        # host addresses of the scalars, read once (`.ctypes.data` costs a microsecond a call)
        self._one32_p, self._zero32_p = self._one32.ctypes.data, self._zero32.ctypes.data
        self._one64_p, self._zero64_p = self._one64.ctypes.data, self._zero64.ctypes.data
        self._workspace: Any = None
        try:
            self._start(alloc)
        except (*self._errors, OSError) as e:
            self._abandon()
            raise BlasUnavailable(f"cuBLAS failed to initialize ({type(e).__name__}: {e}); "
                                  f"check the CUDA driver and {_INSTALL}") from e
        except BaseException:
            self._abandon()
            raise

    def _start(self, alloc: Callable[[int], Any]) -> None:
        """Create both handles on the stream and give them the workspace."""
        cublas, lt = self._cublas, self._lt
        self._handle = cublas.create()
        cublas.set_stream(self._handle, self.stream)
        cublas.set_pointer_mode(self._handle, int(cublas.PointerMode.HOST))
        cublas.set_math_mode(self._handle, int(cublas.Math.DEFAULT_MATH))
        self.version = int(cublas.get_version(self._handle))
        self._lt_handle = lt.create()
        self.lt_version = int(lt.get_version())
        self._pref = lt.matmul_preference_create()
        self._workspace = alloc(WORKSPACE_BYTES)
        self._ws = int(self._workspace)
        cublas.set_workspace(self._handle, self._ws, WORKSPACE_BYTES)
        self._pref_attr(lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, WORKSPACE_BYTES - 1024)

    # ------------------------------------------------------------------ attributes
    def _desc_attr(self, desc: int, attr, value: int) -> None:
        lt = self._lt
        buf = np.array([value], dtype=lt.get_matmul_desc_attribute_dtype(attr))
        lt.matmul_desc_set_attribute(desc, int(attr), buf.ctypes.data, buf.itemsize)

    def _layout_attr(self, layout: int, attr, value: int) -> None:
        lt = self._lt
        buf = np.array([value], dtype=lt.get_matrix_layout_attribute_dtype(attr))
        lt.matrix_layout_set_attribute(layout, int(attr), buf.ctypes.data, buf.itemsize)

    def _pref_attr(self, attr, value: int) -> None:
        lt = self._lt
        buf = np.array([value], dtype=lt.get_matmul_preference_attribute_dtype(attr))
        lt.matmul_preference_set_attribute(self._pref, int(attr), buf.ctypes.data, buf.itemsize)

    # ------------------------------------------------------------------ products
    def gemm(self, dtype: str, m: int, n: int, k: int, a: int, a_rs: int, a_ks: int,
             b: int, b_ks: int, b_cs: int, c: int, batches: int = 1, a_bstride: int = 0,
             b_bstride: int = 0, bias: int | None = None, relu: bool = False,
             tf32: bool = False) -> bool:
        """Row-major C[batch] (contiguous, m x n, batch stride m*n) = A[batch] @ B[batch]
        (+ bias[n] broadcast over rows) (relu), enqueued on the stream.

        Pointers are device addresses (ints, already including any element offset).
        A[row, kk] lives at a + (row*a_rs + kk*a_ks)*itemsize, B[kk, col] at
        b + (kk*b_ks + col*b_cs)*itemsize; batch i adds i*a_bstride / i*b_bstride elements
        (0 = broadcast). dtype is "float32", "float64" or "float16" (float16 accumulates in
        float32). float32 runs without TF32 unless `tf32`.

        Returns False without launching anything when cuBLAS cannot take the product: a layout
        it cannot express (neither stride of an operand is 1, a leading dimension too small),
        k == 0, an unknown dtype, or a bias / relu that cuBLASLt does not fuse for this shape
        (a bias not 16-byte aligned, no algorithm, float64 where unsupported). The caller then
        copies to contiguous or uses its own kernels. An empty C returns True at once.
        """
        if self._handle is None:
            raise BlasError("matmul (cuBLAS): the Blas handles are closed")
        itemsize = _ITEMSIZE.get(dtype)
        if itemsize is None:
            return False
        if m == 0 or n == 0 or batches == 0:
            return True
        plan = _plan(m, n, k, a_rs, a_ks, b_ks, b_cs, batches, a_bstride, b_bstride)
        if plan is None:
            return False
        try:
            if bias is None and not relu:
                self._gemm(dtype, tf32, plan, a, b, c)
                return True
            return self._gemm_lt(dtype, tf32, plan, a, b, c, bias, relu, itemsize)
        except self._errors as e:
            shape = f"[{batches}] " if batches > 1 else ""
            raise BlasError(f"matmul (cuBLAS) {dtype} {shape}({m}x{k}) @ ({k}x{n}) failed: "
                            f"{type(e).__name__}: {e}") from e

    def gemm_pointers(self, dtype: str, m: int, n: int, k: int, a_ptrs: int, a_rs: int,
                      a_ks: int, b_ptrs: int, b_ks: int, b_cs: int, c_ptrs: int, batches: int,
                      tf32: bool = False, c_rs: int | None = None) -> bool:
        """Row-major C[i] (m x n, rows `c_rs` elements apart: n when None) = A[i] @ B[i] for
        i < batches, each matrix found through a device array of `batches` pointers (`a_ptrs`,
        `b_ptrs`, `c_ptrs`: device addresses of those arrays): batches that no single stride
        walks (two batch dims of a permuted view) without copying the operands. Layouts as
        `gemm`'s; False when cuBLAS cannot take them."""
        if self._handle is None:
            raise BlasError("matmul (cuBLAS): the Blas handles are closed")
        if dtype not in _ITEMSIZE:
            return False
        if m == 0 or n == 0 or batches == 0:
            return True
        p = _plan(m, n, k, a_rs, a_ks, b_ks, b_cs)
        if p is None or batches > _INT32_MAX:
            return False
        ldc = p.ldc if c_rs is None else c_rs
        if not n <= ldc <= _INT32_MAX:
            return False
        t = self._types[dtype]
        if dtype == "float64":
            one, zero, compute = self._one64_p, self._zero64_p, self._compute["float64"]
        else:
            one, zero = self._one32_p, self._zero32_p
            compute = self._compute["tf32" if tf32 and dtype == "float32" else "float32"]
        try:
            self._cublas.gemm_batched_ex(self._handle, p.transa, p.transb, p.m, p.n, p.k, one,
                                         b_ptrs, t, p.lda, a_ptrs, t, p.ldb, zero, c_ptrs, t,
                                         ldc, batches, compute, self._algo)
        except self._errors as e:
            if getattr(e, "status", None) in self._unsupported:
                return False
            raise BlasError(f"matmul (cuBLAS) {dtype} [{batches}] ({m}x{k}) @ ({k}x{n}) "
                            f"through pointer arrays failed: {type(e).__name__}: {e}") from e
        return True

    def _gemm(self, dtype: str, tf32: bool, p: GemmPlan, a: int, b: int, c: int) -> None:
        """One classic strided-batched GEMM (first operand from B, second from A)."""
        cb, h = self._cublas, self._handle
        if dtype == "float64":
            cb.dgemm_strided_batched(h, p.transa, p.transb, p.m, p.n, p.k,
                                     self._one64_p, b, p.lda, p.stride_a,
                                     a, p.ldb, p.stride_b, self._zero64_p,
                                     c, p.ldc, p.stride_c, p.batches)
        elif dtype == "float32" and not tf32:
            cb.sgemm_strided_batched(h, p.transa, p.transb, p.m, p.n, p.k,
                                     self._one32_p, b, p.lda, p.stride_a,
                                     a, p.ldb, p.stride_b, self._zero32_p,
                                     c, p.ldc, p.stride_c, p.batches)
        else:
            t = self._types[dtype]
            compute = self._compute["tf32" if dtype == "float32" else dtype]
            cb.gemm_strided_batched_ex(h, p.transa, p.transb, p.m, p.n, p.k,
                                       self._one32_p, b, t, p.lda, p.stride_a,
                                       a, t, p.ldb, p.stride_b, self._zero32_p,
                                       c, t, p.ldc, p.stride_c, p.batches, compute, self._algo)

    def _gemm_lt(self, dtype: str, tf32: bool, p: GemmPlan, a: int, b: int, c: int,
                 bias: int | None, relu: bool, itemsize: int) -> bool:
        """One cuBLASLt matmul with a BIAS, RELU_BIAS or RELU epilogue; False when cuBLASLt
        has no algorithm for it (the answer is cached per shape)."""
        if bias is not None and bias % BIAS_ALIGNMENT:
            return False
        lt = self._lt
        epi = self._epi_relu if bias is None else self._epi_relu_bias if relu else self._epi_bias
        key = (dtype, tf32 and dtype == "float32", epi, p,
               _alignment(b, p.stride_a * itemsize), _alignment(a, p.stride_b * itemsize),
               _alignment(c, p.stride_c * itemsize))
        plans = self._plans
        if key in plans:
            plans.move_to_end(key)
            entry = plans[key]
        else:
            entry = self._lt_plan(key)
            plans[key] = entry
            while len(plans) > MAX_LT_PLANS:
                self._destroy_plan(plans.popitem(last=False)[1])
        if entry is None:
            return False
        if bias is not None and entry.bias_set != bias:
            entry.bias[0] = bias
            lt.matmul_desc_set_attribute(entry.desc, self._bias_pointer, entry.bias_p, 8)
            entry.bias_set = bias
        one, zero = ((self._one64_p, self._zero64_p) if dtype == "float64" else
                     (self._one32_p, self._zero32_p))
        first, second, out = entry.layouts
        try:
            if entry.candidates:
                self._tune(entry, lambda algo: lt.matmul(
                    self._lt_handle, entry.desc, one, b, first, a, second, zero, c, out, c, out,
                    algo, self._ws, WORKSPACE_BYTES, self.stream))
            lt.matmul(self._lt_handle, entry.desc, one, b, first, a, second,
                      zero, c, out, c, out, entry.algo,
                      self._ws, WORKSPACE_BYTES, self.stream)
        except self._lt_error as e:
            if getattr(e, "status", None) not in self._unsupported:
                raise
            plans[key] = None
            self._destroy_plan(entry)
            return False
        return True

    def _lt_plan(self, key: tuple) -> _LtPlan | None:
        """Descriptor, layouts and the heuristic's best algorithm for `key`; None when cuBLASLt
        does not support the product."""
        dtype, tf32, epi, p, align_first, align_second, align_c = key
        lt = self._lt
        D, L = lt.MatmulDescAttribute, lt.MatrixLayoutAttribute
        P = lt.MatmulPreferenceAttribute
        t = self._types[dtype]
        compute = self._compute["tf32" if tf32 else dtype]
        scale = self._types["float64" if dtype == "float64" else "float32"]
        created: list[tuple[Callable[[int], None], int]] = []
        try:
            desc = lt.matmul_desc_create(compute, scale)
            created.append((lt.matmul_desc_destroy, desc))
            self._desc_attr(desc, D.TRANSA, p.transa)
            self._desc_attr(desc, D.TRANSB, p.transb)
            self._desc_attr(desc, D.EPILOGUE, epi)
            if epi != int(lt.Epilogue.RELU):
                self._desc_attr(desc, D.BIAS_BATCH_STRIDE, 0)
            shapes = (((p.m, p.k) if p.transa == _OP_N else (p.k, p.m)) + (p.lda, p.stride_a),
                      ((p.k, p.n) if p.transb == _OP_N else (p.n, p.k)) + (p.ldb, p.stride_b),
                      (p.m, p.n, p.ldc, p.stride_c))
            layouts = []
            for rows, cols, ld, stride in shapes:
                layout = lt.matrix_layout_create(t, rows, cols, ld)
                created.append((lt.matrix_layout_destroy, layout))
                if p.batches > 1:
                    self._layout_attr(layout, L.BATCH_COUNT, p.batches)
                    self._layout_attr(layout, L.STRIDED_BATCH_OFFSET, stride)
                layouts.append(layout)
            self._pref_attr(P.MIN_ALIGNMENT_A_BYTES, align_first)
            self._pref_attr(P.MIN_ALIGNMENT_B_BYTES, align_second)
            self._pref_attr(P.MIN_ALIGNMENT_C_BYTES, align_c)
            self._pref_attr(P.MIN_ALIGNMENT_D_BYTES, align_c)
            wanted = (TUNE_CANDIDATES if self._timer is not None and cuda_tune()
                      and p.m * p.n * p.k * p.batches >= TUNE_MIN_MACS else 1)
            heuristic = lt.MatmulHeuristicResult(wanted)
            self._count[0] = 0
            first, second, out = layouts
            lt.matmul_algo_get_heuristic(self._lt_handle, desc, first, second, out, out,
                                         self._pref, wanted, heuristic.ptr,
                                         self._count.ctypes.data)
        except BaseException as e:
            for destroy, obj in reversed(created):
                destroy(obj)
            if (isinstance(e, lt.cuBLASLtError)
                    and getattr(e, "status", None) in self._unsupported):
                return None
            raise
        found = int(self._count[0])
        states = np.atleast_1d(np.asarray(heuristic.state)).reshape(-1)[:found]
        step = lt.matmul_heuristic_result_dtype.itemsize
        algos = tuple(heuristic.ptr + i * step for i in range(found) if states[i] == 0)
        if not algos:
            for destroy, obj in reversed(created):
                destroy(obj)
            return None
        bias = np.zeros(1, np.int64)
        return _LtPlan(desc, (first, second, out), heuristic, bias, algo=algos[0],
                       bias_p=bias.ctypes.data, candidates=algos if len(algos) > 1 else ())

    def _tune(self, entry: _LtPlan, launch: Callable[[int], None]) -> None:
        """Time each candidate algorithm of `entry` on this call's operands (`launch(algo)`
        queues one product) and keep the fastest; the caller's launch after it writes the
        result with that one. Each timing is `TUNE_LAUNCHES` products back to back behind an
        untimed one (the device never waits for the host), the candidates taken in turn for
        `TUNE_ROUNDS` rounds (a clock change hits all alike), and a candidate's best round
        counts. Inside a graph capture nothing can be timed: the heuristic's first is kept
        (for good, so that every graph and call of the shape agrees). A candidate the
        library refuses at run time drops out."""
        candidates, entry.candidates = entry.candidates, ()
        timer = self._timer
        if timer is None:
            return
        best: dict = {}
        for _ in range(TUNE_ROUNDS):
            for algo in candidates:
                if best.get(algo, 0.0) is None:
                    continue

                def block(algo=algo):
                    for _ in range(TUNE_LAUNCHES):
                        launch(algo)
                try:
                    t = timer(block, lambda algo=algo: launch(algo))
                except self._lt_error as e:
                    if getattr(e, "status", None) not in self._unsupported:
                        raise
                    best[algo] = None
                    continue
                if t is None:
                    return
                best[algo] = min(best.get(algo) or t, t)
        timings = tuple((algo, best[algo] / TUNE_LAUNCHES) for algo in candidates
                        if best.get(algo) is not None)
        if timings:
            entry.algo = min(timings, key=lambda t: t[1])[0]
            entry.timings = timings

    def _destroy_plan(self, entry: _LtPlan | None) -> None:
        if entry is None:
            return
        for layout in entry.layouts:
            self._lt.matrix_layout_destroy(layout)
        self._lt.matmul_desc_destroy(entry.desc)

    # ------------------------------------------------------------------ lifetime
    def _abandon(self) -> None:
        """`close()` after a failed `__init__`, whose error is the one worth raising."""
        try:
            self.close()
        except BlasError:
            pass

    def close(self) -> None:
        """Destroy every cached cuBLASLt plan, the preference and both handles (idempotent;
        every one is tried, the first failure is raised after). The workspace is released with
        the last reference to it."""
        lt, failure = self._lt, None
        plans, self._plans = self._plans, OrderedDict()
        steps: list[tuple[Callable[[int], None], int]] = []
        for entry in plans.values():
            if entry is not None:
                steps += [(lt.matrix_layout_destroy, layout) for layout in entry.layouts]
                steps.append((lt.matmul_desc_destroy, entry.desc))
        if self._pref is not None:
            steps.append((lt.matmul_preference_destroy, self._pref))
        if self._lt_handle is not None:
            steps.append((lt.destroy, self._lt_handle))
        if self._handle is not None:
            steps.append((self._cublas.destroy, self._handle))
        self._pref = self._lt_handle = self._handle = None
        self._workspace = None
        for destroy, obj in steps:
            try:
                destroy(obj)
            except self._errors as e:
                failure = failure or e
        if failure is not None:
            raise BlasError(f"closing cuBLAS: {type(failure).__name__}: {failure}") from failure
