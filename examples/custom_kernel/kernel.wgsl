// output = max(lhs @ rhs + bias, 0) over batches: lhs [.., M, K], rhs [.., K, N], bias and
// output [.., M, N]. A batch dim of lhs or rhs of size 1 is broadcast against the output's.
// One invocation computes one output element: x walks the columns, y the rows, z the batches
// (looping when there are more batches than the dispatch's z can hold).
//
// info = build_info([lhs, rhs, output]), u32, R = info[0] the common rank:
//   info[1 + t * R + d]       stride (in elements) of dim d of tensor t (0 lhs, 1 rhs, 2 output)
//   info[1 + (3 + t) * R + d] size of dim d of tensor t
// Every index goes through the strides. bias is contiguous with the output's shape, so it is read
// at the output's index: the caller makes both contiguous.

@group(0) @binding(0) var<storage, read> lhs: array<{{ elem }}>;
@group(0) @binding(1) var<storage, read> rhs: array<{{ elem }}>;
@group(0) @binding(2) var<storage, read> bias: array<{{ elem }}>;
@group(0) @binding(3) var<storage, read_write> output: array<{{ elem }}>;
@group(0) @binding(4) var<storage, read> info: array<u32>;

const LHS: u32 = 0u;
const RHS: u32 = 1u;
const OUT: u32 = 2u;

fn dim_stride(t: u32, d: u32) -> u32 {
    return info[1u + t * info[0] + d];
}

fn dim_size(t: u32, d: u32) -> u32 {
    return info[1u + (3u + t) * info[0] + d];
}

@compute @workgroup_size({{ workgroup_size_x }}, {{ workgroup_size_y }}, {{ workgroup_size_z }})
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let rank = info[0];
    let row_dim = rank - 2u;
    let col_dim = rank - 1u;
    let m = dim_size(OUT, row_dim);
    let n = dim_size(OUT, col_dim);
    let k_len = dim_size(LHS, col_dim);
    let row = gid.y;
    let col = gid.x;
    if (row >= m || col >= n) {
        return;
    }

    var batches = 1u;
    for (var d = 0u; d < row_dim; d++) {
        batches *= dim_size(OUT, d);
    }

    let lhs_row = dim_stride(LHS, row_dim);
    let lhs_k = dim_stride(LHS, col_dim);
    let rhs_k = dim_stride(RHS, row_dim);
    let rhs_col = dim_stride(RHS, col_dim);
    let out_row = dim_stride(OUT, row_dim);
    let out_col = dim_stride(OUT, col_dim);
    let batch_step = groups.z * {{ workgroup_size_z }}u;

    for (var batch = gid.z; batch < batches; batch += batch_step) {
        // The batch's coordinates in the output (last batch dim fastest); a size-1 dim of an
        // input maps every coordinate to 0.
        var rest = batch;
        var lhs_base = 0u;
        var rhs_base = 0u;
        var out_base = 0u;
        for (var i = 0u; i < row_dim; i++) {
            let d = row_dim - 1u - i;
            let size = dim_size(OUT, d);
            let coord = rest % size;
            rest = rest / size;
            lhs_base += (coord % dim_size(LHS, d)) * dim_stride(LHS, d);
            rhs_base += (coord % dim_size(RHS, d)) * dim_stride(RHS, d);
            out_base += coord * dim_stride(OUT, d);
        }

        var acc = {{ elem }}(0);
        for (var k = 0u; k < k_len; k++) {
            acc += lhs[lhs_base + row * lhs_row + k * lhs_k]
                 * rhs[rhs_base + k * rhs_k + col * rhs_col];
        }
        let index = out_base + row * out_row + col * out_col;
        output[index] = max(acc + bias[index], {{ elem }}(0));
    }
}
