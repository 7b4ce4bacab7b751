// Row-wise float32 kernels: one workgroup per row of `n` contiguous elements; each invocation
// loops over the row with a stride of WG and the row's statistics are combined by a tree in
// workgroup memory.
//
// info (u32): [n_rows, n, x_offset, has_weight, has_bias, eps (f32 bits), w_offset, b_offset]
// softmax_rows:    y = exp(x - max) / sum(exp(x - max))
// layer_norm_rows: y = (x - mean) * inverseSqrt(var + eps) [* w] [+ b]   (biased variance)
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> info: array<u32>;

const WG: u32 = {{ workgroup_size_x }}u;
var<workgroup> partial: array<f32, WG>;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + (wid.y + wid.z * nwg.y) * nwg.x;
}

// The workgroup's sum (is_max = false) or maximum (true) of each invocation's `v`.
fn combine_all(lid: u32, v: f32, is_max: bool) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    for (var step = WG / 2u; step > 0u; step = step / 2u) {
        if (lid < step) {
            let a = partial[lid];
            let c = partial[lid + step];
            partial[lid] = select(a + c, max(a, c), is_max);
        }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();  // every invocation has read it before `partial` is reused
    return r;
}

@compute @workgroup_size({{ workgroup_size_x }})
fn softmax_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg);
    if (row >= info[0]) {
        return;
    }
    let n = info[1];
    let base = info[2] + row * n;
    var m = -3.40282347e38;
    for (var i = lid; i < n; i = i + WG) {
        m = max(m, x[base + i]);
    }
    m = combine_all(lid, m, true);
    var s = 0.0;
    for (var i = lid; i < n; i = i + WG) {
        s = s + exp(x[base + i] - m);
    }
    s = combine_all(lid, s, false);
    for (var i = lid; i < n; i = i + WG) {
        y[row * n + i] = exp(x[base + i] - m) / s;
    }
}

@compute @workgroup_size({{ workgroup_size_x }})
fn layer_norm_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg);
    if (row >= info[0]) {
        return;
    }
    let n = info[1];
    let base = info[2] + row * n;
    var s = 0.0;
    for (var i = lid; i < n; i = i + WG) {
        s = s + x[base + i];
    }
    let mean = combine_all(lid, s, false) / f32(n);
    var q = 0.0;
    for (var i = lid; i < n; i = i + WG) {
        let c = x[base + i] - mean;
        q = q + c * c;
    }
    let r = inverseSqrt(combine_all(lid, q, false) / f32(n) + bitcast<f32>(info[5]));
    let has_w = info[3] != 0u;
    let has_b = info[4] != 0u;
    for (var i = lid; i < n; i = i + WG) {
        var v = (x[base + i] - mean) * r;
        if (has_w) {
            v = v * w[info[6] + i];
        }
        if (has_b) {
            v = v + b[info[7] + i];
        }
        y[row * n + i] = v;
    }
}
