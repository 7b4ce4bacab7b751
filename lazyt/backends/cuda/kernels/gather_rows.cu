// index_select along dim 0 of a tensor whose trailing dims are one dense run of `inner`
// elements: out[r, c] = x[index[r], c]. Each thread moves {{ vec }} elements of one row
// ({{ vec }} = 4: one 16-byte load and store, where the rows and offsets allow it), with no
// per-element coordinate walk. An index outside [0, dim_size) writes 0 and records the failure
// in error slot `slot` (raised on the next read).
// {{ elem }} is the dtype's bit type ({{ vec_t }} for 4 of them); {{ index }} the index type.
//
// info (u32): [threads, inner / vec, x_off, x_row_stride, idx_off, idx_stride, slot, dim_size]
{{ enable }}
extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
kernel(const {{ elem }}* __restrict__ x, const {{ index }}* __restrict__ index,
       {{ elem }}* __restrict__ out, unsigned int* __restrict__ errors,
       const unsigned int* __restrict__ info) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int t = g * {{ workgroup_size_x }}u + threadIdx.x;
    if (t >= info[0]) {
        return;
    }
    const unsigned int row = t / info[1];
    const unsigned int col = (t - row * info[1]) * {{ vec }}u;
    const {{ index }} k = index[info[4] + row * info[5]];
    const unsigned long long dst = (unsigned long long)t * {{ vec }}u;
    if (k < 0 || (unsigned long long)k >= info[7]) {
        atomicExch(&errors[2u * info[6]], 1u);
        atomicExch(&errors[2u * info[6] + 1u], (unsigned int)k);
#pragma unroll
        for (unsigned int e = 0u; e < {{ vec }}u; ++e) {
            out[dst + e] = ({{ elem }})0;
        }
        return;
    }
    const unsigned long long src = info[2] + (unsigned long long)k * info[3] + col;
#if {{ vec }} == 4
    *reinterpret_cast<{{ vec_t }}*>(out + dst) = *reinterpret_cast<const {{ vec_t }}*>(x + src);
#else
    out[dst] = x[src];
#endif
}
