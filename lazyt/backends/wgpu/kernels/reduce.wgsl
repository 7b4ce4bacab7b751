// Reduction of a strided view over its "reduced" dims, one output per kept position.
// The placeholders come from codegen.reduce_wgsl's op table: the accumulator type, its
// identity, how two accumulators combine and how the last one becomes the output value; `load`
// converts an input element to the accumulator type.
//
// info (u32): [n_out, r_len, splits, chunk, rank_keep, rank_red, offset, divisor,
//              keep_shape[rank_keep], keep_strides[rank_keep], red_shape[rank_red], red_strides[rank_red]]
// reduce_rows: one workgroup per (output, split): a strided loop then a tree in workgroup memory;
//   with splits > 1 each workgroup reduces one chunk of the reduced positions into a partial.
// reduce_threads: one invocation per output, a sequential loop (many outputs, few inputs each).
{{ enable }}
@group(0) @binding(0) var<storage, read> input: array<{{ in_elem }}>;
@group(0) @binding(1) var<storage, read_write> output: array<{{ out_elem }}>;
@group(0) @binding(2) var<storage, read> info: array<u32>;

struct Acc {
    v: {{ acc }},
    i: u32,
}

const WG: u32 = {{ workgroup_size_x }}u;
var<workgroup> shared_v: array<{{ acc }}, WG>;
var<workgroup> shared_i: array<u32, WG>;

{{ helpers }}

fn combine(a: Acc, b: Acc) -> Acc {
    {{ combine }}
}

fn finish(r: Acc) -> {{ out_elem }} {
    return {{ out_elem }}({{ finish }});
}

fn keep_offset(o: u32) -> u32 {
    let rank = info[4];
    var rem = o;
    var at = info[6];
    for (var j = rank; j > 0u; j = j - 1u) {
        let d = j - 1u;
        let size = info[8u + d];
        at = at + (rem % size) * info[8u + rank + d];
        rem = rem / size;
    }
    return at;
}

fn red_offset(r: u32) -> u32 {
    let base = 8u + 2u * info[4];
    let rank = info[5];
    if (rank == 1u) {
        return r * info[base + 1u];
    }
    var rem = r;
    var at = 0u;
    for (var j = rank; j > 0u; j = j - 1u) {
        let d = j - 1u;
        let size = info[base + d];
        at = at + (rem % size) * info[base + rank + d];
        rem = rem / size;
    }
    return at;
}

fn element(at: u32, r: u32) -> Acc {
    return Acc({{ load }}, r);
}

@compute @workgroup_size({{ workgroup_size_x }})
fn reduce_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + (wid.y + wid.z * nwg.y) * nwg.x;
    let splits = info[2];
    if (g >= info[0] * splits) {
        return;
    }
    let o = g / splits;
    let r0 = (g % splits) * info[3];
    let r1 = min(r0 + info[3], info[1]);
    let base = keep_offset(o);
    var acc = Acc({{ identity }}, 0xffffffffu);
    for (var r = r0 + lid; r < r1; r = r + WG) {
        acc = combine(acc, element(base + red_offset(r), r));
    }
    shared_v[lid] = acc.v;
    shared_i[lid] = acc.i;
    workgroupBarrier();
    for (var step = WG / 2u; step > 0u; step = step / 2u) {
        if (lid < step) {
            let merged = combine(Acc(shared_v[lid], shared_i[lid]),
                                 Acc(shared_v[lid + step], shared_i[lid + step]));
            shared_v[lid] = merged.v;
            shared_i[lid] = merged.i;
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        output[g] = finish(Acc(shared_v[0], shared_i[0]));
    }
}

@compute @workgroup_size({{ workgroup_size_x }})
fn reduce_threads(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_index) lid: u32) {
    let o = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * WG + lid;
    if (o >= info[0]) {
        return;
    }
    let base = keep_offset(o);
    var acc = Acc({{ identity }}, 0xffffffffu);
    for (var r = 0u; r < info[1]; r = r + 1u) {
        acc = combine(acc, element(base + red_offset(r), r));
    }
    output[o] = finish(acc);
}
