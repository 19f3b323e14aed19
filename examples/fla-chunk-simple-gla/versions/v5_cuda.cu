// fla-chunk-simple-gla v5: the forward with states passed between segments of kSeg chunks instead
// of between chunks (tests/examples/sgla_chunked_model.py, segmented_forward), on wgmma; v2's
// backward.
//
// A split forward (FLA's, v3's, v4's) writes and reads back every chunk's K x V state: at
// B1_T8192_H96_D128 that is 805 MB beside the 821 MB of q, k, v and o, and its floor at 4.8 TB/s
// (0.339 ms) is already twice FLA's speed (the example's README). Here only one state per segment
// goes through memory, in three kernels:
//   1. seg_walk_kernel<K, false>, one warpgroup per (segment, head, 64-column tile of V), all at
//      once: the segment's own contribution U = sum_t exp(G_end - G_t) k_t^T v_t, walked chunk by
//      chunk (U = exp(gl) U + k^T diag(exp(gl - G)) v, a K x 64 fp32 accumulator over K / 64
//      wgmma atoms), to scratch in fp32, and the segment's decay exp(sum g);
//   2. seg_scan_kernel, per (sequence, head): E_0 = h0, E_{s+1} = a_s E_s + U_s in fp32, each E_s
//      to scratch, ht = the last;
//   3. seg_walk_kernel<K, true>, again all at once: the fused walk over the segment's chunks from
//      E_s, per chunk S = q k^T and O = q bf16(state) issued together, then O = diag(scale e^G) O
//      + A' v and the state update in one batch, the output staged for 16-byte stores.
// Segment slots: dense n NS + s (NS = ceil(T / (64 kSeg))); varlen cu[n] / (64 kSeg) + n + s, as
// the chunk slots of sgla_bwd.cuh one level up. Mask before exp everywhere (no exp of a positive
// number). Smem, pass 3: K = 64 56 KB, 128 88 KB (two CTAs an SM), 256 152 KB; pass 1: 24, 40,
// 72 KB. Registers: the state is K / 2 floats a thread.
#include "sgla_wg.cuh"

