// torch.gather (and index_select, through a broadcast index view): out[c] = x[c with
// c[dim] = index[c]] for every coordinate c of the index's shape. An index outside
// [0, dim_size) writes 0 and records the failure in error slot `slot` (raised on the next read).
// {{ elem }} is the dtype's bit type; {{ index }} the index element type (int or long long).
//
// info (u32): [n, rank, dim, x_off, idx_off, slot, dim_size, shape[rank], x_strides[rank],
//              idx_strides[rank]]
{{ enable }}
extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
kernel(const {{ elem }}* __restrict__ x, const {{ index }}* __restrict__ index,
       {{ elem }}* __restrict__ out, unsigned int* __restrict__ errors,
       const unsigned int* __restrict__ info) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int i = g * {{ workgroup_size_x }}u + threadIdx.x;
    if (i >= info[0]) {
        return;
    }
    const unsigned int rank = info[1];
    const unsigned int dim = info[2];
    unsigned int rem = i;
    unsigned int at_x = info[3];
    unsigned int at_idx = info[4];
    unsigned int x_dim_stride = 0u;
    for (unsigned int j = rank; j > 0u; j = j - 1u) {
        const unsigned int d = j - 1u;
        const unsigned int size = info[7u + d];
        const unsigned int c = rem % size;
        rem = rem / size;
        at_idx = at_idx + c * info[7u + 2u * rank + d];
        if (d == dim) {
            x_dim_stride = info[7u + rank + d];
        } else {
            at_x = at_x + c * info[7u + rank + d];
        }
    }
    const {{ index }} k = index[at_idx];
    if (k < 0 || (unsigned long long)k >= info[6]) {
        atomicExch(&errors[2u * info[5]], 1u);
        atomicExch(&errors[2u * info[5] + 1u], (unsigned int)k);
        out[i] = ({{ elem }})0;
        return;
    }
    out[i] = x[at_x + (unsigned int)k * x_dim_stride];
}
