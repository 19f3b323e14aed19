#include <cuda_runtime.h>
__device__ __noinline__ float helper(const float* x, int i) { float t[32]; for (int k = 0; k < 32; ++k) t[k] = x[i + k]; return t[i & 31]; }
__global__ void stack_k(const float* x, float* y, int k) {
  float a[256];
  for (int i = 0; i < 256; ++i) a[i] = x[(i * 13 + threadIdx.x) % 4096];
  y[threadIdx.x] = a[(k + threadIdx.x) & 255] + helper(x, k);
}
template <int N> __global__ void spill_k(const float* __restrict__ x, float* __restrict__ y) {
  float r[N];
#pragma unroll
  for (int i = 0; i < N; ++i) r[i] = x[threadIdx.x + i * 128];
  float s = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) s += r[i] * r[(i * 7) % N];
  __syncthreads();
  y[threadIdx.x] = s;
}
template __global__ void spill_k<96>(const float*, float*);
extern __shared__ float dyn[];
__global__ void dyn_k(float* y) { dyn[threadIdx.x] = threadIdx.x; __syncthreads(); y[threadIdx.x] = dyn[blockDim.x - 1 - threadIdx.x]; }
