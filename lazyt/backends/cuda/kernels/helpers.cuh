// The helper functions of lazyt's generated CUDA kernels, with numpy's semantics. The op
// tables (lazyt/backends/cube/op_table.py) call them by name; a generated kernel includes the
// ones its code calls, and the ones those call. A helper runs from its `__device__ ... lz_<name>(`
// line to the line where its braces balance; overloads of one name are kept together, and a
// helper is defined after the helpers it calls. The comments between helpers are not copied
// into kernels. lz_round_f16 needs cuda_fp16.h, which a kernel using float16 includes.

// NaN tested on the bits (true for every NaN payload and sign).
__device__ __forceinline__ bool lz_isnan(float x) {
    return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u;
}
__device__ __forceinline__ bool lz_isnan(double x) {
    return ((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffull) >
           0x7ff0000000000000ull;
}

// numpy's sign: -1, 0 (for both zeros) or 1; NaN stays NaN.
__device__ __forceinline__ float lz_sign(float x) {
    if (lz_isnan(x)) { return x; }
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
}
__device__ __forceinline__ double lz_sign(double x) {
    if (lz_isnan(x)) { return x; }
    return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
}

// erf(x), the error function.
__device__ __forceinline__ float lz_erf(float x) { return erff(x); }
__device__ __forceinline__ double lz_erf(double x) { return erf(x); }

// tanh(x).
__device__ __forceinline__ float lz_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double lz_tanh(double x) { return tanh(x); }

// a^b with numpy's semantics: 1 when b == 0 or a == 1 (even against NaN), else NaN if either is
// NaN; the rest is C99 pow (0^b < 0 is +-inf, signed zeros and infinities, integral exponents
// of negative bases keep the sign of odd powers, a non-integral one gives NaN).
__device__ __forceinline__ float lz_pow(float a, float b) {
    if (b == 0.0f || a == 1.0f) { return 1.0f; }
    if (lz_isnan(a) || lz_isnan(b)) { return __uint_as_float(0x7fc00000u); }
    return powf(a, b);
}
__device__ __forceinline__ double lz_pow(double a, double b) {
    if (b == 0.0 || a == 1.0) { return 1.0; }
    if (lz_isnan(a) || lz_isnan(b)) { return __longlong_as_double(0x7ff8000000000000ll); }
    return pow(a, b);
}

// Integer a^b by squaring (wrapping as numpy's integers); negative exponents as numpy's
// integer power of +-1, else 0.
__device__ __forceinline__ int lz_ipow(int a, int b) {
    if (b < 0) {
        if (a == 1) { return 1; }
        if (a == -1) { return (b & 1) == 0 ? 1 : -1; }
        return 0;
    }
    unsigned int r = 1u;
    unsigned int base = (unsigned int)a;
    unsigned int e = (unsigned int)b;
    while (e != 0u) {
        if ((e & 1u) != 0u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return (int)r;
}
__device__ __forceinline__ long long lz_ipow(long long a, long long b) {
    if (b < 0) {
        if (a == 1) { return 1; }
        if (a == -1) { return (b & 1) == 0 ? 1 : -1; }
        return 0;
    }
    unsigned long long r = 1ull;
    unsigned long long base = (unsigned long long)a;
    unsigned long long e = (unsigned long long)b;
    while (e != 0ull) {
        if ((e & 1ull) != 0ull) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return (long long)r;
}

// (floor(a / b), a mod b) of floats, as numpy's divmod (npy_divmod): the modulo has the
// divisor's sign; b == 0 gives (a / b, NaN).
__device__ __forceinline__ float2 lz_fdivmod(float a, float b) {
    if (b == 0.0f) { return make_float2(a / b, __uint_as_float(0x7fc00000u)); }
    float m = fmodf(a, b);
    float d = (a - m) / b;
    if (!(m == 0.0f)) {
        if ((b < 0.0f) != (m < 0.0f)) { m = m + b; d = d - 1.0f; }
    } else {
        m = copysignf(0.0f, b);
    }
    float f;
    if (!(d == 0.0f)) {
        f = floorf(d);
        if (d - f > 0.5f) { f = f + 1.0f; }
    } else {
        f = copysignf(0.0f, a / b);
    }
    return make_float2(f, m);
}
__device__ __forceinline__ double2 lz_fdivmod(double a, double b) {
    if (b == 0.0) { return make_double2(a / b, __longlong_as_double(0x7ff8000000000000ll)); }
    double m = fmod(a, b);
    double d = (a - m) / b;
    if (!(m == 0.0)) {
        if ((b < 0.0) != (m < 0.0)) { m = m + b; d = d - 1.0; }
    } else {
        m = copysign(0.0, b);
    }
    double f;
    if (!(d == 0.0)) {
        f = floor(d);
        if (d - f > 0.5) { f = f + 1.0; }
    } else {
        f = copysign(0.0, a / b);
    }
    return make_double2(f, m);
}

// Integer floor division (numpy's //); x // 0 is 0, and MIN // -1 wraps to MIN.
__device__ __forceinline__ int lz_ifloordiv(int a, int b) {
    if (b == 0) { return 0; }
    if (b == -1) { return (int)(0u - (unsigned int)a); }
    const int q = a / b;
    const int r = a - q * b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ long long lz_ifloordiv(long long a, long long b) {
    if (b == 0) { return 0; }
    if (b == -1) { return (long long)(0ull - (unsigned long long)a); }
    const long long q = a / b;
    const long long r = a - q * b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

// Shifts as numpy's: an amount outside [0, bits) shifts every bit out (0, or the sign for >>).
__device__ __forceinline__ int lz_shl(int a, int b) {
    return (b >= 0 && b < 32) ? (int)((unsigned int)a << b) : 0;
}
__device__ __forceinline__ long long lz_shl(long long a, long long b) {
    return (b >= 0 && b < 64) ? (long long)((unsigned long long)a << b) : 0;
}
__device__ __forceinline__ int lz_shr(int a, int b) {
    return a >> ((b >= 0 && b < 32) ? b : 31);
}
__device__ __forceinline__ long long lz_shr(long long a, long long b) {
    return a >> ((b >= 0 && b < 64) ? b : 63);
}

// Integer modulo with the divisor's sign (numpy's %); x % 0 is 0.
__device__ __forceinline__ int lz_imod(int a, int b) {
    if (b == 0 || b == -1) { return 0; }
    const int r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ long long lz_imod(long long a, long long b) {
    if (b == 0 || b == -1) { return 0; }
    const long long r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// numpy's maximum: NaN wins; of two equal values (0.0 and -0.0) the second.
__device__ __forceinline__ float lz_fmax(float a, float b) {
    return lz_isnan(a) ? a : (lz_isnan(b) ? b : (a > b ? a : b));
}
__device__ __forceinline__ double lz_fmax(double a, double b) {
    return lz_isnan(a) ? a : (lz_isnan(b) ? b : (a > b ? a : b));
}

// numpy's minimum: NaN wins; of two equal values (0.0 and -0.0) the second.
__device__ __forceinline__ float lz_fmin(float a, float b) {
    return lz_isnan(a) ? a : (lz_isnan(b) ? b : (a < b ? a : b));
}
__device__ __forceinline__ double lz_fmin(double a, double b) {
    return lz_isnan(a) ? a : (lz_isnan(b) ? b : (a < b ? a : b));
}

// An f32 value rounded to f16 and back (half to even, as numpy; out of range +-inf).
__device__ __forceinline__ float lz_round_f16(float x) {
    return __half2float(__float2half_rn(x));
}
