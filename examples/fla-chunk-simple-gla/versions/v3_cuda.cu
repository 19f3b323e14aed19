// fla-chunk-simple-gla v3: the forward split as FLA splits it — a state pass, then every chunk's
// output at once — with v2's backward (sgla_bwd.cuh).
//
// v1's fused forward keeps a sequence's chunks serial inside one CTA per (sequence, head, V tile):
// q k^T, the masked A' v and q h all wait for the chunk before. Here:
//   1. states: the backward's forward walk (sgla_bwd.cuh, walk_kernel<K, BV, false>) stores the
//      state entering every chunk (bf16, stream-ordered scratch) and ht; per chunk it does only
//      k'^T v, so the serial part is a third of v1's.
//   2. output: one CTA per (chunk slot, head), all at once:
//          o = diag(scale exp(G)) q h_c + A' v,   A'_ij = scale exp(G_i - G_j) q_i.k_j  (j <= i < L)
//      per 64-column tile of V: the K x 64 tile of h_c and the 64 x 64 tile of v in shared
//      memory, q h_c and A' v on bf16 tensor cores.
// Same chunk slots, scratch pool and mask-before-exp as the backward (no exp of a positive
// number). Smem of the output kernel: K = 64 55 KB, 128 80 KB (two CTAs an SM), 256 131 KB.
#include "sgla_split_fwd.cuh"

namespace sgla_v3 {

using namespace sgla_v1;
using namespace sgla_v2;

template <int K>
struct OutLayout {
    static constexpr int LDK = K + 8;
    static constexpr int LDT = 64 + 8;  // A', the h tile (K rows), the v tile (64 rows)
    static constexpr size_t kQ = align128(static_cast<size_t>(BT) * LDK * 2);
    static constexpr size_t kA = align128(static_cast<size_t>(BT) * LDT * 2);
    static constexpr size_t kH = align128(static_cast<size_t>(K) * LDT * 2);
    static constexpr size_t oK = kQ, oA = 2 * kQ, oH = oA + kA, oV = oH + kH;
    static constexpr size_t oScr = oV + kA;
    static constexpr size_t oGates = oScr + kWarps * 256 * 4;  // G, scale exp(G)
    static constexpr size_t kBytes = oGates + align128(2 * BT * 4);
};

// Grid (slots, H). o for the chunk's rows < L.
template <int K>
__global__ void __launch_bounds__(kThreads, K == 256 ? 1 : 2)
    out_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
               const float* __restrict__ g, const int* __restrict__ cu, const bf16* __restrict__ hs_all,
               bf16* __restrict__ o, int T, int H, int V, int N, int NT, float scale) {
    using L = OutLayout<K>;
    constexpr int LDK = L::LDK, LDT = L::LDT;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int slot = blockIdx.x, h = blockIdx.y;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int cb = warp % 4, rb0 = warp / 4;  // 64 x 64 blocks (rb0, cb) and (rb0 + 2, cb)
    int64_t t0;
    int Lc;
    if (!chunk_of_slot(cu, slot, N, T, NT, t0, Lc)) return;

    bf16* qs = reinterpret_cast<bf16*>(smem);
    bf16* ks = reinterpret_cast<bf16*>(smem + L::oK);
    bf16* As = reinterpret_cast<bf16*>(smem + L::oA);
    bf16* Hs = reinterpret_cast<bf16*>(smem + L::oH);
    bf16* Vs = reinterpret_cast<bf16*>(smem + L::oV);
    float* scr = reinterpret_cast<float*>(smem + L::oScr) + warp * 256;
    float* Gs = reinterpret_cast<float*>(smem + L::oGates);
    float* eG = Gs + BT;

    load_rows<K>(qs, LDK, q, t0, Lc, H, h, K, 0);
    load_rows<K>(ks, LDK, k, t0, Lc, H, h, K, 0);
    load_gates(Gs, g, t0, Lc, H, h);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();  // (1) q, k, g loaded
    if (warp == 0) (void)chunk_gates(Gs, Gs, eG, nullptr, scale, lane, Lc);
    FragAcc accA[2];
    lower_blocks_abt<K>(accA, qs, ks, LDK, rb0, cb);
    __syncthreads();  // (2) the gates are visible
    mask_decay_store(accA, scr, Gs, scale, Lc, rb0, cb, lane, As, LDT, false);

    const size_t state = (static_cast<size_t>(slot) * H + h) * K * V;
#pragma unroll 1
    for (int vt = 0; vt < V / 64; ++vt) {
#pragma unroll 1
        for (int idx = threadIdx.x; idx < K * 8; idx += kThreads) {  // h_c: K rows x 8 segments of the tile
            const int r = idx / 8, c8 = (idx % 8) * 8;
            cp_async16(Hs + r * LDT + c8, hs_all + state + static_cast<size_t>(r) * V + vt * 64 + c8, true);
        }
        load_rows<64>(Vs, LDT, v, t0, Lc, H, h, V, static_cast<size_t>(vt) * 64);
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();  // (3) the tiles are loaded; A' is complete
#pragma unroll
        for (int f = 0; f < 2; ++f) {
            const int ri = rb0 + 2 * f;
            FragAcc acc;
            wmma::fill_fragment(acc, 0.f);
#pragma unroll 2
            for (int kk = 0; kk < K / 16; ++kk) {
                FragARow aq;
                wmma::load_matrix_sync(aq, qs + ri * 16 * LDK + kk * 16, LDK);
                FragBRow bh;
                wmma::load_matrix_sync(bh, Hs + kk * 16 * LDT + cb * 16, LDT);
                wmma::mma_sync(acc, aq, bh, acc);
            }
            scale_block_rows(acc, scr, eG + ri * 16, lane);
            for (int jb = 0; jb <= ri; ++jb) {  // A' is zero right of the diagonal block
                FragARow aa;
                wmma::load_matrix_sync(aa, As + ri * 16 * LDT + jb * 16, LDT);
                FragBRow bv;
                wmma::load_matrix_sync(bv, Vs + jb * 16 * LDT + cb * 16, LDT);
                wmma::mma_sync(acc, aa, bv, acc);
            }
            store_block_bf16(acc, scr, ri, Lc, t0, H, h, V, static_cast<size_t>(vt) * 64 + cb * 16, o, lane);
            __syncwarp();
        }
        __syncthreads();  // (4) the tiles are free
    }
}

