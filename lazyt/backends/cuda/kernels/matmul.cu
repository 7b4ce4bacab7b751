// Batched matmul c[batch] = a[batch] @ b[batch] (strided operands, broadcast batch dims), the
// register-blocked kernel for the products no BLAS call takes (no cuBLAS, integer dtypes). Tiles: BM = 64 rows x BN = 64
// columns per block, K stepped by BK = 16, 256 threads, each thread 4 x 4 outputs (rows
// ty + 16 r, columns tx + 16 q: conflict-free shared reads, coalesced stores). The next K
// step is fetched into registers while the current one is multiplied. Every edge is checked:
// any M, N, K and any strides (offsets wrap as u32). Computed in {{ acc }} (float, double, int or
// long long), stored as {{ elem }}.
//
// info (u32): [M, N, K, a_off, a_rs, a_ks, b_off, b_ks, b_cs, batches, brank,
//              bshape[brank], a_bstride[brank], b_bstride[brank], (bias_off)]
// a[row, k] is at a_off + a_batch + row * a_rs + k * a_ks, b[k, col] at
// b_off + b_batch + k * b_ks + col * b_cs; the batch index is decomposed over bshape (last dim
// fastest) and dotted with a_bstride / b_bstride. c is contiguous [batches, M, N].
// Grid: (ceil(N / BN), ceil(M / BM), min(batches, 65535)); z loops over the batches.
// matmul_bias adds bias[bias_off + col] to every row, then max(., 0) when {{ relu }} is 1
// (NaN stays NaN).
{{ enable }}
constexpr unsigned int BM = 64u;
constexpr unsigned int BN = 64u;
constexpr unsigned int BK = 16u;
constexpr unsigned int THREADS = 256u;
constexpr unsigned int TM = 4u;      // rows per thread
constexpr unsigned int TN = 4u;      // columns per thread
constexpr unsigned int LOADS = 4u;   // elements of each tile a thread loads: BM * BK / THREADS
constexpr unsigned int PAD = 2u;     // shared row padding: k-fastest tile stores hit distinct banks
static_assert(BM * BK == LOADS * THREADS && BN * BK == LOADS * THREADS, "tile loads");
static_assert((BM / TM) * (BN / TN) == THREADS, "thread tile");

typedef {{ elem }} Elem;
typedef {{ acc }} Acc;

