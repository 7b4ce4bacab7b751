// Fill a buffer with one 32-bit pattern (a float16 value is its bit pattern twice).
// info (u32): [n_words, pattern]
@group(0) @binding(0) var<storage, read_write> dst: array<u32>;
@group(0) @binding(1) var<storage, read> info: array<u32>;

@compute @workgroup_size({{ workgroup_size_x }})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * {{ workgroup_size_x }}u + lid;
    if (i < info[0]) {
        dst[i] = info[1];
    }
}
