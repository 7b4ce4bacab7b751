// Attention weights: y = softmax(x * scale [+ mask]) along rows of `n` contiguous scores, with
// `mask` an additive bias read through broadcast strides. A row whose every score is -inf
// gives zeros (no key to attend to). LANES invocations share a row (WG / LANES rows per
// workgroup), so short rows (attention's 128 keys) keep every invocation busy.
//
// info (u32): [n_rows, n, x_offset, has_mask, n_dims, scale (f32 bits), mask_offset,
//              mask_col_stride, then per dim of the rows' index (outermost first): size,
//              mask_stride]
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> mask: array<f32>;
@group(0) @binding(3) var<storage, read> info: array<u32>;

const WG: u32 = {{ workgroup_size_x }}u;
const LANES: u32 = {{ lanes }}u;
var<workgroup> partial: array<f32, WG>;

// The sum (is_max = false) or maximum (true) of `v` over the LANES invocations of each row.
fn combine_row(lid: u32, v: f32, is_max: bool) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    let lane = lid % LANES;
    for (var step = LANES / 2u; step > 0u; step = step / 2u) {
        if (lane < step) {
            let a = partial[lid];
            let c = partial[lid + step];
            partial[lid] = select(a + c, max(a, c), is_max);
        }
        workgroupBarrier();
    }
    let r = partial[lid - lane];
    workgroupBarrier();  // every invocation has read it before `partial` is reused
    return r;
}

fn score(at: u32, mask_at: u32, scale: f32, has_mask: bool) -> f32 {
    var v = x[at] * scale;
    if (has_mask) {
        v = v + mask[mask_at];
    }
    return v;
}

@compute @workgroup_size({{ workgroup_size_x }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + (wid.y + wid.z * nwg.y) * nwg.x;
    let row = group * (WG / LANES) + lid / LANES;
    let lane = lid % LANES;
    // rows past the end still take part in the barriers; they read and write nothing
    let n = select(0u, info[1], row < info[0]);
    let base = info[2] + row * n;
    let has_mask = info[3] != 0u;
    let scale = bitcast<f32>(info[5]);
    let col = info[7];
    var mask_base = info[6];
    var r = row;
    for (var d = info[4]; d > 0u; d = d - 1u) {
        let size = info[6u + 2u * d];
        mask_base = mask_base + (r % size) * info[7u + 2u * d];
        r = r / size;
    }
    let neg_inf = bitcast<f32>(0xff800000u);
    var m = neg_inf;
    for (var i = lane; i < n; i = i + LANES) {
        m = max(m, score(base + i, mask_base + i * col, scale, has_mask));
    }
    m = combine_row(lid, m, true);
    let dead = m == neg_inf;
    var s = 0.0;
    for (var i = lane; i < n; i = i + LANES) {
        s = s + exp(score(base + i, mask_base + i * col, scale, has_mask) - m);
    }
    s = combine_row(lid, s, false);
    for (var i = lane; i < n; i = i + LANES) {
        let e = exp(score(base + i, mask_base + i * col, scale, has_mask) - m);
        y[row * n + i] = select(e / s, 0.0, dead);
    }
}