// c + a * b: fused for floats; integers wrap (computed unsigned).
__device__ __forceinline__ float madd(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double madd(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ int madd(int a, int b, int c) {
    return (int)((unsigned int)a * (unsigned int)b + (unsigned int)c);
}
__device__ __forceinline__ long long madd(long long a, long long b, long long c) {
    return (long long)((unsigned long long)a * (unsigned long long)b + (unsigned long long)c);
}

template <bool BIAS>
__device__ __forceinline__ void matmul_body(const Elem* __restrict__ a, const Elem* __restrict__ b,
                                            Elem* __restrict__ c, const Elem* __restrict__ bias,
                                            const unsigned int* __restrict__ info) {
    __shared__ Acc As[BK][BM + PAD];   // As[k][m]
    __shared__ Acc Bs[BK][BN + PAD];   // Bs[k][n]
    const unsigned int M = info[0], N = info[1], K = info[2];
    const unsigned int a_rs = info[4], a_ks = info[5], b_ks = info[7], b_cs = info[8];
    const unsigned int batches = info[9], brank = info[10];
    const unsigned int bias_off = BIAS ? info[11u + 3u * brank] : 0u;
    const unsigned int lid = threadIdx.x;
    const unsigned int tx = lid % (BN / TN);
    const unsigned int ty = lid / (BN / TN);
    const unsigned int m0 = blockIdx.y * BM;
    const unsigned int n0 = blockIdx.x * BN;
    // Tile element e = lid + s * THREADS: consecutive threads walk the operand's unit-stride
    // dim (k for a row-major a, m for a column-major one; n or k for b).
    const bool a_m_fast = a_rs == 1u && a_ks != 1u;
    const bool b_k_fast = b_ks == 1u && b_cs != 1u;
    unsigned int a_m[LOADS], a_k[LOADS], b_k[LOADS], b_n[LOADS];
#pragma unroll
    for (unsigned int s = 0u; s < LOADS; ++s) {
        const unsigned int e = lid + s * THREADS;
        a_m[s] = a_m_fast ? e % BM : e / BK;
        a_k[s] = a_m_fast ? e / BM : e % BK;
        b_k[s] = b_k_fast ? e % BK : e / BN;
        b_n[s] = b_k_fast ? e / BK : e % BN;
    }
    for (unsigned int batch = blockIdx.z; batch < batches; batch += gridDim.z) {
        unsigned int a_base = info[3];
        unsigned int b_base = info[6];
        unsigned int rem = batch;
        for (unsigned int j = brank; j > 0u; j = j - 1u) {
            const unsigned int d = j - 1u;
            const unsigned int size = info[11u + d];
            const unsigned int coord = rem % size;
            rem = rem / size;
            a_base = a_base + coord * info[11u + brank + d];
            b_base = b_base + coord * info[11u + 2u * brank + d];
        }
        Acc acc[TM][TN];
#pragma unroll
        for (unsigned int r = 0u; r < TM; ++r) {
#pragma unroll
            for (unsigned int q = 0u; q < TN; ++q) {
                acc[r][q] = (Acc)0;
            }
        }
        Acc ra[LOADS], rb[LOADS];
        // fetch: the K step starting at kb into ra / rb (0 outside the matrices)
        auto fetch = [&](unsigned int kb) {
#pragma unroll
            for (unsigned int s = 0u; s < LOADS; ++s) {
                const unsigned int row = m0 + a_m[s], ka = kb + a_k[s];
                ra[s] = (row < M && ka < K) ? (Acc)(a[a_base + row * a_rs + ka * a_ks]) : (Acc)0;
                const unsigned int kr = kb + b_k[s], col = n0 + b_n[s];
                rb[s] = (kr < K && col < N) ? (Acc)(b[b_base + kr * b_ks + col * b_cs]) : (Acc)0;
            }
        };
        fetch(0u);
        for (unsigned int k0 = 0u; k0 < K; k0 += BK) {
#pragma unroll
            for (unsigned int s = 0u; s < LOADS; ++s) {
                As[a_k[s]][a_m[s]] = ra[s];
                Bs[b_k[s]][b_n[s]] = rb[s];
            }
            __syncthreads();
            if (k0 + BK < K) {
                fetch(k0 + BK);
            }
#pragma unroll
            for (unsigned int kk = 0u; kk < BK; ++kk) {
                Acc av[TM], bv[TN];
#pragma unroll
                for (unsigned int r = 0u; r < TM; ++r) {
                    av[r] = As[kk][ty + r * (BM / TM)];
                }
#pragma unroll
                for (unsigned int q = 0u; q < TN; ++q) {
                    bv[q] = Bs[kk][tx + q * (BN / TN)];
                }
#pragma unroll
                for (unsigned int r = 0u; r < TM; ++r) {
#pragma unroll
                    for (unsigned int q = 0u; q < TN; ++q) {
                        acc[r][q] = madd(av[r], bv[q], acc[r][q]);
                    }
                }
            }
            __syncthreads();
        }
        const unsigned int o_base = batch * M * N;
        Acc bv[TN];
#pragma unroll
        for (unsigned int q = 0u; q < TN; ++q) {
            const unsigned int col = n0 + tx + q * (BN / TN);
            bv[q] = (BIAS && col < N) ? (Acc)(bias[bias_off + col]) : (Acc)0;
        }
#pragma unroll
        for (unsigned int r = 0u; r < TM; ++r) {
            const unsigned int row = m0 + ty + r * (BM / TM);
            if (row < M) {
#pragma unroll
                for (unsigned int q = 0u; q < TN; ++q) {
                    const unsigned int col = n0 + tx + q * (BN / TN);
                    if (col < N) {
                        Acc v = acc[r][q];
                        if (BIAS) {
                            v = v + bv[q];
                            if ({{ relu }}) {
                                v = v < (Acc)0 ? (Acc)0 : v;
                            }
                        }
                        c[o_base + row * N + col] = (Elem)(v);
                    }
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(256)
matmul(const {{ elem }}* __restrict__ a, const {{ elem }}* __restrict__ b,
       {{ elem }}* __restrict__ c, const unsigned int* __restrict__ info) {
    matmul_body<false>(a, b, c, nullptr, info);
}

extern "C" __global__ void __launch_bounds__(256)
matmul_bias(const {{ elem }}* __restrict__ a, const {{ elem }}* __restrict__ b,
            {{ elem }}* __restrict__ c, const {{ elem }}* __restrict__ bias,
            const unsigned int* __restrict__ info) {
    matmul_body<true>(a, b, c, bias, info);
}
