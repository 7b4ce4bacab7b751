// Attention in one float32 kernel: out = softmax(q k^T * scale [+ mask]) v, without writing
// the scores anywhere (the running-maximum softmax over tiles of keys).
//
// A block takes BQ query rows of one batch entry (every leading dim: batch, heads) and walks
// the keys in tiles of BK; its query rows and each tile of k and v (and of the mask, when it
// is one row for every query) sit in shared memory. Threads work in groups of G lanes of one
// warp. Group n owns the RQ query rows n, n + NG, n + 2 NG, ... of the block (the groups of a
// warp read rows in distinct banks): per tile, lane c computes the scores of those rows against
// keys c, c + G, c + 2G, ... (so the lanes of a group read k rows in distinct banks), which
// costs one shared-memory read per 4 * RQ multiply-adds. The group's lanes meet through
// shuffles for each row's maximum; the probabilities go through a shared tile of the warp's
// own rows to the product with v, where lane c keeps DVL columns of the rows' output. Rows of
// scores that are all -inf give zeros (no key to attend to), as `attention_rows` does.
// With SKIP and one mask row for every query, a tile whose keys are all masked out (mask
// below -1e30: -inf, or the dtype's lowest as BERT's padding) is skipped once a tile with a
// key left in has run: its weights exp(score - max) would all be exactly 0 (the running
// maximum is then a finite score at least 1e30 above theirs), so the result is the same bits.
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
constexpr unsigned int T = {{ workgroup_size_x }}u;
constexpr unsigned int RQ = {{ rq }}u;   // query rows per group of lanes
constexpr unsigned int BK = {{ bk }}u;   // keys per tile
constexpr bool VEC = {{ vec }};          // q, k, v rows are whole aligned float4s, columns dense
constexpr bool SKIP = {{ skip }};        // skip tiles of keys the shared mask row leaves out
constexpr unsigned int G = 8u;           // lanes per group
constexpr unsigned int NG = T / G;     // groups per block
constexpr unsigned int BQ = NG * RQ;
constexpr unsigned int KT = BK / G;      // keys per lane and tile
constexpr unsigned int DP = (D + 3u) / 4u * 4u;                    // padded with zeros:
constexpr unsigned int DVP = (DV + 4u * G - 1u) / (4u * G) * (4u * G);   // whole float4s
constexpr unsigned int DVL = DVP / G;
// rows of q, k and probabilities are 4 * (an odd number) floats apart: the float4s of
// consecutive rows that lanes read at once fall in distinct banks
constexpr unsigned int KS = (DP / 4u) % 2u == 0u ? DP + 4u : DP;
constexpr unsigned int PS = (BK / 4u) % 2u == 0u ? BK + 4u : BK;
constexpr unsigned int LEAD = 21u;
static_assert(T % 32u == 0u && 32u % G == 0u, "whole warps of whole groups");
static_assert(BK % G == 0u && BK % 4u == 0u, "the lanes share a tile's keys; float4 reads");
static_assert(RQ >= 1u, "at least one query row per group");

