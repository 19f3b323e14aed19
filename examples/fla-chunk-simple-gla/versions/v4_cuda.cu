// fla-chunk-simple-gla v4: v3's split forward with the output pass on Hopper's warpgroup MMA
// (wgmma, through CuTe's SM90 GMMA atoms; CuTe from the PyPI package nvidia-cutlass, found through
// op.toml's [build] include_dirs), and v2's backward.
//
// v3's output pass multiplies on wmma (mma.sync, 16 x 16 tiles through per-warp fragments loaded
// from padded rows), stages every result block through shared memory to scale or store it, and
// waits for each tile's loads before any product. Here one warpgroup (128 threads) per
// (V tile of 64, chunk slot, head) does the chunk's three products as 64-row wgmmas reading both
// operands from 128-byte-swizzled shared memory:
//      S  = q k^T               (64 x 64 over K; q, k K-major)
//      O  = q h_c[:, tile]      (64 x 64 over K; h_c stored [K][V] row-major: MN-major B)
//      O  = diag(scale e^G) O + A' v[:, tile]   (A' = mask(scale e^{G_i - G_j} S) in bf16, K-major;
//                                                v stored [token][V]: MN-major B)
// S and the first O are issued back to back; A' is written from S's accumulators to shared
// memory (a proxy fence, then the third wgmma reads it); the mask is applied before the exp, as
// in every version (no exp of a positive number). The output goes through shared memory once for
// 16-byte stores of the rows < L. Grid: x = slot * (V / 64) + tile (a chunk's tiles adjacent, so
// its q and k come from L2 the second time), y = head.
// Smem: q and k 64 x K each, h 64 x K, v 64 x 64, A' 64 x 64, gates: K = 64 40 KB, 128 64 KB (three
// CTAs an SM), 256 112 KB (two).
#include "sgla_split_fwd.cuh"
#include "sgla_wg_layout.hpp"

