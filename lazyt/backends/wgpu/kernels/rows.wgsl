// Row-wise float32 kernels over rows of `n` contiguous elements. LANES invocations share a row
// (WG / LANES rows per workgroup, so short rows keep every invocation busy); each loops over
// its row with a stride of LANES and the row's statistics are combined by a tree in workgroup
// memory. Rows past the end still take part in the barriers; they read and write nothing.
//
// softmax_rows:    y = exp(x - max) / sum(exp(x - max))
// layer_norm_rows: y = (x - mean) * inverseSqrt(var + eps) [* w] [+ b]   (biased variance)
//   info (u32): [n_rows, n, x_offset, has_weight, has_bias, eps (f32 bits), w_offset, b_offset]
// rms_norm_rows:   y = x * inverseSqrt(mean(x * x) + eps) [* w]   (info as layer_norm_rows')
// attention_rows:  y = softmax(x * scale [+ w]) with `w` an additive mask read through
//   broadcast strides; a row whose every score is -inf gives zeros (no key to attend to).
//   info (u32): [n_rows, n, x_offset, has_mask, n_dims, scale (f32 bits), w_offset,
//   w_col_stride, then per dim of the rows' index (outermost first): size, w_stride]
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> info: array<u32>;

const WG: u32 = {{ workgroup_size_x }}u;
const LANES: u32 = {{ lanes }}u;
var<workgroup> partial: array<f32, WG>;

// This invocation's row (it may be past the end: check against info[0]).
fn row_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * (WG / LANES) + lid / LANES;
}

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

@compute @workgroup_size({{ workgroup_size_x }})
fn softmax_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let lane = lid % LANES;
    let n = select(0u, info[1], row < info[0]);
    let base = info[2] + row * n;
    var m = -3.40282347e38;
    for (var i = lane; i < n; i = i + LANES) {
        m = max(m, x[base + i]);
    }
    m = combine_row(lid, m, true);
    var s = 0.0;
    for (var i = lane; i < n; i = i + LANES) {
        s = s + exp(x[base + i] - m);
    }
    s = combine_row(lid, s, false);
    for (var i = lane; i < n; i = i + LANES) {
        y[row * n + i] = exp(x[base + i] - m) / s;
    }
}

@compute @workgroup_size({{ workgroup_size_x }})
fn layer_norm_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                   @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let lane = lid % LANES;
    let n = select(0u, info[1], row < info[0]);
    let base = info[2] + row * n;
    var s = 0.0;
    for (var i = lane; i < n; i = i + LANES) {
        s = s + x[base + i];
    }
    let mean = combine_row(lid, s, false) / f32(n);
    var q = 0.0;
    for (var i = lane; i < n; i = i + LANES) {
        let c = x[base + i] - mean;
        q = q + c * c;
    }
    let r = inverseSqrt(combine_row(lid, q, false) / f32(n) + bitcast<f32>(info[5]));
    let has_w = info[3] != 0u;
    let has_b = info[4] != 0u;
    for (var i = lane; i < n; i = i + LANES) {
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

@compute @workgroup_size({{ workgroup_size_x }})
fn rms_norm_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let lane = lid % LANES;
    let n = select(0u, info[1], row < info[0]);
    let base = info[2] + row * n;
    var q = 0.0;
    for (var i = lane; i < n; i = i + LANES) {
        let v = x[base + i];
        q = q + v * v;
    }
    let r = inverseSqrt(combine_row(lid, q, false) / f32(n) + bitcast<f32>(info[5]));
    let has_w = info[3] != 0u;
    for (var i = lane; i < n; i = i + LANES) {
        var v = x[base + i] * r;
        if (has_w) {
            v = v * w[info[6] + i];
        }
        y[row * n + i] = v;
    }
}

fn masked_score(at: u32, mask_at: u32, scale: f32, has_mask: bool) -> f32 {
    var v = x[at] * scale;
    if (has_mask) {
        v = v + w[mask_at];
    }
    return v;
}

@compute @workgroup_size({{ workgroup_size_x }})
fn attention_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let lane = lid % LANES;
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
        m = max(m, masked_score(base + i, mask_base + i * col, scale, has_mask));
    }
    m = combine_row(lid, m, true);
    let dead = m == neg_inf;
    var s = 0.0;
    for (var i = lane; i < n; i = i + LANES) {
        s = s + exp(masked_score(base + i, mask_base + i * col, scale, has_mask) - m);
    }
    s = combine_row(lid, s, false);
    for (var i = lane; i < n; i = i + LANES) {
        let e = exp(masked_score(base + i, mask_base + i * col, scale, has_mask) - m);
        y[row * n + i] = select(e / s, 0.0, dead);
    }
}
