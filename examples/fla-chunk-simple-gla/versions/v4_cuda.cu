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
#include "sgla_wg.cuh"

namespace sgla_v4 {

using namespace sgla_v1;
using namespace sgla_v2;
using namespace sgla_wg;
using namespace cute;

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

    // Loads: rows >= L zero-filled, never read from memory (sgla_wg.cuh).
    const size_t col0 = static_cast<size_t>(vt) * BVT;
    load_chunk_rows<K, false>(q_s, lqk, q, t0, Lc, H, h, K, 0);
    load_chunk_rows<K, false>(k_s, lqk, k, t0, Lc, H, h, K, 0);
    load_gates(Gs, g, t0, Lc, H, h);
    const size_t state = (static_cast<size_t>(slot) * H + h) * K * V + col0;
#pragma unroll 1
    for (int idx = tid; idx < K * (BVT / 8); idx += kWgThreads) {
        const int kk = idx / (BVT / 8), v8 = (idx % (BVT / 8)) * 8;
        cp_async16(h_s + lh(v8, kk), hs_all + state + static_cast<size_t>(kk) * V + v8, true);
    }
    load_chunk_rows<BVT, true>(v_s, lv, v, t0, Lc, H, h, V, col0);
    cp_async_commit();
    sgla_v1::cp_async_wait<0>();
    fence_async_shared();
    __syncthreads();  // (1) every tile and the gates are in shared memory

    Tensor sQ = make_tensor(make_smem_ptr(q_s), lqk);
    Tensor sK = make_tensor(make_smem_ptr(k_s), lqk);
    Tensor sH = make_tensor(make_smem_ptr(h_s), lh);
    Tensor sV = make_tensor(make_smem_ptr(v_s), lv);
    Tensor sA = make_tensor(make_smem_ptr(a_s), typename L::At{});
    MmaMN mma_o;
    auto thr_o = mma_o.get_thread_slice(tid);
    Tensor accO = partition_fragment_C(mma_o, Shape<Int<BT>, Int<BVT>>{});
    const auto coords = chunk_output_head(sQ, sK, sH, sA, accO, Gs, eG, scale, Lc, [&] {
        // while S and q h_c are in flight: the chunk's gates
        if (tid < 32) (void)chunk_gates(Gs, Gs, eG, nullptr, scale, tid, Lc);
    });

    Tensor tOrA = thr_o.partition_fragment_A(sA);
    Tensor tOrV = thr_o.partition_fragment_B(sV);
    warpgroup_fence_operand(accO);
    warpgroup_arrive();
    gemm(mma_o, tOrA, tOrV, accO);  // O += A' v
    wgmma_wait(accO);
    store_block(reinterpret_cast<bf16*>(smem + L::oQ), accO, coords, o, t0, Lc, H, h, V, col0);  // over q and k
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
