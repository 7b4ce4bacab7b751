// Row-wise float32 kernels over rows of `n` contiguous elements. LANES threads share a row
// (WG / LANES rows per block, so short rows keep every thread busy); each loops over its row
// with a stride of LANES and the row's statistics are combined by warp shuffles (a tree in
// shared memory when a row has more than 32 lanes).
// Rows past the end still take part in the barriers; they read and write nothing.
//
// softmax_rows:    y = exp(x - max) / sum(exp(x - max))
// layer_norm_rows: y = (x - mean) * rsqrt(var + eps) [* w] [+ b]   (biased variance)
//   info (u32): [n_rows, n, x_offset, has_weight, has_bias, eps (f32 bits), w_offset, b_offset]
// rms_norm_rows:   y = x * rsqrt(mean(x * x) + eps) [* w]   (info as layer_norm_rows')
// attention_rows:  y = softmax(x * scale [+ w]) with `w` an additive mask read through
//   broadcast strides; a row whose every score is -inf gives zeros (no key to attend to).
//   info (u32): [n_rows, n, x_offset, has_mask, n_dims, scale (f32 bits), w_offset,
//   w_col_stride, then per dim of the rows' index (outermost first): size, w_stride]
constexpr unsigned int WG = {{ workgroup_size_x }}u;
constexpr unsigned int LANES = {{ lanes }}u;
__shared__ float partial[WG];

// This thread's row (it may be past the end: check against info[0]).
__device__ __forceinline__ unsigned int row_of(unsigned int lid) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    return g * (WG / LANES) + lid / LANES;
}

// The sum (is_max = false) or maximum (true) of `v` over the LANES threads of each row: warp
// shuffles when a row's lanes fit in one warp (every thread of the block calls this, so the
// full mask holds), else a tree in shared memory.
__device__ __forceinline__ float combine_row(unsigned int lid, float v, bool is_max) {
    if (LANES <= 32u) {
        for (unsigned int step = LANES / 2u; step > 0u; step = step / 2u) {
            const float o = __shfl_xor_sync(0xffffffffu, v, step);
            v = is_max ? max(v, o) : v + o;
        }
        return v;
    }
    partial[lid] = v;
    __syncthreads();
    const unsigned int lane = lid % LANES;
    for (unsigned int step = LANES / 2u; step > 0u; step = step / 2u) {
        if (lane < step) {
            const float a = partial[lid];
            const float c = partial[lid + step];
            partial[lid] = is_max ? max(a, c) : a + c;
        }
        __syncthreads();
    }
    const float r = partial[lid - lane];
    __syncthreads();  // every thread has read it before `partial` is reused
    return r;
}

// Each thread keeps up to CACHE of its row's values in registers (one read and one exp per
// element); values past CACHE * LANES are read again in each pass.
constexpr unsigned int CACHE = 8u;

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
softmax_rows(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ w,
             const float* __restrict__ b, const unsigned int* __restrict__ info) {
    const unsigned int lid = threadIdx.x;
    const unsigned int row = row_of(lid);
    const unsigned int lane = lid % LANES;
    const unsigned int n = row < info[0] ? info[1] : 0u;
    const unsigned int base = info[2] + row * n;
    float v[CACHE];
    float m = -3.40282347e38f;
#pragma unroll
    for (unsigned int c = 0u; c < CACHE; ++c) {
        const unsigned int i = lane + c * LANES;
        v[c] = i < n ? x[base + i] : -3.40282347e38f;
        m = max(m, v[c]);
    }
    for (unsigned int i = lane + CACHE * LANES; i < n; i = i + LANES) {
        m = max(m, x[base + i]);
    }
    m = combine_row(lid, m, true);
    float s = 0.0f;
#pragma unroll
    for (unsigned int c = 0u; c < CACHE; ++c) {
        v[c] = expf(v[c] - m);
        s = s + (lane + c * LANES < n ? v[c] : 0.0f);
    }
    for (unsigned int i = lane + CACHE * LANES; i < n; i = i + LANES) {
        s = s + expf(x[base + i] - m);
    }
    s = combine_row(lid, s, false);
    const float inv = 1.0f / s;
#pragma unroll
    for (unsigned int c = 0u; c < CACHE; ++c) {
        const unsigned int i = lane + c * LANES;
        if (i < n) {
            y[row * n + i] = v[c] * inv;
        }
    }
    for (unsigned int i = lane + CACHE * LANES; i < n; i = i + LANES) {
        y[row * n + i] = expf(x[base + i] - m) * inv;
    }
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
layer_norm_rows(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ w,
                const float* __restrict__ b, const unsigned int* __restrict__ info) {
    const unsigned int lid = threadIdx.x;
    const unsigned int row = row_of(lid);
    const unsigned int lane = lid % LANES;
    const unsigned int n = row < info[0] ? info[1] : 0u;
    const unsigned int base = info[2] + row * n;
    float s = 0.0f;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        s = s + x[base + i];
    }
    const float mean = combine_row(lid, s, false) / (float)n;
    float q = 0.0f;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        const float c = x[base + i] - mean;
        q = q + c * c;
    }
    const float r = rsqrtf(combine_row(lid, q, false) / (float)n + __uint_as_float(info[5]));
    const bool has_w = info[3] != 0u;
    const bool has_b = info[4] != 0u;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        float v = (x[base + i] - mean) * r;
        if (has_w) {
            v = v * w[info[6] + i];
        }
        if (has_b) {
            v = v + b[info[7] + i];
        }
        y[row * n + i] = v;
    }
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
rms_norm_rows(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ w,
              const float* __restrict__ b, const unsigned int* __restrict__ info) {
    const unsigned int lid = threadIdx.x;
    const unsigned int row = row_of(lid);
    const unsigned int lane = lid % LANES;
    const unsigned int n = row < info[0] ? info[1] : 0u;
    const unsigned int base = info[2] + row * n;
    float q = 0.0f;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        const float v = x[base + i];
        q = q + v * v;
    }
    const float r = rsqrtf(combine_row(lid, q, false) / (float)n + __uint_as_float(info[5]));
    const bool has_w = info[3] != 0u;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        float v = x[base + i] * r;
        if (has_w) {
            v = v * w[info[6] + i];
        }
        y[row * n + i] = v;
    }
}

