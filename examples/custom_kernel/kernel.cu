// output = max(lhs @ rhs + bias, 0) over batches: lhs [.., M, K], rhs [.., K, N], bias and
// output [.., M, N]. A batch dim of lhs or rhs of size 1 is broadcast against the output's.
// One thread computes one output element: x walks the columns, y the rows, z the batches
// (looping when there are more batches than the grid's z can hold). Launch with a block of
// ({{ workgroup_size_x }}, {{ workgroup_size_y }}, {{ workgroup_size_z }}).
//
// info = build_info([lhs, rhs, output]), u32, R = info[0] the common rank:
//   info[1 + t * R + d]       stride (in elements) of dim d of tensor t (0 lhs, 1 rhs, 2 output)
//   info[1 + (3 + t) * R + d] size of dim d of tensor t
// Every index goes through the strides. bias is contiguous with the output's shape, so it is read
// at the output's index: the caller makes both contiguous.

constexpr unsigned int LHS = 0u;
constexpr unsigned int RHS = 1u;
constexpr unsigned int OUT = 2u;

__device__ __forceinline__ unsigned int dim_stride(const unsigned int* info, unsigned int t,
                                                   unsigned int d) {
    return info[1u + t * info[0] + d];
}

__device__ __forceinline__ unsigned int dim_size(const unsigned int* info, unsigned int t,
                                                 unsigned int d) {
    return info[1u + (3u + t) * info[0] + d];
}

extern "C" __global__ void
__launch_bounds__({{ workgroup_size_x }} * {{ workgroup_size_y }} * {{ workgroup_size_z }})
kernel(const {{ elem }}* __restrict__ lhs,
       const {{ elem }}* __restrict__ rhs,
       const {{ elem }}* __restrict__ bias,
       {{ elem }}* __restrict__ output,
       const unsigned int* __restrict__ info) {
    const unsigned int rank = info[0];
    const unsigned int row_dim = rank - 2u;
    const unsigned int col_dim = rank - 1u;
    const unsigned int m = dim_size(info, OUT, row_dim);
    const unsigned int n = dim_size(info, OUT, col_dim);
    const unsigned int k_len = dim_size(info, LHS, col_dim);
    const unsigned int row = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m || col >= n) {
        return;
    }

    unsigned int batches = 1u;
    for (unsigned int d = 0u; d < row_dim; ++d) {
        batches *= dim_size(info, OUT, d);
    }

    const unsigned int lhs_row = dim_stride(info, LHS, row_dim);
    const unsigned int lhs_k = dim_stride(info, LHS, col_dim);
    const unsigned int rhs_k = dim_stride(info, RHS, row_dim);
    const unsigned int rhs_col = dim_stride(info, RHS, col_dim);
    const unsigned int out_row = dim_stride(info, OUT, row_dim);
    const unsigned int out_col = dim_stride(info, OUT, col_dim);
    const {{ elem }} zero = static_cast<{{ elem }}>(0.0f);

    for (unsigned int batch = blockIdx.z * blockDim.z + threadIdx.z; batch < batches;
         batch += gridDim.z * blockDim.z) {
        // The batch's coordinates in the output (last batch dim fastest); a size-1 dim of an
        // input maps every coordinate to 0.
        unsigned int rest = batch;
        unsigned int lhs_base = 0u;
        unsigned int rhs_base = 0u;
        unsigned int out_base = 0u;
        for (unsigned int i = 0u; i < row_dim; ++i) {
            const unsigned int d = row_dim - 1u - i;
            const unsigned int size = dim_size(info, OUT, d);
            const unsigned int coord = rest % size;
            rest /= size;
            lhs_base += (coord % dim_size(info, LHS, d)) * dim_stride(info, LHS, d);
            rhs_base += (coord % dim_size(info, RHS, d)) * dim_stride(info, RHS, d);
            out_base += coord * dim_stride(info, OUT, d);
        }

        {{ elem }} acc = zero;
        for (unsigned int k = 0u; k < k_len; ++k) {
            acc += lhs[lhs_base + row * lhs_row + k * lhs_k]
                 * rhs[rhs_base + k * rhs_k + col * rhs_col];
        }
        const unsigned int index = out_base + row * out_row + col * out_col;
        const {{ elem }} value = acc + bias[index];
        output[index] = value > zero ? value : zero;
    }
}
