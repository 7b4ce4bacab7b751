"""lazyt: a lazy tensor runtime with pluggable backends (numpy, wgpu, CUDA), autodiff,
elementwise fusion and user-registered fused kernels."""
from __future__ import annotations

__version__ = "0.1.0"

import os as _os
import sys as _sys

# OpenBLAS's idle threads spin for 2**28 cycles (~0.1 s) after every BLAS call, and the fused
# executor's threads then wait for the cores they occupy: on a 16-core host a BERT forward ran
# 1.9x slower. 2**18 cycles still covers the gap between a model's back-to-back matmuls. The
# variable is read when numpy loads OpenBLAS, so this only applies when lazyt is imported
# before numpy; a value set by the user always wins (see README, "Threads").
if "numpy" not in _sys.modules:
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")

from .backends.base import Backend
from .device import devices as _devices
from . import stack as _stack  # noqa: F401  (builds device stacks)
from .creation import (arange, empty, empty_like, eye, from_dlpack, from_numpy, full, full_like,
                       manual_seed, ones, ones_like, rand, rand_like, randint, randn,
                       randn_like, tensor, zeros, zeros_like)
from .device import Device, device, get_default_device, set_default_device
from .device import device as _device_of
from .dispatch import Dispatch, DispatchTensor
from .dtype import (DType, bool_, finfo, float16, float32, float64, iinfo, int8, int16, int32,
                    int64, uint8)
from .errors import (CaptureError, DeviceError, DistributedError, DivisionByZeroError, DTypeError,
                     FusionError, GradError, UnsafeLoadError,
                     IndexOutOfRangeError,
                     InvalidArgumentError,
                     KernelCompileError, KernelLanguageError, LazytError,
                     MetadataMismatchError, MissingImplError, ShapeError)
from .functional import *  # noqa: F401,F403
from .functional import __all__ as _functional_all
from .tensor import Tensor
from .autodiff import (Gradients, enable_grad, inference_mode, is_grad_enabled, no_grad,
                       set_grad_enabled)
from . import fusion, kernels, nn, optim, utils  # noqa: E402  (subpackages)
from .capture import capturing, compile  # noqa: A004 - lazyt.compile, as torch.compile

bool = bool_  # noqa: A001 - `lazyt.bool` names the dtype, as `torch.bool` does


def sync(device=None) -> None:
    """Execute all pending work (on one device, or on every device used so far)."""
    devs = [_device_of(device)] if device is not None else _devices()
    for d in devs:
        if d._stack is not None:
            d._stack.sync()


__all__ = [
    "Backend", "Device", "Dispatch", "DispatchTensor", "DType", "Tensor", "arange", "bool",
    "bool_", "device", "empty", "empty_like", "eye", "float16", "float32", "float64",
    "from_dlpack", "from_numpy", "full", "full_like", "get_default_device", "int8", "int16", "int32", "int64", "manual_seed",
    "ones", "ones_like", "rand", "rand_like", "randint", "randn", "randn_like",
    "set_default_device", "sync", "tensor", "zeros", "zeros_like", "LazytError", "ShapeError",
    "DTypeError", "DeviceError", "IndexOutOfRangeError", "InvalidArgumentError", "MissingImplError", "GradError",
    "FusionError", "MetadataMismatchError", "KernelLanguageError", "KernelCompileError",
    "Gradients", "enable_grad", "inference_mode", "is_grad_enabled", "no_grad",
    "set_grad_enabled", "fusion", "kernels", "nn", "optim", "utils",
    "CaptureError", "compile", "capturing", "uint8", "DistributedError", "finfo", "iinfo",
    "DivisionByZeroError", "UnsafeLoadError",
] + list(_functional_all)

# torch's elementwise math and layout ops, as composites (lazyt/mathops.py, lazyt/layout.py)
from .mathops import *  # noqa: E402,F401,F403
from .mathops import __all__ as _mathops_all  # noqa: E402
from .layout import *  # noqa: E402,F401,F403
from .layout import __all__ as _layout_all  # noqa: E402

__all__ += [n for n in _mathops_all + _layout_all if n not in __all__]

# torch's masked/scattered writes, einsum, and more reductions, as composites
# (lazyt/selection.py, lazyt/einsum.py, lazyt/reductions.py)
from .selection import *  # noqa: E402,F401,F403
from .selection import __all__ as _selection_all  # noqa: E402
from .einsum import *  # noqa: E402,F401,F403
from .einsum import __all__ as _einsum_all  # noqa: E402
from .reductions import *  # noqa: E402,F401,F403
from .reductions import __all__ as _reductions_all  # noqa: E402

__all__ += [n for n in _selection_all + _einsum_all + _reductions_all if n not in __all__]

# more of torch's elementwise, reduction, linear-algebra and layout ops (lazyt/moreops.py)
from .moreops import *  # noqa: E402,F401,F403
from .moreops import __all__ as _moreops_all  # noqa: E402

__all__ += [n for n in _moreops_all if n not in __all__]