template <int K>
int launch_out(const FwdArgs& f, const bf16* hs, int64_t nslots, int NT) {
    constexpr size_t bytes = OutLayout<K>::kBytes;
    static_assert(bytes <= 227 * 1024, "shared memory");
    static const bool ok = allow_smem(out_kernel<K>, bytes);
    if (!ok) return KL_ERR_LAUNCH;
    if (nslots <= 0) return KL_OK;
    return sgla_split::launch_out_kernel(out_kernel<K>, dim3(static_cast<unsigned>(nslots), static_cast<unsigned>(f.H)),
                                         kThreads, bytes, f, hs, NT);
}

// The output pass for the split forward (sgla_split_fwd.cuh).
struct WmmaOut {
    template <int K>
    static int launch(const FwdArgs& f, const bf16* hs, int64_t nslots, int NT) {
        return launch_out<K>(f, hs, nslots, NT);
    }
};

}  // namespace sgla_v3

extern "C" int chunk_simple_gla_fwd(const kl_args* a) { return sgla_split::fwd<sgla_v3::WmmaOut>(a, false); }
extern "C" int chunk_simple_gla_fwd_varlen(const kl_args* a) { return sgla_split::fwd<sgla_v3::WmmaOut>(a, true); }
extern "C" int chunk_simple_gla_bwd(const kl_args* a) { return sgla_v2::bwd(a, false); }
extern "C" int chunk_simple_gla_bwd_varlen(const kl_args* a) { return sgla_v2::bwd(a, true); }