namespace sgla_v5 {

using namespace sgla_v1;
using namespace sgla_v2;
using namespace sgla_wg;
using namespace cute;

constexpr int kSeg = 8;              // chunks a segment
constexpr int kSegTokens = kSeg * BT;

// Grid (slots * V / 64, H), 128 threads. kOut = false: pass 1 (U and the decay to scratch);
// kOut = true: pass 3 (o, from the entering states E).
template <int K, bool kOut>
__global__ void __launch_bounds__(kWgThreads, K == 256 ? 1 : 2)
    seg_walk_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                    const float* __restrict__ g, const int* __restrict__ cu, float* __restrict__ states,
                    float* __restrict__ decays, bf16* __restrict__ o, int T, int H, int V, int N, int NS, float scale) {
    using L = SegLayout<K, kOut>;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int tiles = V / BVT;
    const int slot = blockIdx.x / tiles, vt = blockIdx.x % tiles, h = blockIdx.y;
    const int tid = threadIdx.x;
    int64_t s0;
    int Ls;
    if (!span_of_slot<kSegTokens>(cu, slot, N, T, NS, s0, Ls)) return;

    BF* kt_s = reinterpret_cast<BF*>(smem + L::oKT);
    BF* v2_s = reinterpret_cast<BF*>(smem + L::oV2);
    BF* q_s = reinterpret_cast<BF*>(smem + L::oQ);
    BF* k_s = reinterpret_cast<BF*>(smem + L::oK);
    BF* st_s = reinterpret_cast<BF*>(smem + L::oSt);
    BF* v_s = reinterpret_cast<BF*>(smem + L::oV);
    BF* a_s = reinterpret_cast<BF*>(smem + L::oA);
    float* Gs = reinterpret_cast<float*>(smem + L::oGates);
    float* eG = Gs + BT;      // scale exp(G)
    float* rs = eG + BT;      // exp(gl - G), 0 past the chunk
    float* glp = rs + BT;     // gl
    const typename L::QK lqk{};
    const typename L::KT lkt{};
    const typename L::St lst{};
    const typename L::Vt lv{};
    const size_t col0 = static_cast<size_t>(vt) * BVT;

    // The state: K x 64 fp32 over K / 64 atoms; its coordinates (k index, column).
    MmaT mma_t;
    auto thr_t = mma_t.get_thread_slice(tid);
    Tensor accU = partition_fragment_C(mma_t, Shape<Int<K>, Int<BVT>>{});
    Tensor tUcU = thr_t.partition_C(make_identity_tensor(Shape<Int<K>, Int<BVT>>{}));
    const size_t state = (static_cast<size_t>(slot) * H + h) * K * V + col0;
    if constexpr (kOut) {
        CUTE_UNROLL
        for (int e = 0; e < size(accU); ++e)
            accU(e) = states[state + static_cast<size_t>(get<0>(tUcU(e))) * V + get<1>(tUcU(e))];
    } else {
        clear(accU);
    }
    Tensor sKT = make_tensor(make_smem_ptr(kt_s), lkt);
    Tensor sV2 = make_tensor(make_smem_ptr(v2_s), lv);
    Tensor tUrK = thr_t.partition_fragment_A(sKT);
    Tensor tUrV = thr_t.partition_fragment_B(sV2);

    float log_decay = 0.f;  // sum of the segment's g
#pragma unroll 1
    for (int c0 = 0; c0 < Ls; c0 += BT) {
        const int64_t t0 = s0 + c0;
        const int Lc = Ls - c0 < BT ? Ls - c0 : BT;
        load_chunk_rows<K, true>(kt_s, lkt, k, t0, Lc, H, h, K, 0);
        load_chunk_rows<BVT, true>(v2_s, lv, v, t0, Lc, H, h, V, col0);
        if constexpr (kOut) {
            load_chunk_rows<K, false>(q_s, lqk, q, t0, Lc, H, h, K, 0);
            load_chunk_rows<K, false>(k_s, lqk, k, t0, Lc, H, h, K, 0);
            load_chunk_rows<BVT, true>(v_s, lv, v, t0, Lc, H, h, V, col0);
        }
        load_gates(Gs, g, t0, Lc, H, h);
        cp_async_commit();
        sgla_v1::cp_async_wait<0>();
        __syncthreads();  // (1) the chunk is in shared memory
        if (tid < 32) {  // the chunk's gates and row factors
            const float gl = chunk_gates(Gs, Gs, eG, rs, scale, tid, Lc);
            if (tid == 0) glp[0] = gl;
        }
        __syncthreads();  // (2) the factors are visible
        const float gl = glp[0];
        log_decay += gl;
#pragma unroll 1
        for (int idx = tid; idx < BT * BVT; idx += kWgThreads) {  // v' = diag(exp(gl - G)) v
            const int j = idx / BVT, c = idx % BVT;
            BF& x = v2_s[lv(c, j)];
            x = BF(static_cast<float>(x) * rs[j]);
        }
        if constexpr (kOut) {  // the state entering the chunk, in bf16, as q S's B operand
            CUTE_UNROLL
            for (int e = 0; e < size(accU); ++e) st_s[lst(get<1>(tUcU(e)), get<0>(tUcU(e)))] = BF(accU(e));
        }
        const float d = expf(fminf(gl, 0.f));
        CUTE_UNROLL
        for (int e = 0; e < size(accU); ++e) accU(e) *= d;
        fence_async_shared();
        __syncthreads();  // (3) v' (and the bf16 state) complete

        if constexpr (kOut) {
            Tensor sQ = make_tensor(make_smem_ptr(q_s), lqk);
            Tensor sK = make_tensor(make_smem_ptr(k_s), lqk);
            Tensor sSt = make_tensor(make_smem_ptr(st_s), lst);
            Tensor sV = make_tensor(make_smem_ptr(v_s), lv);
            Tensor sA = make_tensor(make_smem_ptr(a_s), typename L::At{});
            MmaMN mma_o;
            auto thr_o = mma_o.get_thread_slice(tid);
            Tensor accO = partition_fragment_C(mma_o, Shape<Int<BT>, Int<BVT>>{});
            const auto coords = chunk_output_head(sQ, sK, sSt, sA, accO, Gs, eG, scale, Lc, [] {});

            Tensor tOrA = thr_o.partition_fragment_A(sA);
            Tensor tOrV = thr_o.partition_fragment_B(sV);
            warpgroup_fence_operand(accO);
            warpgroup_fence_operand(accU);
            warpgroup_arrive();
            gemm(mma_o, tOrA, tOrV, accO);   // O += A' v
            gemm(mma_t, tUrK, tUrV, accU);   // state += k^T v'
            warpgroup_commit_batch();
            warpgroup_wait<0>();
            warpgroup_fence_operand(accO);
            warpgroup_fence_operand(accU);
            store_block(reinterpret_cast<bf16*>(q_s), accO, coords, o, t0, Lc, H, h, V, col0);  // over q and k
        } else {
            warpgroup_fence_operand(accU);
            warpgroup_arrive();
            gemm(mma_t, tUrK, tUrV, accU);  // U += k^T v'
            wgmma_wait(accU);
            __syncthreads();  // (5) the tiles are free for the next chunk
        }
    }
    if constexpr (!kOut) {
        CUTE_UNROLL
        for (int e = 0; e < size(accU); ++e)
            states[state + static_cast<size_t>(get<0>(tUcU(e))) * V + get<1>(tUcU(e))] = accU(e);
        if (vt == 0 && tid == 0) decays[static_cast<size_t>(slot) * H + h] = expf(fminf(log_decay, 0.f));
    }
}

