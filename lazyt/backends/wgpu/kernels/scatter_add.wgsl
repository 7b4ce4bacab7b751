// torch.scatter_add (and index_add, through a broadcast index view), deterministically: one
// invocation per output element adds, in index order, every src element whose index points at
// it (WGSL has no float atomics, and a fixed order gives the same bits on every run).
// Out-of-range indices never match; `check_index` reports them.
//
// info (u32): [n, rank, dim, x_off, idx_off, src_off, len, shape[rank], x_strides[rank],
//              idx_shape[rank], idx_strides[rank], src_strides[rank]]
// shape is the output's (= x's); len = idx_shape[dim], the positions scanned.
{{ enable }}
@group(0) @binding(0) var<storage, read> x: array<{{ elem }}>;
@group(0) @binding(1) var<storage, read> index: array<{{ index }}>;
@group(0) @binding(2) var<storage, read> src: array<{{ elem }}>;
@group(0) @binding(3) var<storage, read_write> out: array<{{ elem }}>;
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
    var at_src = info[5];
    var wanted = 0;
    var inside = true;
    for (var j = rank; j > 0u; j = j - 1u) {
        let d = j - 1u;
        let size = info[7u + d];
        let c = rem % size;
        rem = rem / size;
        at_x = at_x + c * info[7u + rank + d];
        if (d == dim) {
            wanted = i32(c);
        } else {
            inside = inside && c < info[7u + 2u * rank + d];
            at_idx = at_idx + c * info[7u + 3u * rank + d];
            at_src = at_src + c * info[7u + 4u * rank + d];
        }
    }
    var acc = {{ load_x }};
    if (inside) {
        let idx_step = info[7u + 3u * rank + dim];
        let src_step = info[7u + 4u * rank + dim];
        for (var p = 0u; p < info[6]; p = p + 1u) {
            if (index[at_idx + p * idx_step] == wanted) {
                acc = acc + {{ load_src }};
            }
        }
    }
    out[i] = {{ store }};
}
