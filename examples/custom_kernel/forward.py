"""Forward impls of `fused_matmul_add_relu`: numpy, and one Cube impl for wgpu and CUDA whose
kernel source (`kernel.wgsl` or `kernel.cu`) is picked by the runtime's language."""
from __future__ import annotations

import math

import numpy as np

from lazyt.backends import Cube, Numpy
from lazyt.backends.cube import (CubeCount, CubeDim, CubeTensor, SourceKernel, build_info,
                                 elem_storage, into_contiguous, kernel_source)

from .lib import Backend, output_shape

FusedMatmulAddReluRaw = kernel_source(wgsl="kernel.wgsl", cuda="kernel.cu")
CUBE_DIM = CubeDim(16, 16)


@Backend.implement(Numpy)
def fused_matmul_add_relu(lhs: np.ndarray, rhs: np.ndarray, bias: np.ndarray) -> np.ndarray:
    out = np.matmul(lhs, rhs)
    out += bias
    return np.maximum(out, 0, out=out)


@Backend.implement(Cube)
def fused_matmul_add_relu(lhs: CubeTensor, rhs: CubeTensor, bias: CubeTensor) -> CubeTensor:  # noqa: F811
    lhs.assert_is_on_same_device(rhs)
    lhs.assert_is_on_same_device(bias)
    # the kernel indexes lhs/rhs through their strides; bias is read at the output's index
    lhs, rhs, bias = into_contiguous(lhs), into_contiguous(rhs), into_contiguous(bias)
    shape_out = output_shape(lhs.shape, rhs.shape, bias.shape)
    client = lhs.client
    nbytes = math.prod(shape_out) * elem_storage(lhs.dtype, client.lang).itemsize
    output = CubeTensor.new_contiguous(client, lhs.device, shape_out, client.empty(nbytes),
                                       lhs.dtype)
    info = build_info([lhs, rhs, output])  # [rank, strides of each, shapes of each] as u32
    batches = math.prod(shape_out[:-2])
    count = CubeCount(math.ceil(shape_out[-1] / CUBE_DIM.x),
                      math.ceil(shape_out[-2] / CUBE_DIM.y), max(1, min(batches, 65535)))
    kernel = SourceKernel(FusedMatmulAddReluRaw.for_lang(client.lang), CUBE_DIM, dtype=lhs.dtype)
    client.launch(kernel, count, [lhs, rhs, bias, output, info])
    return output
