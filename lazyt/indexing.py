"""`x[key]`: torch's indexing. Basic indices (ints, slices with any step, `None`, `...`) become
one `slice` and a `reshape`; advanced ones (integer index tensors or lists, boolean masks) one
`index_select`: a lone index tensor along its dim, several (broadcast together) over their dims
merged into one, at a flat position computed lazily from them. Ints apply first, as in torch
(numpy counts them among the advanced indices, which can move the index dims elsewhere)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import shape as sh
from .capture_state import STATE as _CAPTURE
from .dispatch import Dispatch, DispatchTensor
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from .functional import as_tensor, binary, index_tensor, refuse_byte_index, where
from .ops import BinaryOp


def _is_mask(k) -> bool:
    return (isinstance(k, DispatchTensor) and k.dtype.name == "bool") or \
        (isinstance(k, np.ndarray) and k.dtype == np.bool_)


def _is_bool_list(k) -> bool:
    """A (nested) list of Python bools, which torch reads as a boolean mask."""
    if not isinstance(k, (list, tuple)) or not k:
        return False
    return all(isinstance(e, (bool, np.bool_)) or _is_bool_list(e) for e in k)


def _is_empty_list(k) -> bool:
    return isinstance(k, list) and all(_is_empty_list(e) for e in k)


def _masked(x: DispatchTensor, mask) -> DispatchTensor:
    """`x[mask]` for a boolean mask over x's leading dims: the selected elements (or rows),
    in order, as torch and numpy give them. The output's length depends on the mask's values,
    so the mask is read now (pending work runs)."""
    m = Dispatch.to_numpy(mask) if isinstance(mask, DispatchTensor) else np.asarray(mask)
    shape = x.shape
    if m.shape != tuple(shape[:m.ndim]):
        raise IndexOutOfRangeError(f"getitem: boolean mask of shape {m.shape} does not match "
                                   f"the leading dims of the tensor's shape {shape}")
    lead = int(np.prod(shape[:m.ndim])) if m.ndim else 1
    rest = tuple(shape[m.ndim:])
    flat = Dispatch.reshape(x, (lead,) + rest)
    picks = np.flatnonzero(m.reshape(-1)).astype(np.int64)
    idx = Dispatch.from_numpy(picks, x.device, type(x))
    return Dispatch.helper("index_select", flat, 0, idx)


@dataclass(frozen=True)
class _Advanced:
    """One advanced entry of a key: an index (tensor, list or array) over input dim `dims[0]`,
    or a boolean mask over `dims` (read to the host: `picks` are its flat positions there)."""
    key: object
    dims: tuple
    pos: int            # its place in the result's dims before the index dims go in
    picks: np.ndarray | None = None


def getitem(x: DispatchTensor, key) -> DispatchTensor:
    if _is_mask(key) or (isinstance(key, list) and _is_bool_list(key)):
        return _masked(x, key)
    if not isinstance(key, tuple):
        key = (key,)
    key = tuple(np.asarray(k) if _is_bool_list(k) else list(k) if isinstance(k, tuple) else k
                for k in key)
    shape = x.shape
    nd = len(shape)
    consumed = sum(k.ndim if _is_mask(k) else 1 for k in key
                   if k is not None and k is not Ellipsis)
    if consumed > nd:
        raise IndexOutOfRangeError(f"getitem: too many indices ({consumed}) for a tensor of "
                                   f"rank {nd}")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexOutOfRangeError("getitem: an index can only have a single ellipsis")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (nd - consumed))
        else:
            expanded.append(k)
    if not any(k is Ellipsis for k in key):
        expanded.extend([slice(None)] * (nd - consumed))

    # out_shape: the result's dims in key order (None marks an advanced entry's place);
    # kinds: what made each of them ("new" for None, "slice", "adv")
    slices, out_shape, kinds, advanced, int_dims = [], [], [], [], []
    dim = 0
    sliced = False
    for k in expanded:
        if k is None:
            out_shape.append(1)
            kinds.append("new")
            continue
        n = shape[dim]
        if isinstance(k, slice):
            if k.step == 0:
                raise InvalidArgumentError("getitem: slice step cannot be zero")
            start, stop, step = k.indices(n)
            length = sh.slice_len(start, stop, step)
            if length == 0:
                start, stop, step = 0, 0, 1
            slices.append((start, stop, step))
            sliced |= (start, stop, step) != (0, n, 1)
            out_shape.append(length)
            kinds.append("slice")
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            if not -n <= i < n:
                raise IndexOutOfRangeError(f"getitem: index {i} is out of bounds for dim {dim} "
                                           f"of size {n} (shape {shape})")
            i %= n
            slices.append((i, i + 1, 1))
            int_dims.append(dim)
            sliced = True
        elif _is_mask(k):
            dims = tuple(range(dim, dim + k.ndim))
            advanced.append(_Advanced(k, dims, len(out_shape), _mask_picks(k, shape, dims)))
            slices.extend((0, shape[d], 1) for d in dims)
            out_shape.append(None)
            kinds.append("adv")
            dim += k.ndim
            continue
        elif isinstance(k, (DispatchTensor, list, np.ndarray)):
            refuse_byte_index("getitem", k)
            if _is_empty_list(k):   # torch reads `[]` as no positions, not float data
                k = np.zeros(np.shape(k), np.int64)
            advanced.append(_Advanced(k, (dim,), len(out_shape)))
            slices.append((0, n, 1))
            out_shape.append(None)
            kinds.append("adv")
        else:
            raise DTypeError(f"getitem: unsupported index {k!r}; lazyt supports ints, slices, "
                             "None, Ellipsis, integer index tensors or lists and boolean masks")
        dim += 1
    out = Dispatch.slice(x, tuple(slices)) if sliced else x
    if len(advanced) > 1 or (advanced and advanced[0].picks is not None):
        return _gather_advanced(out, advanced, int_dims, out_shape, kinds)
    if advanced:
        pos, src_dim = advanced[0].pos, advanced[0].dims[0]
        idx = index_tensor("getitem", advanced[0].key, x)
        # negative entries count from the end
        n = shape[src_dim]
        idx = where(binary(BinaryOp.LT, idx, 0), binary(BinaryOp.ADD, idx, n), idx)
        flat = Dispatch.reshape(idx, (sh.numel(idx.shape),)) if idx.ndim != 1 else idx
        out = Dispatch.helper("index_select", out, src_dim, flat)
        out_shape[pos:pos + 1] = list(idx.shape)
    final = tuple(out_shape)
    if final != out.shape:
        out = Dispatch.reshape(out, final)
    return out


def _mask_picks(m, shape: tuple, dims: tuple) -> np.ndarray:
    """The flat positions of a boolean mask's True entries over `dims` of `shape` (its values
    are read: they size the output)."""
    if m.ndim == 0:
        raise DTypeError("getitem: a 0-d boolean index inside a tuple is not supported")
    a = Dispatch.to_numpy(m) if isinstance(m, DispatchTensor) else np.asarray(m)
    want = tuple(shape[d] for d in dims)
    if a.shape != want:
        where_ = f"dim {dims[0]}" if len(dims) == 1 else f"dims {dims[0]}..{dims[-1]}"
        raise IndexOutOfRangeError(f"getitem: boolean mask of shape {a.shape} does not match "
                                   f"{where_} of the tensor's shape {shape}, which are {want}")
    return np.flatnonzero(a.reshape(-1)).astype(np.int64)


def _component(x: DispatchTensor, a: _Advanced, shape: tuple):
    """Entry `a`'s positions over its dims, negative ones counted from the end: a host array
    when its values are known here (checked now), else a lazy int64 tensor, checked when it
    runs by an `index_select` of `arange(n)`, as the single-index path's kernel checks."""
    if a.picks is not None:
        return a.picks
    n = shape[a.dims[0]]
    k = a.key
    host = None
    if isinstance(k, DispatchTensor):
        idx = index_tensor("getitem", k, x)
        if _CAPTURE.session is None:   # a replay gets new values: don't read them now
            host = Dispatch.host_value(idx)
    else:
        host = np.asarray(k)
        if host.dtype.kind not in "iu":
            index_tensor("getitem", k, x)              # raises torch's DTypeError
    if host is not None:
        if host.size and (host.min() < -n or host.max() >= n):
            bad = int(host.min() if host.min() < -n else host.max())
            raise IndexOutOfRangeError(f"getitem: index {bad} is out of bounds for dim "
                                       f"{a.dims[0]} of size {n} (index shape {host.shape})")
        return np.where(host < 0, host + n, host).astype(np.int64)
    idx = where(binary(BinaryOp.LT, idx, 0), binary(BinaryOp.ADD, idx, n), idx)
    line = Dispatch.reshape(idx, (sh.numel(idx.shape),)) if idx.ndim != 1 else idx
    ids = as_tensor(np.arange(n, dtype=np.int64), x)
    line = Dispatch.helper("index_select", ids, 0, line)
    return Dispatch.reshape(line, idx.shape) if idx.ndim != 1 else line


