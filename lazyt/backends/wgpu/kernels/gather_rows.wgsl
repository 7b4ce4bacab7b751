// index_select along dim 0 of a tensor whose trailing dims are one dense run of `inner`
// elements: out[r, c] = x[index[r], c], one element a thread with no per-element coordinate
// walk. An index outside [0, dim_size) writes 0 and records the failure in error slot `slot`
// (raised on the next read).
//
// info (u32): [n, inner, x_off, x_row_stride, idx_off, idx_stride, slot, dim_size]
{{ enable }}
@group(0) @binding(0) var<storage, read> x: array<{{ elem }}>;
@group(0) @binding(1) var<storage, read> index: array<{{ index }}>;
@group(0) @binding(2) var<storage, read_write> out: array<{{ elem }}>;
@group(0) @binding(3) var<storage, read_write> errors: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> info: array<u32>;

@compute @workgroup_size({{ workgroup_size_x }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * {{ workgroup_size_x }}u + lid;
    if (i >= info[0]) {
        return;
    }
    let row = i / info[1];
    let col = i - row * info[1];
    let k = index[info[4] + row * info[5]];
    if (k < 0 || u32(k) >= info[7]) {
        atomicStore(&errors[2u * info[6]], 1u);
        atomicStore(&errors[2u * info[6] + 1u], bitcast<u32>(k));
        out[i] = {{ elem }}(0);
        return;
    }
    out[i] = x[info[2] + u32(k) * info[3] + col];
}