__device__ __forceinline__ float masked_score(const float* __restrict__ x,
                                              const float* __restrict__ w, unsigned int at,
                                              unsigned int mask_at, float scale, bool has_mask) {
    float v = x[at] * scale;
    if (has_mask) {
        v = v + w[mask_at];
    }
    return v;
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
attention_rows(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ w,
               const float* __restrict__ b, const unsigned int* __restrict__ info) {
    const unsigned int lid = threadIdx.x;
    const unsigned int row = row_of(lid);
    const unsigned int lane = lid % LANES;
    const unsigned int n = row < info[0] ? info[1] : 0u;
    const unsigned int base = info[2] + row * n;
    const bool has_mask = info[3] != 0u;
    const float scale = __uint_as_float(info[5]);
    const unsigned int col = info[7];
    unsigned int mask_base = info[6];
    unsigned int r = row;
    for (unsigned int d = info[4]; d > 0u; d = d - 1u) {
        const unsigned int size = info[6u + 2u * d];
        mask_base = mask_base + (r % size) * info[7u + 2u * d];
        r = r / size;
    }
    const float neg_inf = __uint_as_float(0xff800000u);
    float v[CACHE];
    float m = neg_inf;
#pragma unroll
    for (unsigned int c = 0u; c < CACHE; ++c) {
        const unsigned int i = lane + c * LANES;
        v[c] = i < n ? masked_score(x, w, base + i, mask_base + i * col, scale, has_mask)
                     : neg_inf;
        m = max(m, v[c]);
    }
    for (unsigned int i = lane + CACHE * LANES; i < n; i = i + LANES) {
        m = max(m, masked_score(x, w, base + i, mask_base + i * col, scale, has_mask));
    }
    m = combine_row(lid, m, true);
    const bool dead = m == neg_inf;
    float s = 0.0f;
#pragma unroll
    for (unsigned int c = 0u; c < CACHE; ++c) {
        v[c] = lane + c * LANES < n && !dead ? expf(v[c] - m) : 0.0f;
        s = s + v[c];
    }
    for (unsigned int i = lane + CACHE * LANES; i < n; i = i + LANES) {
        s = s + expf(masked_score(x, w, base + i, mask_base + i * col, scale, has_mask) - m);
    }
    s = combine_row(lid, s, false);
    const float inv = dead ? 0.0f : 1.0f / s;
#pragma unroll
    for (unsigned int c = 0u; c < CACHE; ++c) {
        const unsigned int i = lane + c * LANES;
        if (i < n) {
            y[row * n + i] = v[c] * inv;
        }
    }
    for (unsigned int i = lane + CACHE * LANES; i < n; i = i + LANES) {
        const float e = expf(masked_score(x, w, base + i, mask_base + i * col, scale, has_mask) - m);
        y[row * n + i] = dead ? 0.0f : e * inv;
    }
}

#ifdef LZ_BLOCK
// layer_norm_block_rows: layer_norm_rows of a fused elementwise block's one value, computed
// where the row is read, so the value never goes through memory (a residual add inside the
// norm). The host pastes `lz_block(in0, in1, in2, in3, info, at, i)` in front of this file:
// the block's value at element i of the row that starts at element `at`, from up to four
// float32 inputs (unused ones get any buffer). Each of the three passes computes the block
// again from inputs the caches still hold: keeping 8 values a thread in registers was slower
// on MiniLM's 12 residual norms (H200: 115 µs per forward against 107). The sums run in
// layer_norm_rows' order, so the result has its bits.
//   info (u32): [n_rows, n, 0, has_weight, has_bias, eps (f32 bits), w_offset, b_offset,
//   then the words lz_block reads (input offsets, the block's scalars)]
extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
layer_norm_block_rows(const float* __restrict__ in0, const float* __restrict__ in1,
                      const float* __restrict__ in2, const float* __restrict__ in3,
                      float* __restrict__ y, const float* __restrict__ w,
                      const float* __restrict__ b, const unsigned int* __restrict__ info) {
    const unsigned int lid = threadIdx.x;
    const unsigned int row = row_of(lid);
    const unsigned int lane = lid % LANES;
    const unsigned int n = row < info[0] ? info[1] : 0u;
    const unsigned int at = row * n;
    float s = 0.0f;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        s = s + lz_block(in0, in1, in2, in3, info, at, i);
    }
    const float mean = combine_row(lid, s, false) / (float)n;
    float q = 0.0f;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        const float d = lz_block(in0, in1, in2, in3, info, at, i) - mean;
        q = q + d * d;
    }
    const float r = rsqrtf(combine_row(lid, q, false) / (float)n + __uint_as_float(info[5]));
    const bool has_w = info[3] != 0u;
    const bool has_b = info[4] != 0u;
    for (unsigned int i = lane; i < n; i = i + LANES) {
        float v = (lz_block(in0, in1, in2, in3, info, at, i) - mean) * r;
        if (has_w) {
            v = v * w[info[6] + i];
        }
        if (has_b) {
            v = v + b[info[7] + i];
        }
        y[at + i] = v;
    }
}
#endif
