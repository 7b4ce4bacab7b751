// Range check of a strided index view: an element outside [0, size) is recorded in error
// slot `slot` (raised on the next read).
// info (u32): [n, rank, off, slot, size, shape[rank], strides[rank]]
@group(0) @binding(0) var<storage, read> index: array<{{ index }}>;
@group(0) @binding(1) var<storage, read_write> errors: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> info: array<u32>;

@compute @workgroup_size({{ workgroup_size_x }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * {{ workgroup_size_x }}u + lid;
    if (i >= info[0]) {
        return;
    }
    let rank = info[1];
    var rem = i;
    var at = info[2];
    for (var j = rank; j > 0u; j = j - 1u) {
        let d = j - 1u;
        let size = info[5u + d];
        at = at + (rem % size) * info[5u + rank + d];
        rem = rem / size;
    }
    let k = index[at];
    if (k < 0 || u32(k) >= info[4]) {
        atomicStore(&errors[2u * info[3]], 1u);
        atomicStore(&errors[2u * info[3] + 1u], bitcast<u32>(k));
    }
}