// Grid (K V / 256, H, N), 256 threads: one state element of (sequence, head) a thread, through the
// sequence's segments in order. U holds each segment's own contribution on entry; E (which may be
// U itself: each slot is read before it is written, so neither pointer is __restrict__) gets the
// state entering each segment.
__global__ void __launch_bounds__(256)
    seg_scan_kernel(const float* U, const float* __restrict__ decays, const float* __restrict__ h0,
                    const int* __restrict__ cu, float* E, float* __restrict__ ht, int T, int H, int KV, int NS) {
    const int e = blockIdx.x * 256 + threadIdx.x, h = blockIdx.y, n = blockIdx.z;
    if (e >= KV) return;
    int64_t base, count;
    if (cu != nullptr) {
        const int64_t bos = cu[n], eos = cu[n + 1];
        base = bos / kSegTokens + n;
        count = (eos - bos + kSegTokens - 1) / kSegTokens;
    } else {
        base = static_cast<int64_t>(n) * NS;
        count = (T + kSegTokens - 1) / kSegTokens;
    }
    const size_t at = (static_cast<size_t>(n) * H + h) * KV + e;
    float s = h0[at];
    for (int64_t i = 0; i < count; ++i) {
        const size_t slot = static_cast<size_t>(base + i) * H + h;
        const float u = U[slot * KV + e];
        E[slot * KV + e] = s;
        s = decays[slot] * s + u;
    }
    ht[at] = s;
}

template <int K, bool kOut>
int launch_walk(const FwdArgs& f, float* states, float* decays, int64_t nseg, int NS) {
    constexpr size_t bytes = SegLayout<K, kOut>::kBytes;
    static_assert(bytes <= 227 * 1024, "shared memory");
    static const bool ok = allow_smem(seg_walk_kernel<K, kOut>, bytes);
    if (!ok) return KL_ERR_LAUNCH;
    const int64_t ctas = nseg * (f.V / BVT);
    if (ctas > 0x7fffffff) return KL_ERR_UNSUPPORTED;
    seg_walk_kernel<K, kOut><<<dim3(static_cast<unsigned>(ctas), static_cast<unsigned>(f.H)), kWgThreads, bytes,
                               f.stream>>>(f.q, f.k, f.v, f.g, f.cu, states, decays, f.o, static_cast<int>(f.T),
                                           static_cast<int>(f.H), static_cast<int>(f.V), static_cast<int>(f.N), NS,
                                           f.scale);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

template <int K>
int segmented(const FwdArgs& f, float* states, float* decays, int64_t nseg, int NS) {
    int rc = KL_OK;
    if (nseg > 0) rc = launch_walk<K, false>(f, states, decays, nseg, NS);
    if (rc != KL_OK) return rc;
    const int KV = static_cast<int>(f.K * f.V);
    seg_scan_kernel<<<dim3(static_cast<unsigned>((KV + 255) / 256), static_cast<unsigned>(f.H),
                           static_cast<unsigned>(f.N)),
                      256, 0, f.stream>>>(states, decays, f.h0, f.cu, states, f.ht, static_cast<int>(f.T),
                                          static_cast<int>(f.H), KV, NS);
    if (cudaGetLastError() != cudaSuccess) return KL_ERR_LAUNCH;
    return nseg > 0 ? launch_walk<K, true>(f, states, decays, nseg, NS) : KL_OK;
}

inline int fwd(const kl_args* a, bool varlen) {
    FwdArgs f{};
    if (const int rc = fwd_args(a, varlen, f); rc != KL_OK || f.N == 0) return rc;
    const int64_t NS = (f.T + kSegTokens - 1) / kSegTokens;
    const int64_t nseg = varlen ? (f.B * f.T) / kSegTokens + f.N + 1 : f.N * NS;
    if (nseg > 0x7fffffff || NS > 0x7fffffff) return KL_ERR_UNSUPPORTED;
    keep_pool_memory();
    // The segments' states (U, then E in place: fp32, K x V per slot and head) and decays.
    const size_t per = static_cast<size_t>(f.H * f.K * f.V);
    const size_t n_states = static_cast<size_t>(nseg > 0 ? nseg : 1) * per;
    const size_t n_decays = static_cast<size_t>(nseg > 0 ? nseg : 1) * static_cast<size_t>(f.H);
    void* buf = nullptr;
    if (cudaMallocAsync(&buf, (n_states + n_decays) * sizeof(float), f.stream) != cudaSuccess) return KL_ERR_LAUNCH;
    float* states = static_cast<float*>(buf);
    float* decays = states + n_states;
    int rc;
    switch (f.K) {
        case 64: rc = segmented<64>(f, states, decays, nseg, static_cast<int>(NS)); break;
        case 128: rc = segmented<128>(f, states, decays, nseg, static_cast<int>(NS)); break;
        default: rc = segmented<256>(f, states, decays, nseg, static_cast<int>(NS)); break;
    }
    if (cudaFreeAsync(buf, f.stream) != cudaSuccess && rc == KL_OK) rc = KL_ERR_LAUNCH;
    return rc;
}

}  // namespace sgla_v5

extern "C" int chunk_simple_gla_fwd(const kl_args* a) { return sgla_v5::fwd(a, false); }
extern "C" int chunk_simple_gla_fwd_varlen(const kl_args* a) { return sgla_v5::fwd(a, true); }
extern "C" int chunk_simple_gla_bwd(const kl_args* a) { return sgla_v2::bwd(a, false); }
extern "C" int chunk_simple_gla_bwd_varlen(const kl_args* a) { return sgla_v2::bwd(a, true); }
