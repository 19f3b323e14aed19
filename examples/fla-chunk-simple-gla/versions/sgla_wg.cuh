// sgla_wg.cuh: what the wgmma versions' kernels (v4, v5) share, one warpgroup (128 threads) a CTA:
// a chunk's rows loaded into a swizzled tile with 16-byte cp.async, the proxy fence that makes
// what threads wrote to shared memory visible to wgmma, the wait for a batch of wgmmas, and the
// staged 16-byte store of a 64 x 64 output block. The tiles and MMAs are sgla_wg_layout.hpp's.
#pragma once

#include "sgla_bwd.cuh"
#include "sgla_wg_layout.hpp"

namespace sgla_wg {

using namespace sgla_v1;

static_assert(kChunk == BT, "sgla_wg_layout.hpp's chunk is the kernels' chunk");

// Shared-memory writes of the generic proxy (cp.async, st.shared) made visible to wgmma's reads.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

template <class Acc>
__device__ __forceinline__ void wgmma_wait(Acc& acc) {
    warpgroup_commit_batch();
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
}

// Issues the cp.async loads of rows t0 .. t0 + 63 of a [tokens, H, width] bf16 tensor, head h,
// columns col0 .. col0 + W - 1, into a tile indexed (row, column), or (column, row) with
// kColumnFirst: 8 consecutive columns (16 bytes) at a time, which the 128-byte swizzle keeps
// together. Rows >= Lc are zero-filled and never read from memory.
template <int W, bool kColumnFirst, class Tile>
__device__ __forceinline__ void load_chunk_rows(BF* dst, const Tile& tile, const bf16* __restrict__ src, int64_t t0,
                                                int Lc, int H, int h, int width, size_t col0) {
#pragma unroll 1
    for (int idx = threadIdx.x; idx < kChunk * (W / 8); idx += kWgThreads) {
        const int r = idx / (W / 8), c8 = (idx % (W / 8)) * 8;
        const bool ok = r < Lc;
        cp_async16(dst + (kColumnFirst ? tile(c8, r) : tile(r, c8)),
                   src + (static_cast<size_t>(t0 + (ok ? r : 0)) * H + h) * width + col0 + c8, ok);
    }
}

// A chunk's output before its intra-chunk term, from q and k (sQ, sK: (row, k), K-major) and a
// state tile sB ((v, k): the state entering the chunk, 64 of its columns): S = q k^T and accO =
// q state issued as one batch, meanwhile() run while they are in flight (v4 scans the gates
// there), then, past a barrier, A' = mask(scale exp(G_i - G_j) S) (j <= i < Lc, else 0) to sA in
// bf16 and accO's rows scaled by scale exp(G_i) (Gs: G, eG: scale exp(G)); ends with A' visible
// to wgmma. Returns the (row, column) map of accO's elements (S's and accO's are laid out alike).
template <class TQ, class TK, class TB, class TA, class AccO, class F>
__device__ __forceinline__ auto chunk_output_head(const TQ& sQ, const TK& sK, const TB& sB, TA& sA, AccO& accO,
                                                  const float* Gs, const float* eG, float scale, int Lc,
                                                  F&& meanwhile) {
    Mma mma_s;
    MmaMN mma_o;
    auto thr_s = mma_s.get_thread_slice(threadIdx.x);
    auto thr_o = mma_o.get_thread_slice(threadIdx.x);
    Tensor accS = partition_fragment_C(mma_s, Shape<Int<kChunk>, Int<kChunk>>{});
    clear(accS);
    clear(accO);
    Tensor tSrQ = thr_s.partition_fragment_A(sQ);
    Tensor tSrK = thr_s.partition_fragment_B(sK);
    Tensor tOrQ = thr_o.partition_fragment_A(sQ);
    Tensor tOrB = thr_o.partition_fragment_B(sB);
    warpgroup_fence_operand(accS);
    warpgroup_fence_operand(accO);
    warpgroup_arrive();
    gemm(mma_s, tSrQ, tSrK, accS);  // S = q k^T
    gemm(mma_o, tOrQ, tOrB, accO);  // O = q state
    warpgroup_commit_batch();
    meanwhile();
    warpgroup_wait<0>();
    warpgroup_fence_operand(accS);
    warpgroup_fence_operand(accO);
    __syncthreads();  // what meanwhile() wrote is visible

    Tensor coords = thr_s.partition_C(make_identity_tensor(Shape<Int<kChunk>, Int<kChunk>>{}));
    Tensor tSsA = thr_s.partition_C(sA);
    CUTE_UNROLL
    for (int e = 0; e < size(accS); ++e) {
        const int i = get<0>(coords(e)), j = get<1>(coords(e));
        const float val = (j <= i && i < Lc) ? scale * expf(fminf(Gs[i] - Gs[j], 0.f)) * accS(e) : 0.f;
        tSsA(e) = BF(val);
        accO(e) *= eG[i];
    }
    fence_async_shared();
    __syncthreads();  // A' is complete
    return coords;
}

// Writes a 64 x 64 fp32 accumulator block (coords: each element's (row, column)) as bf16 rows
// t0 .. t0 + Lc - 1 of o ([tokens, H, V], head h, columns col0 ..), staged through o_s (64 rows
// of kLDO) for 16-byte stores. Starts and ends with every thread of the CTA at a barrier.
template <class Acc, class Coords>
__device__ __forceinline__ void store_block(bf16* o_s, const Acc& acc, const Coords& coords, bf16* __restrict__ o,
                                            int64_t t0, int Lc, int H, int h, int V, size_t col0) {
    __syncthreads();  // whatever o_s held is no longer read
    CUTE_UNROLL
    for (int e = 0; e < size(acc); ++e)
        o_s[get<0>(coords(e)) * kLDO + get<1>(coords(e))] = __float2bfloat16_rn(acc(e));
    __syncthreads();  // the block is staged
#pragma unroll
    for (int idx = threadIdx.x; idx < kChunk * (BVT / 8); idx += kWgThreads) {
        const int i = idx / (BVT / 8), c8 = (idx % (BVT / 8)) * 8;
        if (i < Lc)
            *reinterpret_cast<uint4*>(o + (static_cast<size_t>(t0 + i) * H + h) * V + col0 + c8) =
                *reinterpret_cast<const uint4*>(o_s + i * kLDO + c8);
    }
    __syncthreads();  // o_s is free again
}

}  // namespace sgla_wg
