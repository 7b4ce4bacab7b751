"""`x[key]`: torch/numpy basic indexing (ints, slices with any step, `None`, `...`) and one
integer index tensor (or list), built from the `slice`, `reshape` and `index_select` ops."""
from __future__ import annotations

import numpy as np

from . import shape as sh
from .dispatch import Dispatch, DispatchTensor
from .errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError
from .functional import binary, index_tensor, refuse_byte_index, where
from .ops import BinaryOp


def _is_mask(k) -> bool:
    return (isinstance(k, DispatchTensor) and k.dtype.name == "bool") or \
        (isinstance(k, np.ndarray) and k.dtype == np.bool_)


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


def getitem(x: DispatchTensor, key) -> DispatchTensor:
    if _is_mask(key):
        return _masked(x, key)
    if not isinstance(key, tuple):
        key = (key,)
    shape = x.shape
    nd = len(shape)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
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

    slices, out_shape, tensor_index = [], [], None
    dim = 0
    sliced = False
    for k in expanded:
        if k is None:
            out_shape.append(1)
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
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            if not -n <= i < n:
                raise IndexOutOfRangeError(f"getitem: index {i} is out of bounds for dim {dim} "
                                           f"of size {n} (shape {shape})")
            i %= n
            slices.append((i, i + 1, 1))
            sliced = True
        elif isinstance(k, (DispatchTensor, list, np.ndarray)) and tensor_index is None:
            refuse_byte_index("getitem", k)
            idx = index_tensor("getitem", k, x)
            # negative entries count from the end
            idx = where(binary(BinaryOp.LT, idx, 0), binary(BinaryOp.ADD, idx, n), idx)
            tensor_index = (len(out_shape), dim, idx)
            slices.append((0, n, 1))
            out_shape.append(None)
        else:
            raise DTypeError(f"getitem: unsupported index {k!r}; lazyt supports ints, slices, "
                             "None, Ellipsis and one integer index tensor")
        dim += 1
    out = Dispatch.slice(x, tuple(slices)) if sliced else x
    if tensor_index is not None:
        pos, src_dim, idx = tensor_index
        flat = Dispatch.reshape(idx, (sh.numel(idx.shape),)) if idx.ndim != 1 else idx
        out = Dispatch.helper("index_select", out, src_dim, flat)
        out_shape[pos:pos + 1] = list(idx.shape)
    final = tuple(out_shape)
    if final != out.shape:
        out = Dispatch.reshape(out, final)
    return out