// rows [r0, r0 + R) of a strided matrix (columns C, a multiple of 4) into shared rows of W
// floats, with zeros past its n_rows rows and n_cols columns; float4 loads where VEC
template <unsigned int R, unsigned int C, unsigned int W>
__device__ __forceinline__ void stage(float (*dst)[W], const float* __restrict__ src,
                                      unsigned long long off, unsigned int rs, unsigned int cs,
                                      unsigned int r0, unsigned int n_rows,
                                      unsigned int n_cols) {
    constexpr unsigned int V = VEC ? 4u : 1u;
    constexpr unsigned int N = R * C / V;
#pragma unroll
    for (unsigned int it = 0u; it < (N + T - 1u) / T; ++it) {
        const unsigned int e = threadIdx.x + it * T;
        if (N % T == 0u || e < N) {
            const unsigned int r = e / (C / V);
            const unsigned int i = e % (C / V) * V;
            const bool in = r0 + r < n_rows && i < n_cols;
            const unsigned long long at = off + (unsigned long long)(r0 + r) * rs;
            if (VEC) {
                *reinterpret_cast<float4*>(&dst[r][i]) = in ?
                    *reinterpret_cast<const float4*>(src + at + i) : make_float4(0.f, 0.f, 0.f, 0.f);
            } else {
                dst[r][i] = in ? src[at + (unsigned long long)i * cs] : 0.0f;
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
attention_fused(const float* __restrict__ q, const float* __restrict__ k,
                const float* __restrict__ v, const float* __restrict__ mask,
                float* __restrict__ out, const unsigned int* __restrict__ info) {
    __shared__ __align__(16) float qs[BQ][KS];
    __shared__ __align__(16) float ks[BK][KS];
    __shared__ __align__(16) float vs[BK][DVP];
    __shared__ __align__(16) float ps[BQ][PS];   // a warp writes and reads its rows only
    __shared__ float ms[BK];
    const unsigned int tid = threadIdx.x;
    const unsigned int n = tid / G;              // this lane's group: rows n + NG * r
    const unsigned int c = tid % G;              // this lane in its group
    const unsigned int bid = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    if (bid >= info[20]) {
        return;
    }
    const unsigned int tiles = info[5];
    unsigned int g = bid / tiles;
    const unsigned int first = (bid % tiles) * BQ;
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
    stage<BQ, DP, KS>(qs, q, qo, info[7], info[8], first, lq, D);
    float m[RQ];         // each row's running maximum
    float l[RQ];         // this lane's part of the row's running sum of exp(score - m)
    float o[RQ][DVL];    // this lane's columns of the row's output, scaled by the same
#pragma unroll
    for (unsigned int r = 0u; r < RQ; ++r) {
        m[r] = neg_inf;
        l[r] = 0.0f;
#pragma unroll
        for (unsigned int x = 0u; x < DVL; ++x) {
            o[r][x] = 0.0f;
        }
    }
    bool seen = false;   // a tile with a key the mask leaves in has run (the same in every lane)
    for (unsigned int j0 = 0u; j0 < lk; j0 = j0 + BK) {
        __syncthreads();   // the previous tile has been read
        if (mask_shared) {
            bool live = false;
            for (unsigned int kk = tid; kk < BK; kk = kk + T) {
                const unsigned int j = j0 + kk;
                const float mv = j < lk ? mask[mo + (unsigned long long)j * info[17]] : 0.0f;
                ms[kk] = mv;
                live = live || !(mv < -1e30f);
            }
            if (SKIP) {
                const bool any = __syncthreads_or(live) != 0;
                if (!any && seen) {
                    continue;
                }
                seen = seen || any;
            }
        }
        stage<BK, DP, KS>(ks, k, ko, info[10], info[11], j0, lk, D);
        stage<BK, DVP, DVP>(vs, v, vo, info[13], info[14], j0, lk, DV);
        __syncthreads();
        float s[RQ][KT];
#pragma unroll
        for (unsigned int r = 0u; r < RQ; ++r) {
#pragma unroll
            for (unsigned int t = 0u; t < KT; ++t) {
                s[r][t] = 0.0f;
            }
        }
#pragma unroll
        for (unsigned int i = 0u; i < DP; i = i + 4u) {
            float4 qv[RQ];
#pragma unroll
            for (unsigned int r = 0u; r < RQ; ++r) {
                qv[r] = *reinterpret_cast<const float4*>(&qs[n + NG * r][i]);
            }
#pragma unroll
            for (unsigned int t = 0u; t < KT; ++t) {
                const float4 kv = *reinterpret_cast<const float4*>(&ks[c + G * t][i]);
#pragma unroll
                for (unsigned int r = 0u; r < RQ; ++r) {
                    s[r][t] = fmaf(qv[r].x, kv.x, s[r][t]);
                    s[r][t] = fmaf(qv[r].y, kv.y, s[r][t]);
                    s[r][t] = fmaf(qv[r].z, kv.z, s[r][t]);
                    s[r][t] = fmaf(qv[r].w, kv.w, s[r][t]);
                }
            }
        }
#pragma unroll
        for (unsigned int r = 0u; r < RQ; ++r) {
            const unsigned int row = first + n + NG * r;
            const unsigned long long mrow = mo + (unsigned long long)row * info[16];
            float top = neg_inf;
#pragma unroll
            for (unsigned int t = 0u; t < KT; ++t) {
                const unsigned int j = j0 + c + G * t;
                float sc = s[r][t] * scale;
                if (mask_shared) {
                    sc = sc + ms[c + G * t];
                } else if (has_mask && row < lq && j < lk) {
                    sc = sc + mask[mrow + (unsigned long long)j * info[17]];
                }
                s[r][t] = j < lk ? sc : neg_inf;
                top = max(top, s[r][t]);
            }
#pragma unroll
            for (unsigned int x = 1u; x < G; x = x * 2u) {
                top = max(top, __shfl_xor_sync(0xffffffffu, top, x));
            }
            const float mn = max(m[r], top);
            // mn = -inf: every score so far is -inf, nothing to add yet
            const float alpha = mn == neg_inf ? 1.0f : expf(m[r] - mn);
            float sum = 0.0f;
#pragma unroll
            for (unsigned int t = 0u; t < KT; ++t) {
                const float p = mn == neg_inf ? 0.0f : expf(s[r][t] - mn);
                sum = sum + p;
                ps[n + NG * r][c + G * t] = p;
            }
            l[r] = l[r] * alpha + sum;
#pragma unroll
            for (unsigned int x = 0u; x < DVL; ++x) {
                o[r][x] = o[r][x] * alpha;
            }
            m[r] = mn;
        }
        __syncwarp();   // the warp's probabilities are written
#pragma unroll 4
        for (unsigned int j = 0u; j < BK; j = j + 4u) {
            float4 pv[RQ];
#pragma unroll
            for (unsigned int r = 0u; r < RQ; ++r) {
                pv[r] = *reinterpret_cast<const float4*>(&ps[n + NG * r][j]);
            }
#pragma unroll
            for (unsigned int t = 0u; t < 4u; ++t) {
#pragma unroll
                for (unsigned int x = 0u; x < DVL; x = x + 4u) {
                    const float4 vv = *reinterpret_cast<const float4*>(&vs[j + t][c * DVL + x]);
#pragma unroll
                    for (unsigned int r = 0u; r < RQ; ++r) {
                        const float p = t == 0u ? pv[r].x : t == 1u ? pv[r].y :
                                        t == 2u ? pv[r].z : pv[r].w;
                        o[r][x] = fmaf(p, vv.x, o[r][x]);
                        o[r][x + 1u] = fmaf(p, vv.y, o[r][x + 1u]);
                        o[r][x + 2u] = fmaf(p, vv.z, o[r][x + 2u]);
                        o[r][x + 3u] = fmaf(p, vv.w, o[r][x + 3u]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (unsigned int r = 0u; r < RQ; ++r) {
        float lt = l[r];
#pragma unroll
        for (unsigned int x = 1u; x < G; x = x * 2u) {
            lt = lt + __shfl_xor_sync(0xffffffffu, lt, x);
        }
        const float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
        const unsigned int row = first + n + NG * r;
        if (row < lq) {
            float* dst = out + oo + (unsigned long long)row * info[19];
#pragma unroll
            for (unsigned int x = 0u; x < DVL; ++x) {
                if (c * DVL + x < DV) {
                    dst[c * DVL + x] = o[r][x] * inv;
                }
            }
        }
    }
}
