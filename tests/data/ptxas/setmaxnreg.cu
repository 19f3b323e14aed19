#include <cuda_runtime.h>
__global__ void __launch_bounds__(256) warp_specialised(float* y) {
  if (threadIdx.x < 128) { asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n"); y[threadIdx.x] = 1.f; }
  else { asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n"); y[threadIdx.x] = 2.f; }
}
__constant__ float coeffs[64];
__global__ void const_k(float* y) { y[threadIdx.x] = coeffs[threadIdx.x & 63]; }
