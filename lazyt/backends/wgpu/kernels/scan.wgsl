// Running sums (cumsum) along rows of `n` contiguous elements, accumulated in {{ acc }}.
//
// scan_rows:  one workgroup per row. The row is walked in tiles of WG * 4 elements: each
//             invocation scans its 4 consecutive elements, the workgroup scans the invocations'
//             totals (Hillis-Steele in workgroup memory) and a carry joins the tiles.
// scan_lines: one invocation per row, a plain loop (many short rows).
//
// info (uniform: the loop bounds must be uniform for the barriers): [n_rows, n, x_offset, 0]
{{ enable }}
@group(0) @binding(0) var<storage, read> x: array<{{ elem }}>;
@group(0) @binding(1) var<storage, read_write> y: array<{{ elem }}>;
@group(0) @binding(2) var<uniform> info: vec4<u32>;

const WG: u32 = {{ workgroup_size_x }}u;
var<workgroup> sums: array<{{ acc }}, WG>;

fn at(i: u32, n: u32, base: u32) -> {{ acc }} {
    if (i >= n) { return {{ acc }}(0); }
    return {{ load }};
}

@compute @workgroup_size({{ workgroup_size_x }})
fn scan_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + (wid.y + wid.z * nwg.y) * nwg.x;
    if (row >= info.x) { return; }  // uniform: the same for the whole workgroup
    let n = info.y;
    let base = info.z + row * n;
    let out = row * n;
    var carry = {{ acc }}(0);
    for (var t = 0u; t < n; t = t + WG * 4u) {
        let i = t + lid * 4u;
        let v0 = at(i, n, base);
        let v1 = v0 + at(i + 1u, n, base);
        let v2 = v1 + at(i + 2u, n, base);
        let v3 = v2 + at(i + 3u, n, base);
        sums[lid] = v3;
        workgroupBarrier();
        for (var s = 1u; s < WG; s = s * 2u) {
            var add = {{ acc }}(0);
            if (lid >= s) { add = sums[lid - s]; }
            workgroupBarrier();
            sums[lid] = sums[lid] + add;
            workgroupBarrier();
        }
        var before = carry;
        if (lid > 0u) { before = carry + sums[lid - 1u]; }
        if (i < n) { y[out + i] = {{ store0 }}; }
        if (i + 1u < n) { y[out + i + 1u] = {{ store1 }}; }
        if (i + 2u < n) { y[out + i + 2u] = {{ store2 }}; }
        if (i + 3u < n) { y[out + i + 3u] = {{ store3 }}; }
        carry = carry + sums[WG - 1u];
        workgroupBarrier();  // every invocation has read `sums` before the next tile
    }
}

@compute @workgroup_size({{ workgroup_size_x }})
fn scan_lines(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let row = (wid.x + (wid.y + wid.z * nwg.y) * nwg.x) * WG + lid;
    if (row >= info.x) { return; }
    let n = info.y;
    let base = info.z + row * n;
    var acc = {{ acc }}(0);
    for (var i = 0u; i < n; i = i + 1u) {
        acc = acc + at(i, n, base);
        y[row * n + i] = {{ store_acc }};
    }
}
