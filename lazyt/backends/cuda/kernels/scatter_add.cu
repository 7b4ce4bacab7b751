// torch.scatter_add (and index_add, through a broadcast index view), deterministically: one
// thread per output element adds, in index order, every src element whose index points at it
// (a fixed order gives the same bits on every run, unlike atomics).
// Out-of-range indices never match; `check_index` reports them.
//
// info (u32): [n, rank, dim, x_off, idx_off, src_off, len, shape[rank], x_strides[rank],
//              idx_shape[rank], idx_strides[rank], src_strides[rank]]
// shape is the output's (= x's); len = idx_shape[dim], the positions scanned.
{{ enable }}
extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
kernel(const {{ elem }}* __restrict__ x, const {{ index }}* __restrict__ index,
       const {{ elem }}* __restrict__ src, {{ elem }}* __restrict__ out,
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
    unsigned int at_src = info[5];
    {{ index }} wanted = 0;
    bool inside = true;
    for (unsigned int j = rank; j > 0u; j = j - 1u) {
        const unsigned int d = j - 1u;
        const unsigned int size = info[7u + d];
        const unsigned int c = rem % size;
        rem = rem / size;
        at_x = at_x + c * info[7u + rank + d];
        if (d == dim) {
            wanted = ({{ index }})c;
        } else {
            inside = inside && c < info[7u + 2u * rank + d];
            at_idx = at_idx + c * info[7u + 3u * rank + d];
            at_src = at_src + c * info[7u + 4u * rank + d];
        }
    }
    auto acc = {{ load_x }};
    if (inside) {
        const unsigned int idx_step = info[7u + 3u * rank + dim];
        const unsigned int src_step = info[7u + 4u * rank + dim];
        for (unsigned int p = 0u; p < info[6]; p = p + 1u) {
            if (index[at_idx + p * idx_step] == wanted) {
                acc = acc + {{ load_src }};
            }
        }
    }
    out[i] = {{ store }};
}
