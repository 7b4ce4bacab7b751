// Strided copy: out[out_off + coord . out_strides] = in[in_off + coord . in_strides] for every
// coordinate of `shape` (contiguous(), cat, strided writes). {{ elem }} is u32 for every 32-bit
// dtype (the bits are copied) and f16 for float16.
//
// info (u32): [n, rank, in_off, out_off, shape[rank], in_strides[rank], out_strides[rank]]
{{ enable }}
@group(0) @binding(0) var<storage, read> src: array<{{ elem }}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{{ elem }}>;
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
    var src_at = info[2];
    var dst_at = info[3];
    for (var j = rank; j > 0u; j = j - 1u) {
        let d = j - 1u;
        let size = info[4u + d];
        let c = rem % size;
        rem = rem / size;
        src_at = src_at + c * info[4u + rank + d];
        dst_at = dst_at + c * info[4u + 2u * rank + d];
    }
    dst[dst_at] = src[src_at];
}