def _gather_advanced(out: DispatchTensor, advanced: list, int_dims: list, out_shape: list,
                     kinds: list) -> DispatchTensor:
    """Several advanced entries (or a mask) on the sliced `out`: torch's layout. Their dims
    are merged into one and read by one `index_select` at the flat positions
    `sum(index_e * stride_e)`; the broadcast index dims replace the entries when those are
    adjacent in the key (ints left out, as torch applies them first), else go first."""
    shape = out.shape
    comps = [_component(out, a, shape) for a in advanced]
    try:
        bshape = sh.broadcast("getitem", *(tuple(c.shape) for c in comps))
    except ShapeError:
        raise IndexOutOfRangeError(
            "getitem: shape mismatch: indexing tensors could not be broadcast together with "
            "shapes " + ", ".join(str(tuple(c.shape)) for c in comps)) from None
    sizes = [sh.numel(tuple(shape[d] for d in a.dims)) for a in advanced]
    host_flat, lazy_flat, stride = None, None, 1
    for c, size in reversed(list(zip(comps, sizes))):
        if isinstance(c, np.ndarray):
            term = c * stride
            host_flat = term if host_flat is None else host_flat + term
        else:
            term = binary(BinaryOp.MUL, c, stride) if stride != 1 else c
            lazy_flat = term if lazy_flat is None else binary(BinaryOp.ADD, lazy_flat, term)
        stride *= size
    if host_flat is not None:
        host_flat = as_tensor(np.ascontiguousarray(host_flat, dtype=np.int64), out)
    flat = host_flat if lazy_flat is None else lazy_flat if host_flat is None else \
        binary(BinaryOp.ADD, lazy_flat, host_flat)

    # the index dims go where the first entry of rank >= 1 stood if those entries are
    # adjacent (a None or slice between them separates them), else first
    ranked = [a.pos for a, c in zip(advanced, comps) if c.ndim] or [advanced[0].pos]
    between = kinds[ranked[0]:ranked[-1] + 1]
    adjacent = all(k == "adv" for k in between)
    lead = kinds[:ranked[0]].count("slice") if adjacent else 0

    if int_dims:   # torch applies ints first: their dims go
        out = Dispatch.reshape(out, tuple(s for d, s in enumerate(shape) if d not in int_dims))
        shape = out.shape
    grouped = [d - sum(1 for i in int_dims if i < d) for a in advanced for d in a.dims]
    kept = [d for d in range(len(shape)) if d not in grouped]
    order = kept[:lead] + grouped + kept[lead:]
    if order != sorted(order):
        out = Dispatch.permute(out, tuple(order))
    kept_sizes = tuple(shape[d] for d in kept)
    merged = kept_sizes[:lead] + (stride,) + kept_sizes[lead:]
    if merged != out.shape:
        out = Dispatch.reshape(out, merged)
    line = Dispatch.reshape(flat, (sh.numel(bshape),)) if flat.ndim != 1 else flat
    out = Dispatch.helper("index_select", out, lead, line)

    final = [] if adjacent else list(bshape)
    for i, (size, kind) in enumerate(zip(out_shape, kinds)):
        if kind != "adv":
            final.append(size)
        elif adjacent and i == ranked[0]:
            final.extend(bshape)
    if tuple(final) != out.shape:
        out = Dispatch.reshape(out, tuple(final))
    return out