# torch's order statistics, searching and data-dependent ops (unique, bincount, histc, ...),
# cdist, heaviside, sinc (lazyt/moreops2.py)
from .moreops2 import *  # noqa: E402,F401,F403
from .moreops2 import __all__ as _moreops2_all  # noqa: E402

__all__ += [n for n in _moreops2_all if n not in __all__]

# tensordot, addcmul/addcdiv, atleast_*d, block_diag, cov, trapezoid, frexp, ... (moreops3.py)
from .moreops3 import *  # noqa: E402,F401,F403
from .moreops3 import __all__ as _moreops3_all  # noqa: E402

__all__ += [n for n in _moreops3_all if n not in __all__]

# scatters into a slice, index or diagonal, gcd/lcm, remainder, fmin/fmax, signbit, hsplit/
# vsplit/dsplit (moreops4.py)
from .moreops4 import *  # noqa: E402,F401,F403
from .moreops4 import __all__ as _moreops4_all  # noqa: E402

__all__ += [n for n in _moreops4_all if n not in __all__]

# torch.linalg's determinant, inverse, solve and norms (lazyt.linalg), with torch's top-level
# det, logdet, slogdet and inverse
from . import linalg  # noqa: E402
from .linalg import TOP_LEVEL as _linalg_top  # noqa: E402

globals().update(_linalg_top)
__all__ += ["linalg"] + [n for n in _linalg_top if n not in __all__]

# special functions (erfc, erfinv, lgamma, digamma, polygamma, i0, ...; lazyt/special_fns.py)
# and torch.special's namespace (lazyt.special)
from .special_fns import *  # noqa: E402,F401,F403
from .special_fns import __all__ as _special_all  # noqa: E402
from . import special  # noqa: E402

__all__ += [n for n in _special_all if n not in __all__] + ["special"]

# igamma/igammac, nextafter and Tensor.polygamma (lazyt/special_more.py)
from .special_more import *  # noqa: E402,F401,F403
from .special_more import __all__ as _special_more_all  # noqa: E402

__all__ += [n for n in _special_more_all if n not in __all__]

# torch's older top-level linear algebra: svd (U, S, V), cholesky_solve, triangular_solve,
# lu/lu_unpack/lu_solve, pinverse, nuclear_norm, mvlgamma, ... (lazyt/linalg_forms.py)
from .linalg_forms import *  # noqa: E402,F401,F403
from .linalg_forms import __all__ as _linalg_forms_all  # noqa: E402

__all__ += [n for n in _linalg_forms_all if n not in __all__]

# torch's other names (multiply, divide, arccos, ...), the in-place forms of the shape-keeping
# methods (exp_, sigmoid_, tril_, ...) and small Tensor queries (lazyt/aliases.py)
from . import aliases as _aliases  # noqa: E402

__all__ += [n for n in _aliases._install() if n not in __all__]

# torch's top-level forms of nn.functional ops (in ATen's argument order), RNN cells, view
# copies, dtype rules and small queries (lazyt/aten_forms.py)
from .aten_forms import *  # noqa: E402,F401,F403
from .aten_forms import __all__ as _aten_forms_all  # noqa: E402
from .aten_forms import inclusive_range as _aten_forms_range  # noqa: E402

__all__ += [n for n in _aten_forms_all if n not in __all__]

# window functions: hann, hamming, blackman, bartlett, kaiser (lazyt/windows.py)
from .windows import *  # noqa: E402,F401,F403
from .windows import __all__ as _windows_all  # noqa: E402

__all__ += [n for n in _windows_all if n not in __all__]

# torch.save / torch.load for state dicts and tensors (lazyt/serialization.py)
from .serialization import load, save  # noqa: E402

__all__ += ["save", "load"]

# random generators and samplers: Generator, seed, get_rng_state, randperm, bernoulli,
# multinomial, normal, poisson, ... (lazyt/sampling.py); manual_seed returns the generator
from .sampling import *  # noqa: E402,F401,F403
from .sampling import __all__ as _sampling_all  # noqa: E402

__all__ += [n for n in _sampling_all if n not in __all__]

# torch.autograd's functional API: grad, backward(inputs=), functional.jacobian/vjp/jvp
from . import autograd  # noqa: E402

__all__ += ["autograd"]

# torch.testing's assert_close, gradcheck and check_extension (lazyt/testing.py)
from . import testing  # noqa: E402

__all__ += ["testing"]

# torch.func's transforms: vmap, grad, grad_and_value, vjp, jvp, jacrev, jacfwd, linearize,
# functional_call, stack_module_state (lazyt/func.py); torch.vmap is the same function
from . import func  # noqa: E402
from .func import vmap  # noqa: E402

__all__ += ["func", "vmap"]

# mixed precision (torch.amp: autocast, GradScaler; torch.autocast is the same class) and
# torch.distributions' core (lazyt/amp.py, lazyt/distributions/)
from . import amp, distributions  # noqa: E402
from .amp import autocast  # noqa: E402

__all__ += ["amp", "autocast", "distributions"]

# torch.range (deprecated, inclusive end): an attribute only, so `from lazyt import *` keeps
# Python's range
range = _aten_forms_range  # noqa: A001
