// kloop backend/cuda: the blocking kernel and the clock probe (see device_kernels.cuh).
#include "backend/cuda/device_kernels.cuh"

namespace kloop::backend::cuda {

namespace {

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void blocking_kernel(const volatile int* release, int* timed_out, unsigned long long timeout_ns) {
    const unsigned long long t0 = global_timer_ns();
    while (*release == 0) {
        if (global_timer_ns() - t0 > timeout_ns) {
            *timed_out = 1;
            break;
        }
        __nanosleep(100);
    }
}

__global__ void read_flush(const uint4* __restrict__ p, unsigned long long n, unsigned* sink) {
    unsigned acc = 0;
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const uint4 v = __ldcg(p + i);
        acc |= v.x | v.y | v.z | v.w;
    }
    if (acc != 0) sink[0] = acc;  // never taken (the buffer is zeros); keeps the loads alive
}

__global__ void clock_probe(unsigned long long* out, long long spin_cycles) {
    const unsigned long long g0 = global_timer_ns();
    const long long c0 = clock64();
    while (clock64() - c0 < spin_cycles) {
    }
    const long long c1 = clock64();
    const unsigned long long g1 = global_timer_ns();
    out[0] = static_cast<unsigned long long>(c1 - c0);
    out[1] = g1 - g0;
}

}  // namespace

cudaError_t launch_blocking_kernel(const volatile int* release_flag_device, int* timed_out_device,
                                   unsigned long long timeout_ns, cudaStream_t stream) {
    blocking_kernel<<<1, 1, 0, stream>>>(release_flag_device, timed_out_device, timeout_ns);
    return cudaGetLastError();
}

cudaError_t launch_read_flush(const void* buffer, unsigned long long bytes, unsigned* sink_device, int sms,
                              cudaStream_t stream) {
    const unsigned long long n = bytes / sizeof(uint4);
    if (n == 0) return cudaSuccess;
    constexpr int k_threads = 512;
    const int blocks = sms > 0 ? 4 * sms : 528;  // enough warps in flight to stream at full bandwidth
    read_flush<<<blocks, k_threads, 0, stream>>>(static_cast<const uint4*>(buffer), n, sink_device);
    return cudaGetLastError();
}

cudaError_t launch_clock_probe(unsigned long long* result_device, long long spin_cycles, cudaStream_t stream) {
    clock_probe<<<1, 1, 0, stream>>>(result_device, spin_cycles);
    return cudaGetLastError();
}

}  // namespace kloop::backend::cuda
