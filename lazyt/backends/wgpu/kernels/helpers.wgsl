// The helper functions of lazyt's generated WGSL kernels (lazyt/backends/wgpu/renderer.py).
// The op tables (lazyt/backends/cube/op_table.py) call them by name; a generated kernel
// includes the ones its code calls, and the ones those call. A helper runs from its
// `fn lz_<name>(` line to the line where its braces balance; the comments between helpers
// are not copied into kernels. The CUDA renderer defines the same names in its own file.

// NaN tested on the bits: WGSL lets implementations assume NaN is absent, and float `!=`
// is compiled as an ordered comparison on some (NaN != NaN is false on lavapipe); the op
// tables write "not equal" as !(a == b).
fn lz_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

// erf(x), the error function, in f32.
fn lz_erf(x: f32) -> f32 {
    // |x| < 1: x * P(x^2); 1 <= |x| < 4: 1 - exp(Q(|x|) - x^2) (fits of erf, error < 2e-7)
    let a = abs(x);
    if (a < 1.0) {
        let s = x * x;
        var p = 7.933303277241066e-05;
        p = p * s - 0.0008034794009290636;
        p = p * s + 0.005191212985664606;
        p = p * s - 0.02685539610683918;
        p = p * s + 0.11283625662326813;
        p = p * s - 0.3761262893676758;
        p = p * s + 1.128379225730896;
        return x * p;
    }
    if (a < 4.0) {
        var q = 1.6140370462380815e-06;
        q = q * a - 4.5590164518216625e-05;
        q = q * a + 0.0005927658639848232;
        q = q * a - 0.004740206524729729;
        q = q * a + 0.026364674791693687;
        q = q * a - 0.10997817665338516;
        q = q * a + 0.3680628538131714;
        q = q * a - 1.1301666498184204;
        q = q * a + 0.0003032050735782832;
        return sign(x) * (1.0 - exp(q - a * a));
    }
    return select(sign(x), x, lz_isnan(x));
}

// tanh(x) in f32.
fn lz_tanh(x: f32) -> f32 {
    // tanh through exp: exact at both ends (the builtin overflows to NaN on some drivers) and
    // a series near 0, where 1 - exp(-2|x|) cancels.
    let a = abs(x);
    if (a < 0.0625) {
        let s = x * x;
        return x * (1.0 + s * (-0.3333333333 + s * (0.1333333333 + s * -0.0539682540)));
    }
    let e = exp(-2.0 * min(a, 20.0));
    return select(sign(x) * (1.0 - e) / (1.0 + e), x, lz_isnan(x));
}

// a^b with numpy's semantics (C's pow).
fn lz_pow(a: f32, b: f32) -> f32 {
    // numpy semantics: integral exponents of negative bases, 0^b, NaN propagation
    if (b == 0.0 || a == 1.0) { return 1.0; }
    if (lz_isnan(a) || lz_isnan(b)) { return bitcast<f32>(0x7fc00000u); }
    if (a == 0.0) { return select(0.0, bitcast<f32>(0x7f800000u), b < 0.0); }
    let m = pow(abs(a), b);
    if (a > 0.0) { return m; }
    if (!(floor(b) == b)) {
        // C's pow(-inf, b) for b not an integer: +inf for b > 0, +0 for b < 0 (not NaN)
        if (bitcast<u32>(a) == 0xff800000u) {
            return select(0.0, bitcast<f32>(0x7f800000u), b > 0.0);
        }
        return bitcast<f32>(0x7fc00000u);
    }
    return select(m, -m, !(floor(b * 0.5) == b * 0.5));
}

// Integer a^b by squaring; negative exponents as numpy's integer power of +-1, else 0.
fn lz_ipow(a: i32, b: i32) -> i32 {
    if (b < 0) {
        if (a == 1) { return 1; }
        if (a == -1) { return select(-1, 1, (b & 1) == 0); }
        return 0;
    }
    var r = 1;
    var base = a;
    var e = u32(b);
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) != 0u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}

// (floor(a / b), a mod b) of floats, as numpy's divmod.
fn lz_fdivmod(a: f32, b: f32) -> vec2<f32> {
    // numpy's npy_divmod: (floor division, modulo with the divisor's sign)
    if (b == 0.0) { return vec2<f32>(a / b, bitcast<f32>(0x7fc00000u)); }
    var m = a % b;
    var d = (a - m) / b;
    if (!(m == 0.0)) {
        if ((b < 0.0) != (m < 0.0)) { m = m + b; d = d - 1.0; }
    } else {
        m = select(0.0, -0.0, b < 0.0);
    }
    var f = 0.0;
    if (!(d == 0.0)) {
        f = floor(d);
        if (d - f > 0.5) { f = f + 1.0; }
    } else {
        f = select(0.0, -0.0, (a / b) < 0.0);
    }
    return vec2<f32>(f, m);
}

// Integer floor division (numpy's //); x // 0 is 0.
fn lz_ifloordiv(a: i32, b: i32) -> i32 {
    // floor division from the truncated quotient; the remainder is formed explicitly (`%` on
    // negative i32 differs between drivers)
    if (b == 0) { return 0; }
    let q = a / b;
    let r = a - q * b;
    return select(q, q - 1, r != 0 && ((r < 0) != (b < 0)));
}

// Integer modulo with the divisor's sign (numpy's %); x % 0 is 0.
fn lz_imod(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    let r = a - (a / b) * b;
    return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
}

// numpy's maximum: NaN wins.
fn lz_fmax(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), b, lz_isnan(b)), a, lz_isnan(a));
}

// numpy's minimum: NaN wins.
fn lz_fmin(a: f32, b: f32) -> f32 {
    return select(select(min(a, b), b, lz_isnan(b)), a, lz_isnan(a));
}

// f16 rounding of an f32 register with integer and exact power-of-two arithmetic: a compiler
// may drop an f32(f16(x)) round trip, and even unpack2x16float(pack2x16float(x)) (NVIDIA's
// Vulkan driver drops both), leaving a fused block's float16 intermediates unrounded. Half to
// even, as numpy; f16 subnormals kept; out of f16's range +-inf; NaN stays NaN.
fn lz_round_f16(x: f32) -> f32 {
    let a = abs(x);
    if (a < 6.103515625e-05) {
        return round(x * 16777216.0) * 5.9604644775390625e-08;
    }
    if (a < 65520.0) {
        let b = bitcast<u32>(x);
        return bitcast<f32>((b + 0xfffu + ((b >> 13u) & 1u)) & 0xffffe000u);
    }
    return select(sign(x) * bitcast<f32>(0x7f800000u), x, lz_isnan(x));
}

// Shifts as numpy's: an amount outside [0, 32) shifts every bit out (0, or the sign for >>).
fn lz_shl(a: i32, b: i32) -> i32 {
    return select(0, a << u32(b), b >= 0 && b < 32);
}

fn lz_shr(a: i32, b: i32) -> i32 {
    return a >> u32(select(31, b, b >= 0 && b < 32));
}
