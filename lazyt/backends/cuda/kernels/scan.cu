// Running sums (cumsum) along rows of `n` contiguous elements, accumulated in {{ acc }}.
//
// scan_rows:  one block per row. The row is walked in tiles of WG * 4 elements: each thread
//             scans its 4 consecutive elements, the block scans the threads' totals
//             (Hillis-Steele in shared memory) and a carry joins the tiles.
// scan_lines: one thread per row, a plain loop (many short rows).
//
// info (u32): [n_rows, n, x_offset, 0]
{{ enable }}
constexpr unsigned int WG = {{ workgroup_size_x }}u;

__device__ __forceinline__ {{ acc }} at(const {{ elem }}* __restrict__ x, unsigned int i,
                                        unsigned int n, unsigned int base) {
    if (i >= n) { return ({{ acc }})0; }
    return {{ load }};
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
scan_rows(const {{ elem }}* __restrict__ x, {{ elem }}* __restrict__ y,
          const unsigned int* __restrict__ info) {
    __shared__ {{ acc }} sums[WG];
    const unsigned int lid = threadIdx.x;
    const unsigned int row = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    if (row >= info[0]) { return; }  // the same for the whole block
    const unsigned int n = info[1];
    const unsigned int base = info[2] + row * n;
    const unsigned int out = row * n;
    {{ acc }} carry = ({{ acc }})0;
    for (unsigned int t = 0u; t < n; t = t + WG * 4u) {
        const unsigned int i = t + lid * 4u;
        const {{ acc }} v0 = at(x, i, n, base);
        const {{ acc }} v1 = v0 + at(x, i + 1u, n, base);
        const {{ acc }} v2 = v1 + at(x, i + 2u, n, base);
        const {{ acc }} v3 = v2 + at(x, i + 3u, n, base);
        sums[lid] = v3;
        __syncthreads();
        for (unsigned int s = 1u; s < WG; s = s * 2u) {
            {{ acc }} add = ({{ acc }})0;
            if (lid >= s) { add = sums[lid - s]; }
            __syncthreads();
            sums[lid] = sums[lid] + add;
            __syncthreads();
        }
        {{ acc }} before = carry;
        if (lid > 0u) { before = carry + sums[lid - 1u]; }
        if (i < n) { y[out + i] = {{ store0 }}; }
        if (i + 1u < n) { y[out + i + 1u] = {{ store1 }}; }
        if (i + 2u < n) { y[out + i + 2u] = {{ store2 }}; }
        if (i + 3u < n) { y[out + i + 3u] = {{ store3 }}; }
        carry = carry + sums[WG - 1u];
        __syncthreads();  // every thread has read `sums` before the next tile
    }
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
scan_lines(const {{ elem }}* __restrict__ x, {{ elem }}* __restrict__ y,
           const unsigned int* __restrict__ info) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int row = g * WG + threadIdx.x;
    if (row >= info[0]) { return; }
    const unsigned int n = info[1];
    const unsigned int base = info[2] + row * n;
    {{ acc }} acc = ({{ acc }})0;
    for (unsigned int i = 0u; i < n; i = i + 1u) {
        acc = acc + at(x, i, n, base);
        y[row * n + i] = {{ store_acc }};
    }
}
