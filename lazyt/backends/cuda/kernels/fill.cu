// Fill a buffer with one value: every element gets the same bit pattern. {{ elem }} is the
// dtype's bit type (unsigned short, unsigned int or unsigned long long).
// info (u32): [n_elements, lo, hi]; the pattern is lo | hi << 32, truncated to {{ elem }}.
extern "C" __global__ void __launch_bounds__({{ workgroup_size_x }})
kernel({{ elem }}* __restrict__ dst, const unsigned int* __restrict__ info) {
    const unsigned int g = blockIdx.x + (blockIdx.y + blockIdx.z * gridDim.y) * gridDim.x;
    const unsigned int i = g * {{ workgroup_size_x }}u + threadIdx.x;
    if (i < info[0]) {
        dst[i] = ({{ elem }})(info[1] | ((unsigned long long)info[2] << 32));
    }
}
