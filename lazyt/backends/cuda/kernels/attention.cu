// Attention in one float32 kernel: out = softmax(q k^T * scale [+ mask]) v, without writing
// the scores anywhere (the running-maximum softmax over tiles of keys).
//
// A block takes BQ = T / TPR query rows of one batch entry (every leading dim: batch, heads);
// TPR threads share a row, each holding a slice of its query and of its output accumulator in
// registers (a row's score is their slices' dot products summed by warp shuffles). The block
// walks the keys in tiles of BK, each tile of k, v (and of the mask, when it is one row for
// every query) staged in shared memory. Per step of C keys a thread computes C scores,
// rescales what it has summed so far by exp(old max - new max), and adds exp(score - max) * v
// to its slice. Rows of scores that are all -inf give zeros (no key to attend to), as
// `attention_rows` does. Query rows come in, and output rows go out, through shared memory,
// so that both global accesses are coalesced.
//
// info (u32):
//   [0] query rows, [1] keys, [2] has mask, [3] scale (f32 bits), [4] leading dims,
//   [5] tiles of BQ query rows per batch entry,
//   [6..9)   q: offset, row stride, column stride
//   [9..12)  k: offset, row stride, column stride
//   [12..15) v: offset, row stride, column stride
//   [15..18) mask: offset, row (query) stride, column (key) stride (0 where broadcast)
//   [18..20) out: offset, row stride (its columns are dense)
//   [20] blocks that carry work (a grid split over y and z has a few more: they return)
//   then per leading dim, outermost first: size, q, k, v, mask and out strides
constexpr unsigned int D = {{ d }}u;     // q and k columns
constexpr unsigned int DV = {{ dv }}u;   // v and out columns
constexpr unsigned int TPR = {{ tpr }}u; // threads per query row (a power of two, <= 32)
constexpr unsigned int W = 4u * TPR;
constexpr unsigned int DP = (D + W - 1u) / W * W;      // padded with zeros: each thread of a
constexpr unsigned int DVP = (DV + W - 1u) / W * W;    // row takes whole float4s
constexpr unsigned int DL = DP / TPR;
constexpr unsigned int DVL = DVP / TPR;
constexpr unsigned int T = {{ workgroup_size_x }}u;
constexpr unsigned int BQ = T / TPR;
constexpr unsigned int BK = {{ bk }}u;
constexpr unsigned int C = {{ chunk }}u;
constexpr unsigned int SW = (D > DV ? D : DV) + 1u;
constexpr unsigned int KV = BK * DP + BK * DVP;
constexpr unsigned int LEAD = 21u;
static_assert(TPR >= 1u && TPR <= 32u && (TPR & (TPR - 1u)) == 0u,
              "threads per row: a power of two of at most a warp");
