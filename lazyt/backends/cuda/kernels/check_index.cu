// Range check of a strided index view: an element outside [0, size) is recorded in error
// slot `slot` (raised on the next read). {{ index }} is the index element type (int or long long).
// info (u32): [n, rank, off, slot, size, shape[rank], strides[rank]]
extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
kernel(const {{ index }}* __restrict__ index, unsigned int* __restrict__ errors,
       const unsigned int* __restrict__ info) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int i = g * {{ workgroup_size_x }}u + threadIdx.x;
    if (i >= info[0]) {
        return;
    }
    const unsigned int rank = info[1];
    unsigned int rem = i;
    unsigned int at = info[2];
    for (unsigned int j = rank; j > 0u; j = j - 1u) {
        const unsigned int d = j - 1u;
        const unsigned int size = info[5u + d];
        at = at + (rem % size) * info[5u + rank + d];
        rem = rem / size;
    }
    const {{ index }} k = index[at];
    if (k < 0 || (unsigned long long)k >= info[4]) {
        atomicExch(&errors[2u * info[3]], 1u);
        atomicExch(&errors[2u * info[3] + 1u], (unsigned int)k);
    }
}
