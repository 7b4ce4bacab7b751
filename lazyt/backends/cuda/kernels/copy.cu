// Strided copy: out[out_off + coord . out_strides] = in[in_off + coord . in_strides] for every
// coordinate of `shape` (contiguous(), cat, strided writes). {{ elem }} is the dtype's bit type
// (unsigned short, unsigned int or unsigned long long): the bits are copied.
//
// info (u32): [n, rank, in_off, out_off, shape[rank], in_strides[rank], out_strides[rank]]
{{ enable }}
extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
kernel(const {{ elem }}* __restrict__ src, {{ elem }}* __restrict__ dst,
       const unsigned int* __restrict__ info) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int i = g * {{ workgroup_size_x }}u + threadIdx.x;
    if (i >= info[0]) {
        return;
    }
    const unsigned int rank = info[1];
    unsigned int rem = i;
    unsigned int src_at = info[2];
    unsigned int dst_at = info[3];
    for (unsigned int j = rank; j > 0u; j = j - 1u) {
        const unsigned int d = j - 1u;
        const unsigned int size = info[4u + d];
        const unsigned int c = rem % size;
        rem = rem / size;
        src_at = src_at + c * info[4u + rank + d];
        dst_at = dst_at + c * info[4u + 2u * rank + d];
    }
    dst[dst_at] = src[src_at];
}
