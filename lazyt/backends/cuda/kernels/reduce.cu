// Reduction of a strided view over its "reduced" dims, one output per kept position.
// The placeholders come from the renderer's reduce recipes: the accumulator type, its
// identity, how two accumulators combine and how the last one becomes the output value; `load`
// converts an input element to the accumulator type.
//
// info (u32): [n_out, r_len, splits, chunk, rank_keep, rank_red, offset, divisor,
//              keep_shape[rank_keep], keep_strides[rank_keep], red_shape[rank_red], red_strides[rank_red]]
// reduce_rows: one block per (output, split): a strided loop, then a tree in shared memory down
//   to 32 partials and warp shuffles for the last 32 (the same pairs as a full tree); with
//   splits > 1 each block reduces one chunk of the reduced positions into a partial.
//   The block size is a power of two >= 32.
// reduce_threads: one thread per output, a sequential loop (many outputs, few inputs each).
{{ enable }}
struct Acc {
    {{ acc }} v;
    unsigned int i;
};

{{ helpers }}

__device__ __forceinline__ Acc combine(Acc a, Acc b) {
    {{ combine }}
}

// `info` is in scope for `finish` (mean divides by info[7]).
__device__ __forceinline__ {{ out_elem }} finish(Acc r, const unsigned int* __restrict__ info) {
    return ({{ out_elem }})({{ finish }});
}

__device__ __forceinline__ unsigned int keep_offset(const unsigned int* __restrict__ info,
                                                    unsigned int o) {
    const unsigned int rank = info[4];
    unsigned int rem = o;
    unsigned int at = info[6];
    for (unsigned int j = rank; j > 0u; j = j - 1u) {
        const unsigned int d = j - 1u;
        const unsigned int size = info[8u + d];
        at = at + (rem % size) * info[8u + rank + d];
        rem = rem / size;
    }
    return at;
}

__device__ __forceinline__ unsigned int red_offset(const unsigned int* __restrict__ info,
                                                   unsigned int r) {
    const unsigned int base = 8u + 2u * info[4];
    const unsigned int rank = info[5];
    if (rank == 1u) {
        return r * info[base + 1u];
    }
    unsigned int rem = r;
    unsigned int at = 0u;
    for (unsigned int j = rank; j > 0u; j = j - 1u) {
        const unsigned int d = j - 1u;
        const unsigned int size = info[base + d];
        at = at + (rem % size) * info[base + rank + d];
        rem = rem / size;
    }
    return at;
}

__device__ __forceinline__ Acc element(const {{ in_elem }}* __restrict__ input, unsigned int at,
                                       unsigned int r) {
    return Acc{({{ acc }})({{ load }}), r};
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
reduce_rows(const {{ in_elem }}* __restrict__ input, {{ out_elem }}* __restrict__ output,
            const unsigned int* __restrict__ info) {
    constexpr unsigned int WG = {{ workgroup_size_x }}u;
    __shared__ {{ acc }} shared_v[WG];
    __shared__ unsigned int shared_i[WG];
    const unsigned int lid = threadIdx.x;
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int splits = info[2];
    if (g >= info[0] * splits) {
        return;  // the same for the whole block
    }
    const unsigned int o = g / splits;
    const unsigned int r0 = (g % splits) * info[3];
    const unsigned int r1 = min(r0 + info[3], info[1]);
    const unsigned int base = keep_offset(info, o);
    Acc acc = Acc{({{ acc }})({{ identity }}), 0xffffffffu};
    for (unsigned int r = r0 + lid; r < r1; r = r + WG) {
        acc = combine(acc, element(input, base + red_offset(info, r), r));
    }
    shared_v[lid] = acc.v;
    shared_i[lid] = acc.i;
    __syncthreads();
    for (unsigned int step = WG / 2u; step >= 32u; step = step / 2u) {
        if (lid < step) {
            const Acc merged = combine(Acc{shared_v[lid], shared_i[lid]},
                                       Acc{shared_v[lid + step], shared_i[lid + step]});
            shared_v[lid] = merged.v;
            shared_i[lid] = merged.i;
        }
        __syncthreads();
    }
    if (lid < 32u) {
        // lanes >= step combine values nobody reads: lane l < step holds the tree's partial l
        Acc a = Acc{shared_v[lid], shared_i[lid]};
        for (unsigned int step = 16u; step > 0u; step = step / 2u) {
            Acc b;
            b.v = __shfl_down_sync(0xffffffffu, a.v, step);
            b.i = __shfl_down_sync(0xffffffffu, a.i, step);
            a = combine(a, b);
        }
        if (lid == 0u) {
            output[g] = finish(a, info);
        }
    }
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
reduce_threads(const {{ in_elem }}* __restrict__ input, {{ out_elem }}* __restrict__ output,
               const unsigned int* __restrict__ info) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int o = g * {{ workgroup_size_x }}u + threadIdx.x;
    if (o >= info[0]) {
        return;
    }
    const unsigned int base = keep_offset(info, o);
    Acc acc = Acc{({{ acc }})({{ identity }}), 0xffffffffu};
    for (unsigned int r = 0u; r < info[1]; r = r + 1u) {
        acc = combine(acc, element(input, base + red_offset(info, r), r));
    }
    output[o] = finish(acc, info);
}
