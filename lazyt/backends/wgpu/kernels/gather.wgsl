// torch.gather (and index_select, through a broadcast index view): out[c] = x[c with
// c[dim] = index[c]] for every coordinate c of the index's shape. An index outside
// [0, dim_size) writes 0 and records the failure in error slot `slot` (raised on the next read).
//
// info (u32): [n, rank, dim, x_off, idx_off, slot, dim_size, shape[rank], x_strides[rank],
//              idx_strides[rank]]
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
    let rank = info[1];
    let dim = info[2];
    var rem = i;
    var at_x = info[3];
    var at_idx = info[4];
    var x_dim_stride = 0u;
    for (var j = rank; j > 0u; j = j - 1u) {
        let d = j - 1u;
        let size = info[7u + d];
        let c = rem % size;
        rem = rem / size;
        at_idx = at_idx + c * info[7u + 2u * rank + d];
        if (d == dim) {
            x_dim_stride = info[7u + rank + d];
        } else {
            at_x = at_x + c * info[7u + rank + d];
        }
    }
    let k = index[at_idx];
    if (k < 0 || u32(k) >= info[6]) {
        atomicStore(&errors[2u * info[5]], 1u);
        atomicStore(&errors[2u * info[5] + 1u], bitcast<u32>(k));
        out[i] = {{ elem }}(0);
        return;
    }
    out[i] = x[at_x + u32(k) * x_dim_stride];
}
