#include "kloop/kernel.h"
#include <cuda_runtime.h>
__global__ void copy_k(const float* __restrict__ x, float* __restrict__ y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
__global__ void smem_k(const float* x, float* y, int n) {
  __shared__ float buf[1024];
  buf[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = buf[(threadIdx.x * 7) % 1024];
}
__global__ void local_k(const float* x, float* y, int k) {
  float a[64];
  for (int i = 0; i < 64; ++i) a[i] = x[i * threadIdx.x];
  y[threadIdx.x] = a[k & 63];
}
extern "C" int copy(const kl_args* a) {
  const kl_tensor* x = kl_input(a, "x");
  const kl_tensor* y = kl_output(a, "y");
  long n = x->shape[0];
  copy_k<<<(n + 255) / 256, 256, 0, (cudaStream_t)a->stream>>>((const float*)x->data, (float*)y->data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