namespace sgla_v4 {

using namespace sgla_v1;
using namespace sgla_v2;
using namespace cute;

static_assert(kChunk == BT, "sgla_wg_layout.hpp's chunk is the kernels' chunk");

// Shared-memory writes of the generic proxy (cp.async, st.shared) made visible to wgmma's reads.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

template <class Acc>
__device__ __forceinline__ void wgmma_wait(Acc& acc) {
    warpgroup_commit_batch();
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
}

// Grid (slots * V / 64, H), 128 threads. o for the chunk's rows < L, columns tile * 64 ...
template <int K>
__global__ void __launch_bounds__(kWgThreads, K == 256 ? 2 : 3)
    out_wg_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                  const float* __restrict__ g, const int* __restrict__ cu, const bf16* __restrict__ hs_all,
                  bf16* __restrict__ o, int T, int H, int V, int N, int NT, float scale) {
    using L = WgLayout<K>;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int tiles = V / BVT;
    const int slot = blockIdx.x / tiles, vt = blockIdx.x % tiles, h = blockIdx.y;
    const int tid = threadIdx.x;
    int64_t t0;
    int Lc;
    if (!chunk_of_slot(cu, slot, N, T, NT, t0, Lc)) return;

    BF* q_s = reinterpret_cast<BF*>(smem + L::oQ);
    BF* k_s = reinterpret_cast<BF*>(smem + L::oK);
    BF* h_s = reinterpret_cast<BF*>(smem + L::oH);
    BF* v_s = reinterpret_cast<BF*>(smem + L::oV);
    BF* a_s = reinterpret_cast<BF*>(smem + L::oA);
    float* Gs = reinterpret_cast<float*>(smem + L::oGates);
    float* eG = Gs + BT;
    const typename L::QK lqk{};
    const typename L::Hc lh{};
    const typename L::Vt lv{};

    // Loads: 16 bytes = 8 consecutive elements along the contiguous axis, which a 128-byte swizzle
    // keeps together. Rows >= L are zero-filled and never read from memory.
    const size_t col0 = static_cast<size_t>(vt) * BVT;
#pragma unroll 1
    for (int idx = tid; idx < BT * (K / 8); idx += kWgThreads) {
        const int r = idx / (K / 8), c8 = (idx % (K / 8)) * 8;
        const bool ok = r < Lc;
        const size_t src = (static_cast<size_t>(t0 + (ok ? r : 0)) * H + h) * K + c8;
        cp_async16(q_s + lqk(r, c8), q + src, ok);
        cp_async16(k_s + lqk(r, c8), k + src, ok);
    }
    load_gates(Gs, g, t0, Lc, H, h);
    const size_t state = (static_cast<size_t>(slot) * H + h) * K * V + col0;
#pragma unroll 1
    for (int idx = tid; idx < K * (BVT / 8); idx += kWgThreads) {
        const int kk = idx / (BVT / 8), v8 = (idx % (BVT / 8)) * 8;
        cp_async16(h_s + lh(v8, kk), hs_all + state + static_cast<size_t>(kk) * V + v8, true);
    }
#pragma unroll 1
    for (int idx = tid; idx < BT * (BVT / 8); idx += kWgThreads) {
        const int j = idx / (BVT / 8), v8 = (idx % (BVT / 8)) * 8;
        const bool ok = j < Lc;
        cp_async16(v_s + lv(v8, j), v + (static_cast<size_t>(t0 + (ok ? j : 0)) * H + h) * V + col0 + v8, ok);
    }
    cp_async_commit();
    sgla_v1::cp_async_wait<0>();
    fence_async_shared();
    __syncthreads();  // (1) every tile and the gates are in shared memory

    Tensor sQ = make_tensor(make_smem_ptr(q_s), lqk);
    Tensor sK = make_tensor(make_smem_ptr(k_s), lqk);
    Tensor sH = make_tensor(make_smem_ptr(h_s), lh);
    Tensor sV = make_tensor(make_smem_ptr(v_s), lv);
    Tensor sA = make_tensor(make_smem_ptr(a_s), typename L::At{});
    Mma mma_s;
    MmaMN mma_o;
    auto thr_s = mma_s.get_thread_slice(tid);
    auto thr_o = mma_o.get_thread_slice(tid);
    Tensor accS = partition_fragment_C(mma_s, Shape<Int<BT>, Int<BT>>{});
    Tensor accO = partition_fragment_C(mma_o, Shape<Int<BT>, Int<BVT>>{});
    clear(accS);
    clear(accO);
    Tensor tSrQ = thr_s.partition_fragment_A(sQ);
    Tensor tSrK = thr_s.partition_fragment_B(sK);
    Tensor tOrQ = thr_o.partition_fragment_A(sQ);
    Tensor tOrH = thr_o.partition_fragment_B(sH);
    warpgroup_fence_operand(accS);
    warpgroup_fence_operand(accO);
    warpgroup_arrive();
    gemm(mma_s, tSrQ, tSrK, accS);  // S = q k^T
    gemm(mma_o, tOrQ, tOrH, accO);  // O = q h_c
    warpgroup_commit_batch();

    if (tid < 32) {  // meanwhile: the chunk's inclusive scan of g (rows >= L are 0)
        float a = Gs[tid], b = Gs[tid + 32];
        (void)scan_gates(a, b, tid, Lc);
        Gs[tid] = a;
        Gs[tid + 32] = b;
        eG[tid] = scale * expf(fminf(a, 0.f));
        eG[tid + 32] = scale * expf(fminf(b, 0.f));
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(accS);
    warpgroup_fence_operand(accO);
    __syncthreads();  // (2) the gates are visible

    // A' = mask(scale exp(G_i - G_j) S) to shared memory in bf16; O's rows scaled by scale exp(G_i).
    // The accumulators of both MMAs are laid out alike (one 64 x 64 F32 atom): one coordinate map.
    Tensor cC = make_identity_tensor(Shape<Int<BT>, Int<BT>>{});
    Tensor tCcC = thr_s.partition_C(cC);
    Tensor tSsA = thr_s.partition_C(sA);
    CUTE_UNROLL
    for (int e = 0; e < size(accS); ++e) {
        const int i = get<0>(tCcC(e)), j = get<1>(tCcC(e));
        const float gi = Gs[i], gj = Gs[j];
        const float val = (j <= i && i < Lc) ? scale * expf(fminf(gi - gj, 0.f)) * accS(e) : 0.f;
        tSsA(e) = BF(val);
        accO(e) *= eG[i];
    }
    fence_async_shared();
    __syncthreads();  // (3) A' is complete

    Tensor tOrA = thr_o.partition_fragment_A(sA);
    Tensor tOrV = thr_o.partition_fragment_B(sV);
    warpgroup_fence_operand(accO);
    warpgroup_arrive();
    gemm(mma_o, tOrA, tOrV, accO);  // O += A' v
    wgmma_wait(accO);
    __syncthreads();  // (4) every product is done: q and k's space is free for the output

    bf16* o_s = reinterpret_cast<bf16*>(smem + L::oQ);
    CUTE_UNROLL
    for (int e = 0; e < size(accO); ++e) {
        const int i = get<0>(tCcC(e)), c = get<1>(tCcC(e));
        o_s[i * L::LDO + c] = __float2bfloat16_rn(accO(e));
    }
    __syncthreads();  // (5) the output block is staged
#pragma unroll
    for (int idx = tid; idx < BT * (BVT / 8); idx += kWgThreads) {
        const int i = idx / (BVT / 8), c8 = (idx % (BVT / 8)) * 8;
        if (i < Lc)
            *reinterpret_cast<uint4*>(o + (static_cast<size_t>(t0 + i) * H + h) * V + col0 + c8) =
                *reinterpret_cast<const uint4*>(o_s + i * L::LDO + c8);
    }
}

// The output pass for the split forward (sgla_split_fwd.cuh).
struct WgmmaOut {
    template <int K>
    static int launch(const FwdArgs& f, const bf16* hs, int64_t nslots, int NT) {
        constexpr size_t bytes = WgLayout<K>::kBytes;
        static_assert(bytes <= 227 * 1024, "shared memory");
        static const bool ok = allow_smem(out_wg_kernel<K>, bytes);
        if (!ok) return KL_ERR_LAUNCH;
        if (nslots <= 0) return KL_OK;
        const int64_t ctas = nslots * (f.V / BVT);
        if (ctas > 0x7fffffff) return KL_ERR_UNSUPPORTED;
        return sgla_split::launch_out_kernel(out_wg_kernel<K>,
                                             dim3(static_cast<unsigned>(ctas), static_cast<unsigned>(f.H)),
                                             kWgThreads, bytes, f, hs, NT);
    }
};

}  // namespace sgla_v4

extern "C" int chunk_simple_gla_fwd(const kl_args* a) { return sgla_split::fwd<sgla_v4::WgmmaOut>(a, false); }
extern "C" int chunk_simple_gla_fwd_varlen(const kl_args* a) { return sgla_split::fwd<sgla_v4::WgmmaOut>(a, true); }
extern "C" int chunk_simple_gla_bwd(const kl_args* a) { return sgla_v2::bwd(a, false); }
extern "C" int chunk_simple_gla_bwd_varlen(const kl_args* a) { return sgla_v2::bwd(a, true); }