static_assert(T % 32u == 0u && T >= TPR, "whole warps, at least one row per block");
static_assert(C >= 1u && BK % C == 0u, "the steps of C keys tile the BK keys of a tile");

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
attention_fused(const float* __restrict__ q, const float* __restrict__ k,
                const float* __restrict__ v, const float* __restrict__ mask,
                float* __restrict__ out, const unsigned int* __restrict__ info) {
    // k and v tiles; before and after the walk over the keys the same memory stages the
    // query rows in and the output rows out (rows padded by one: no bank conflicts)
    __shared__ __align__(16) float tiles_mem[KV > BQ * SW ? KV : BQ * SW];
    __shared__ float ms[BK];
    float (*ks)[DP] = reinterpret_cast<float (*)[DP]>(tiles_mem);
    float (*vs)[DVP] = reinterpret_cast<float (*)[DVP]>(tiles_mem + BK * DP);
    float (*stage)[SW] = reinterpret_cast<float (*)[SW]>(tiles_mem);
    const unsigned int tid = threadIdx.x;
    const unsigned int mine = tid / TPR;          // this thread's row in the block
    const unsigned int lane = tid % TPR;          // its slice of that row
    const unsigned int bid = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    if (bid >= info[20]) {
        return;
    }
    const unsigned int tiles = info[5];
    unsigned int g = bid / tiles;
    const unsigned int first = (bid % tiles) * BQ;
    const unsigned int row = first + mine;
    const unsigned int lq = info[0];
    const unsigned int lk = info[1];
    const bool has_mask = info[2] != 0u;
    const bool mask_shared = has_mask && info[16] == 0u;   // one mask row for every query
    const float scale = __uint_as_float(info[3]);
    unsigned long long qo = info[6], ko = info[9], vo = info[12], mo = info[15], oo = info[18];
    for (unsigned int d = info[4]; d > 0u; d = d - 1u) {
        const unsigned int* w = info + LEAD + 6u * (d - 1u);
        const unsigned long long i = g % w[0];
        g = g / w[0];
        qo += i * w[1];
        ko += i * w[2];
        vo += i * w[3];
        mo += i * w[4];
        oo += i * w[5];
    }
    const float neg_inf = __uint_as_float(0xff800000u);
    for (unsigned int e = tid; e < BQ * D; e = e + T) {
        const unsigned int c = e / D;
        const unsigned int i = e % D;
        stage[c][i] = first + c < lq ? q[qo + (unsigned long long)(first + c) * info[7] +
                                         (unsigned long long)i * info[8]] : 0.0f;
    }
    __syncthreads();
    float qr[DL];
    float acc[DVL];
#pragma unroll
    for (unsigned int i = 0u; i < DL; ++i) {
        const unsigned int col = lane * DL + i;
        qr[i] = col < D ? stage[mine][col] : 0.0f;
    }
#pragma unroll
    for (unsigned int i = 0u; i < DVL; ++i) {
        acc[i] = 0.0f;
    }
    float m = neg_inf;   // the running maximum of the row's scores
    float l = 0.0f;      // the running sum of exp(score - m)
    const unsigned long long mrow = mo + (unsigned long long)row * info[16];
    for (unsigned int j0 = 0u; j0 < lk; j0 = j0 + BK) {
        __syncthreads();  // the previous tile (or the staged queries) has been read
        for (unsigned int e = tid; e < BK * DP; e = e + T) {
            const unsigned int c = e / DP;
            const unsigned int i = e % DP;
            const unsigned int j = j0 + c;
            ks[c][i] = j < lk && i < D ? k[ko + (unsigned long long)j * info[10] +
                                           (unsigned long long)i * info[11]] : 0.0f;
        }
        for (unsigned int e = tid; e < BK * DVP; e = e + T) {
            const unsigned int c = e / DVP;
            const unsigned int i = e % DVP;
            const unsigned int j = j0 + c;
            vs[c][i] = j < lk && i < DV ? v[vo + (unsigned long long)j * info[13] +
                                            (unsigned long long)i * info[14]] : 0.0f;
        }
        if (mask_shared) {
            for (unsigned int c = tid; c < BK; c = c + T) {
                const unsigned int j = j0 + c;
                ms[c] = j < lk ? mask[mo + (unsigned long long)j * info[17]] : 0.0f;
            }
        }
        __syncthreads();
        const unsigned int nk = min(BK, lk - j0);
        for (unsigned int c0 = 0u; c0 < nk; c0 = c0 + C) {
            float s[C];
            float top = neg_inf;
#pragma unroll
            for (unsigned int c = 0u; c < C; ++c) {
                const unsigned int j = j0 + c0 + c;
                float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
                for (unsigned int i = 0u; i < DL; i = i + 4u) {
                    const float4 kk = *reinterpret_cast<const float4*>(&ks[c0 + c][lane * DL + i]);
                    a0 = fmaf(qr[i], kk.x, a0);
                    a1 = fmaf(qr[i + 1u], kk.y, a1);
                    a2 = fmaf(qr[i + 2u], kk.z, a2);
                    a3 = fmaf(qr[i + 3u], kk.w, a3);
                }
                float dot = (a0 + a1) + (a2 + a3);
#pragma unroll
                for (unsigned int o = 1u; o < TPR; o = o * 2u) {
                    dot = dot + __shfl_xor_sync(0xffffffffu, dot, o);
                }
                float sc = dot * scale;
                if (mask_shared) {
                    sc = sc + ms[c0 + c];
                } else if (has_mask && row < lq && j < lk) {
                    sc = sc + mask[mrow + (unsigned long long)j * info[17]];
                }
                s[c] = j < lk ? sc : neg_inf;
                top = max(top, s[c]);
            }
            const float mn = max(m, top);
            // mn = -inf: every score so far is -inf, nothing to add yet
            const float alpha = mn == neg_inf ? 1.0f : expf(m - mn);
            l = l * alpha;
#pragma unroll
            for (unsigned int i = 0u; i < DVL; ++i) {
                acc[i] = acc[i] * alpha;
            }
#pragma unroll
            for (unsigned int c = 0u; c < C; ++c) {
                const float p = mn == neg_inf ? 0.0f : expf(s[c] - mn);
                l = l + p;
#pragma unroll
                for (unsigned int i = 0u; i < DVL; i = i + 4u) {
                    const float4 vv = *reinterpret_cast<const float4*>(&vs[c0 + c][lane * DVL + i]);
                    acc[i] = fmaf(p, vv.x, acc[i]);
                    acc[i + 1u] = fmaf(p, vv.y, acc[i + 1u]);
                    acc[i + 2u] = fmaf(p, vv.z, acc[i + 2u]);
                    acc[i + 3u] = fmaf(p, vv.w, acc[i + 3u]);
                }
            }
            m = mn;
        }
    }
    __syncthreads();   // every thread is done with the last tile
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
    for (unsigned int i = 0u; i < DVL; ++i) {
        const unsigned int col = lane * DVL + i;
        if (col < DV) {
            stage[mine][col] = acc[i] * inv;
        }
    }
    __syncthreads();
    for (unsigned int e = tid; e < BQ * DV; e = e + T) {
        const unsigned int c = e / DV;
        const unsigned int i = e % DV;
        if (first + c < lq) {
            out[oo + (unsigned long long)(first + c) * info[19] + i] = stage[c][i];
        }
    }
}
