// sgla_fwd.cuh: the forward of FLA's chunk_simple_gla (simple gated linear attention, one scalar
// log-decay per token and head) as one fused CUDA kernel, dense and varlen, with what the
// backward kernels share (the chunk size, the warp count, cp.async, wmma fragment types). Included
// by versions/v1_cuda.cu (the forward alone) and versions/v2_cuda.cu (forward and backward).
//
// The op, per sequence and head (S a K x V fp32 state, g_t <= 0 a scalar log-decay):
//     S_t = exp(g_t) S_{t-1} + k_t^T v_t     S_0 = h0     o_t = scale q_t S_t     ht = S_T
//
// Chunked form (64-token chunks, as FLA). A chunk of L <= 64 valid tokens with state h before it,
// G_i = g_0 + ... + g_i (inclusive cumsum within the chunk, fp32):
//     o_i    = scale * ( exp(G_i) (q_i h)  +  sum_{j <= i} exp(G_i - G_j) (q_i . k_j) v_j )
//     h_next = exp(G_{L-1}) h  +  sum_{j < L} exp(G_{L-1} - G_j) k_j^T v_j
//
// Kernel: one CTA (8 warps) per (sequence, head, BV-column tile of V) walks its sequence's chunks
// in order; nothing per chunk is materialised in global memory. BV = 64, or 32 when 64-column
// tiles would leave SMs idle (B2_T16384_H16: 64 CTAs of 64 columns on 132 SMs). The K x BV state
// tile stays in fp32 wmma accumulator fragments (registers) for the whole sequence: warp w owns
// the 16 x 16 blocks (kr, vc) with vc = w % (BV/16) and kr = w / (BV/16) + (8 / (BV/16)) i.
// Per chunk:
//   load    q, k (64 x K) and the v tile (64 x BV) bf16, g (64) fp32 into shared memory with
//           cp.async, double-buffered (chunk c+1 streams in while chunk c is computed), except
//           K = 128 at BV = 64: one buffer, so that two CTAs share an SM. Rows >= L are
//           zero-filled and never read from global memory: in varlen they belong to the next
//           sequence.
//   gates   warp 0 scans g into G, scale exp(G_i), exp(G_{L-1} - G_j) (zero for j >= L),
//           exp(G_{L-1}).
//   A       A = q k^T (64 x 64) on tensor cores (bf16 in, fp32 accumulate), only the blocks on or
//           below the diagonal; A'_ij = scale exp(G_i - G_j) A_ij for j <= i < L, else 0, as bf16.
//   o       o = diag(scale exp(G)) (q h_bf16) + A' v, where h_bf16 is the bf16 copy of the state
//           (FLA also feeds q.h from bf16 states); rows < L are written to o as bf16.
//   state   k is decayed in place to k'_j = exp(G_{L-1} - G_j) k_j (bf16), then the fp32 fragments
//           do h = exp(G_{L-1}) h + k'^T v; the new bf16 copy is written for the next chunk.
// At the end the fragments are stored to ht (fp32). Every o element is written once (each token
// lies in exactly one chunk row < L, each V column in one tile block), every ht element once.
//
// Overflow safety (strong decay: g ~ -8 a token, G ~ -500 over a chunk, exp(+500) = inf): no
// factorisation exp(G_i) * exp(-G_j). Every exp takes a non-positive argument: exp(G_i) with
// G_i <= 0; exp(G_{L-1} - G_j) for j <= L-1; exp(G_i - G_j) only for j <= i, the mask applied
// before the exp. G is a running sum of non-positive terms, so these differences are <= 0 up to
// rounding of the parallel scan; fminf(., 0) makes that exact. Underflow to 0 is harmless.
//
// Smem (bytes; rows padded by 8 bf16 against bank conflicts; stage = q + k + v + g):
//   K=64:  BV=64 2 stages  83 328 (2 CTAs/SM)   BV=32 2 stages  71 040 (2, by registers)
//   K=128: BV=64 1 stage   81 024 (2 CTAs/SM)   BV=32 2 stages 108 928 (2)
//   K=256: BV=64 2 stages 209 280 (1 CTA/SM)    BV=32 2 stages 184 704 (1)
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kloop/kernel.h"

namespace sgla_v1 {

using bf16 = __nv_bfloat16;
using bf162 = __nv_bfloat162;
namespace wmma = nvcuda::wmma;

constexpr int BT = 64;       // tokens per chunk
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;

// 0: the V tile chosen per shape; 32 or 64: forced (a standalone test drives both paths).
static int g_force_bv = 0;

constexpr size_t align128(size_t x) { return (x + 127) & ~static_cast<size_t>(127); }

// Shared-memory layout for head dim K, V tile BV, S stages of q/k/v/g buffers.
template <int K, int BV, int S>
struct Layout {
    static constexpr int LDK = K + 8;    // q, k rows (bf16)
    static constexpr int LDV = BV + 8;   // v tile rows
    static constexpr int LDA = BT + 8;   // masked A rows
    static constexpr int LDH = BV + 8;   // bf16 state rows (K rows)
    static constexpr size_t kQ = align128(static_cast<size_t>(BT) * LDK * 2);
    static constexpr size_t kV = align128(static_cast<size_t>(BT) * LDV * 2);
    static constexpr size_t kG = align128(BT * 4);
    static constexpr size_t kStage = 2 * kQ + kV + kG;   // q, k, v, g
    static constexpr size_t oH = S * kStage;
    static constexpr size_t oA = oH + align128(static_cast<size_t>(K) * LDH * 2);
    static constexpr size_t oScr = oA + align128(static_cast<size_t>(BT) * LDA * 2);
    static constexpr size_t oGates = oScr + kWarps * 256 * 4;   // a 16 x 16 fp32 scratch per warp
    static constexpr size_t kBytes = oGates + align128((3 * BT + 4) * 4);
};

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    const int n = valid ? 16 : 0;  // 0: zero-fill, nothing read
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    const int n = valid ? 4 : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Issues the cp.async loads of a chunk's rows t0 .. t0 + 63 of a [tokens, H, width] bf16 tensor,
// head h, columns col0 .. col0 + W - 1, into dst (row stride ld). Rows >= Lc are zero-filled and
// never read from memory (in varlen they belong to the next sequence).
template <int W>
__device__ __forceinline__ void load_rows(bf16* dst, int ld, const bf16* __restrict__ src, int64_t t0, int Lc, int H,
                                          int h, int width, size_t col0) {
#pragma unroll 1
    for (int idx = threadIdx.x; idx < BT * (W / 8); idx += kThreads) {
        const int r = idx / (W / 8), s = idx % (W / 8);
        const bool ok = r < Lc;
        cp_async16(dst + r * ld + s * 8, src + (static_cast<size_t>(t0 + (ok ? r : 0)) * H + h) * width + col0 + s * 8,
                   ok);
    }
}

// The same for the chunk's 64 gates of head h (fp32 [tokens, H]); rows >= Lc are 0.
__device__ __forceinline__ void load_gates(float* dst, const float* __restrict__ g, int64_t t0, int Lc, int H, int h) {
    if (threadIdx.x < BT) {
        const int r = threadIdx.x;
        const bool ok = r < Lc;
        cp_async4(dst + r, g + static_cast<size_t>(t0 + (ok ? r : 0)) * H + h, ok);
    }
}

// One warp's inclusive scan of a chunk's gates held two per lane (a = g[lane], b = g[lane + 32]):
// a and b become G[lane] and G[lane + 32]; returns G[Lc - 1] (every lane).
__device__ __forceinline__ float scan_gates(float& a, float& b, int lane, int Lc) {
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const float ya = __shfl_up_sync(0xffffffffu, a, off);
        const float yb = __shfl_up_sync(0xffffffffu, b, off);
        if (lane >= off) {
            a += ya;
            b += yb;
        }
    }
    b += __shfl_sync(0xffffffffu, a, 31);
    const float la = __shfl_sync(0xffffffffu, a, (Lc - 1) & 31);
    const float lb = __shfl_sync(0xffffffffu, b, (Lc - 1) & 31);
    return Lc - 1 < 32 ? la : lb;
}

// Warp 0's part of a chunk's gates: G = the inclusive scan of g_in (rows >= Lc are 0) into Gs
// (which may be g_in), eG = scale exp(G), and, when tail is not null, tail = exp(gl - G) for the
// rows < Lc and 0 past them. Returns gl = G[Lc - 1] (every lane). Every exp takes a non-positive
// argument.
__device__ __forceinline__ float chunk_gates(const float* g_in, float* Gs, float* eG, float* tail, float scale,
                                             int lane, int Lc) {
    float a = g_in[lane], b = g_in[lane + 32];
    const float gl = scan_gates(a, b, lane, Lc);
    Gs[lane] = a;
    Gs[lane + 32] = b;
    eG[lane] = scale * expf(fminf(a, 0.f));
    eG[lane + 32] = scale * expf(fminf(b, 0.f));
    if (tail != nullptr) {
        tail[lane] = lane < Lc ? expf(fminf(gl - a, 0.f)) : 0.f;
        tail[lane + 32] = lane + 32 < Lc ? expf(fminf(gl - b, 0.f)) : 0.f;
    }
    return gl;
}

using FragAcc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
using FragARow = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragACol = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;

// The 64 x 64 product a b^T of two chunks (a, b: 64 rows of D bf16, row stride ld) for this
// warp's output blocks (rb, cb) and (rb + 2, cb); blocks above the diagonal (cb > row block) are
// left zero: a causal mask clears them.
template <int D>
__device__ __forceinline__ void lower_blocks_abt(FragAcc (&acc)[2], const bf16* a, const bf16* b, int ld, int rb, int cb) {
    wmma::fill_fragment(acc[0], 0.f);
    wmma::fill_fragment(acc[1], 0.f);
    if (cb > rb + 2) return;
    const bool both = cb <= rb;
#pragma unroll 2
    for (int kk = 0; kk < D / 16; ++kk) {
        FragBCol bt;  // B(d, j) = b[j][d]
        wmma::load_matrix_sync(bt, b + cb * 16 * ld + kk * 16, ld);
        FragARow ar;
        wmma::load_matrix_sync(ar, a + (rb + 2) * 16 * ld + kk * 16, ld);
        wmma::mma_sync(acc[1], ar, bt, acc[1]);
        if (both) {
            wmma::load_matrix_sync(ar, a + rb * 16 * ld + kk * 16, ld);
            wmma::mma_sync(acc[0], ar, bt, acc[0]);
        }
    }
}

// Mask before exp: X'_ij = scale exp(G_i - G_j) X_ij for j <= i < Lc, else 0, stored as bf16 into
// dst (row stride ld) for this warp's blocks (rb, cb) and (rb + 2, cb), through its 16 x 16 fp32
// scratch. zero_upper: a block above the diagonal is written as zeros (else left as it was).
__device__ __forceinline__ void mask_decay_store(FragAcc (&acc)[2], float* scr, const float* Gs, float scale, int Lc,
                                                 int rb, int cb, int lane, bf16* dst, int ld, bool zero_upper) {
#pragma unroll
    for (int f = 0; f < 2; ++f) {
        const int ri = rb + 2 * f;
        const int cl = lane % 16, j = cb * 16 + cl;  // this lane's column; rows lane / 16 + 2 it
        if (cb > ri) {
            if (zero_upper)
#pragma unroll
                for (int it = 0; it < 8; ++it) dst[(ri * 16 + lane / 16 + 2 * it) * ld + j] = __float2bfloat16_rn(0.f);
            continue;
        }
        wmma::store_matrix_sync(scr, acc[f], 16, wmma::mem_row_major);
        __syncwarp();
        const float Gj = Gs[j];
#pragma unroll
        for (int it = 0; it < 8; ++it) {
            const int r = lane / 16 + 2 * it, i = ri * 16 + r;
            float val = 0.f;
            if (j <= i && i < Lc) val = scr[r * 16 + cl] * scale * expf(fminf(Gs[i] - Gj, 0.f));
            dst[i * ld + j] = __float2bfloat16_rn(val);
        }
        __syncwarp();
    }
}

// x_r <- e_r x_r in place for the 64 rows of a chunk (D bf16 columns, row stride ld), by the CTA.
template <int D>
__device__ __forceinline__ void scale_rows_in_place(bf16* x, int ld, const float* e) {
#pragma unroll 1
    for (int idx = threadIdx.x; idx < BT * (D / 8); idx += kThreads) {
        const int r = idx / (D / 8), c8 = idx % (D / 8);
        uint4* p = reinterpret_cast<uint4*>(x + r * ld) + c8;
        uint4 u = *p;
        bf162* b = reinterpret_cast<bf162*>(&u);
        const float f = e[r];
#pragma unroll
        for (int t = 0; t < 4; ++t) {
            const float2 v = __bfloat1622float2(b[t]);
            b[t] = __floats2bfloat162_rn(v.x * f, v.y * f);
        }
        *p = u;
    }
}

// Grid (V / BV, H, N); block kThreads. cu == nullptr: dense, sequence n is tokens [n T, n T + T).
template <int K, int BV, int S>
__global__ void __launch_bounds__(kThreads, K == 256 ? 1 : 2)
    fwd_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
               const float* __restrict__ g, const float* __restrict__ h0, const int* __restrict__ cu,
               bf16* __restrict__ o, float* __restrict__ ht, int T, int H, int V, float scale) {
    using L = Layout<K, BV, S>;
    constexpr int LDK = L::LDK, LDV = L::LDV, LDA = L::LDA, LDH = L::LDH;
    constexpr int NVC = BV / 16;         // 16-column blocks of the V tile: 4 or 2
    constexpr int kRW = kWarps / NVC;    // warps sharing one column block: 2 or 4
    constexpr int kOF = 4 / kRW;         // o blocks (16 x 16) per warp: 2 or 1
    constexpr int kHF = (K / 16) / kRW;  // state blocks per warp
    static_assert(BV == 64 || BV == 32, "V tile");
    extern __shared__ __align__(1024) unsigned char smem[];

    const int vt = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // A = q k^T (64 x 64): this warp's blocks are (arb, avc) and (arb + 2, avc).
    const int avc = warp % 4, arb = warp / 4;
    // o (64 x BV) and state (K x BV): column block ovc, row blocks orb + kRW f.
    const int ovc = warp % NVC, orb = warp / NVC;

    int64_t bos, eos;
    if (cu != nullptr) {
        bos = cu[n];
        eos = cu[n + 1];
    } else {
        bos = static_cast<int64_t>(n) * T;
        eos = bos + T;
    }
    const int nchunks = eos > bos ? static_cast<int>((eos - bos + BT - 1) / BT) : 0;

    bf16* hs = reinterpret_cast<bf16*>(smem + L::oH);          // K x BV bf16 copy of the state
    bf16* As = reinterpret_cast<bf16*>(smem + L::oA);          // 64 x 64 masked A'
    float* scr = reinterpret_cast<float*>(smem + L::oScr) + warp * 256;
    float* Gs = reinterpret_cast<float*>(smem + L::oGates);    // G_i
    float* eG = Gs + BT;                                       // scale * exp(G_i)
    float* eTail = eG + BT;                                    // exp(G_{L-1} - G_j), 0 for j >= L
    float* eLast = eTail + BT;                                 // exp(G_{L-1})

    auto stage_q = [&](int st) { return reinterpret_cast<bf16*>(smem + st * L::kStage); };
    auto stage_k = [&](int st) { return reinterpret_cast<bf16*>(smem + st * L::kStage + L::kQ); };
    auto stage_v = [&](int st) { return reinterpret_cast<bf16*>(smem + st * L::kStage + 2 * L::kQ); };
    auto stage_g = [&](int st) { return reinterpret_cast<float*>(smem + st * L::kStage + 2 * L::kQ + L::kV); };

    // Issue the loads of chunk c into stage st (no commit). Rows >= L: zero-filled, not read.
    auto load_chunk = [&](int c, int st) {
        const int64_t t0 = bos + static_cast<int64_t>(c) * BT;
        const int64_t rem = eos - t0;
        const int Lc = rem < BT ? static_cast<int>(rem) : BT;
        load_rows<K>(stage_q(st), LDK, q, t0, Lc, H, h, K, 0);
        load_rows<K>(stage_k(st), LDK, k, t0, Lc, H, h, K, 0);
        load_rows<BV>(stage_v(st), LDV, v, t0, Lc, H, h, V, static_cast<size_t>(vt) * BV);
        load_gates(stage_g(st), g, t0, Lc, H, h);
    };

    // Write the fp32 state fragments as the bf16 copy hs (through this warp's scratch).
    FragAcc hacc[kHF];
    auto write_hs = [&]() {
#pragma unroll
        for (int i = 0; i < kHF; ++i) {
            const int kr = orb + kRW * i;
            wmma::store_matrix_sync(scr, hacc[i], 16, wmma::mem_row_major);
            __syncwarp();
#pragma unroll
            for (int it = 0; it < 4; ++it) {  // 16 rows x 8 pairs; lane: pair lane % 8 of row lane / 8 + 4 it
                const int r = lane / 8 + 4 * it, cc = (lane % 8) * 2;
                const float2 f = *reinterpret_cast<const float2*>(scr + r * 16 + cc);
                *reinterpret_cast<bf162*>(hs + (kr * 16 + r) * LDH + ovc * 16 + cc) = __floats2bfloat162_rn(f.x, f.y);
            }
            __syncwarp();
        }
    };

    // State tile of this CTA: rows 0..K-1, columns vt*BV .. vt*BV+BV-1 of h0[n, h] / ht[n, h].
    const size_t state_off = (static_cast<size_t>(n) * H + h) * K * V + static_cast<size_t>(vt) * BV;
#pragma unroll
    for (int i = 0; i < kHF; ++i) {
        const int kr = orb + kRW * i;
        wmma::load_matrix_sync(hacc[i], h0 + state_off + static_cast<size_t>(kr) * 16 * V + ovc * 16, V,
                               wmma::mem_row_major);
    }
    write_hs();  // visible to the first chunk after its load barrier

    if (nchunks > 0) {
        load_chunk(0, 0);
        cp_async_commit();
    }
    for (int c = 0; c < nchunks; ++c) {
        const int st = S == 2 ? (c & 1) : 0;
        if (S == 2 && c + 1 < nchunks) {
            load_chunk(c + 1, (c + 1) & 1);  // its stage was last read by chunk c-1, before its final barrier
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();  // (1) chunk c's q, k, v, g are in shared memory

        const int64_t t0 = bos + static_cast<int64_t>(c) * BT;
        const int Lc = eos - t0 < BT ? static_cast<int>(eos - t0) : BT;
        const bf16* qs = stage_q(st);
        bf16* ks = stage_k(st);
        const bf16* vs = stage_v(st);

        // Gates: inclusive scan of g (rows >= L are 0) by warp 0.
        if (warp == 0) {
            const float gl = chunk_gates(stage_g(st), Gs, eG, eTail, scale, lane, Lc);
            if (lane == 0) eLast[0] = expf(fminf(gl, 0.f));
        }

        // A = q k^T for this warp's blocks (arb, avc) and (arb + 2, avc); blocks above the
        // diagonal are zero after the mask and never read, so they are skipped.
        FragAcc acc[2];
        lower_blocks_abt<K>(acc, qs, ks, LDK, arb, avc);
        __syncthreads();  // (2) gates visible; every read of k for A done (k is decayed in place below)

        // Mask before exp: A'_ij = scale exp(G_i - G_j) A_ij for j <= i < L, else 0.
        mask_decay_store(acc, scr, Gs, scale, Lc, arb, avc, lane, As, LDA, false);
        __syncthreads();  // (3) A' complete

        // k'_j = exp(G_{L-1} - G_j) k_j in place (rows >= L: 0). Not read until after barrier (4).
        scale_rows_in_place<K>(ks, LDK, eTail);

        // o blocks (orb + kRW f, ovc): diag(scale exp(G)) (q h) + A' v.
        {
#pragma unroll
            for (int f = 0; f < kOF; ++f) wmma::fill_fragment(acc[f], 0.f);
#pragma unroll 2
            for (int kk = 0; kk < K / 16; ++kk) {
                FragBRow bh;
                wmma::load_matrix_sync(bh, hs + kk * 16 * LDH + ovc * 16, LDH);
#pragma unroll
                for (int f = 0; f < kOF; ++f) {
                    FragARow aq;
                    wmma::load_matrix_sync(aq, qs + (orb + kRW * f) * 16 * LDK + kk * 16, LDK);
                    wmma::mma_sync(acc[f], aq, bh, acc[f]);
                }
            }
#pragma unroll
            for (int f = 0; f < kOF; ++f) {
                const int ri = orb + kRW * f;
                wmma::store_matrix_sync(scr, acc[f], 16, wmma::mem_row_major);
                __syncwarp();
#pragma unroll
                for (int e = lane; e < 256; e += 32) scr[e] *= eG[ri * 16 + e / 16];
                __syncwarp();
                wmma::load_matrix_sync(acc[f], scr, 16, wmma::mem_row_major);
                for (int kb = 0; kb <= ri; ++kb) {  // A' is zero right of the diagonal block
                    FragARow aa;
                    wmma::load_matrix_sync(aa, As + ri * 16 * LDA + kb * 16, LDA);
                    FragBRow bv;
                    wmma::load_matrix_sync(bv, vs + kb * 16 * LDV + ovc * 16, LDV);
                    wmma::mma_sync(acc[f], aa, bv, acc[f]);
                }
                __syncwarp();  // every lane's load of scr done before it is overwritten
                wmma::store_matrix_sync(scr, acc[f], 16, wmma::mem_row_major);
                __syncwarp();
#pragma unroll
                for (int p = lane; p < 128; p += 32) {  // 16 rows x 8 bf16 pairs
                    const int r = p / 8, cc = (p % 8) * 2;
                    const int i = ri * 16 + r;
                    if (i < Lc) {
                        const size_t off = (static_cast<size_t>(t0 + i) * H + h) * V + static_cast<size_t>(vt) * BV + ovc * 16 + cc;
                        *reinterpret_cast<bf162*>(o + off) = __floats2bfloat162_rn(scr[r * 16 + cc], scr[r * 16 + cc + 1]);
                    }
                }
                __syncwarp();
            }
        }
        __syncthreads();  // (4) k' complete; every read of hs done (hs is rewritten below)

        // State: h = exp(G_{L-1}) h + k'^T v.
        {
            const float d = eLast[0];
#pragma unroll
            for (int i = 0; i < kHF; ++i)
#pragma unroll
                for (int t = 0; t < hacc[i].num_elements; ++t) hacc[i].x[t] *= d;
#pragma unroll 1
            for (int kk = 0; kk < BT / 16; ++kk) {
                FragBRow bv;
                wmma::load_matrix_sync(bv, vs + kk * 16 * LDV + ovc * 16, LDV);
#pragma unroll
                for (int i = 0; i < kHF; ++i) {
                    const int kr = orb + kRW * i;
                    FragACol ak;  // A(kd, j) = k'[j][kd]
                    wmma::load_matrix_sync(ak, ks + kk * 16 * LDK + kr * 16, LDK);
                    wmma::mma_sync(hacc[i], ak, bv, hacc[i]);
                }
            }
            if (c + 1 < nchunks) write_hs();
        }
        __syncthreads();  // (5) this stage, the gates and hs are free for the next chunk
        if (S == 1 && c + 1 < nchunks) {
            load_chunk(c + 1, 0);
            cp_async_commit();
        }
    }

#pragma unroll
    for (int i = 0; i < kHF; ++i) {
        const int kr = orb + kRW * i;
        wmma::store_matrix_sync(ht + state_off + static_cast<size_t>(kr) * 16 * V + ovc * 16, hacc[i], V,
                                wmma::mem_row_major);
    }
}

inline int sm_count() {
    static int n = [] {
        int dev = 0, v = 0;
        cudaGetDevice(&dev);
        return cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && v > 0 ? v : 132;
    }();
    return n;
}

template <int K, int BV, int S>
int launch(const bf16* q, const bf16* k, const bf16* v, const float* g, const float* h0, const int* cu, bf16* o,
           float* ht, int T, int H, int V, int N, float scale, cudaStream_t stream) {
    constexpr size_t bytes = Layout<K, BV, S>::kBytes;
    static_assert(bytes <= 227 * 1024, "shared memory above the H200's 227 KB per block");
    static bool attr_done = false;
    if (!attr_done) {
        if (cudaFuncSetAttribute(fwd_kernel<K, BV, S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(bytes)) != cudaSuccess)
            return KL_ERR_LAUNCH;
        attr_done = true;
    }
    const dim3 grid(V / BV, H, N);
    fwd_kernel<K, BV, S><<<grid, kThreads, bytes, stream>>>(q, k, v, g, h0, cu, o, ht, T, H, V, scale);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

inline bool is(const kl_tensor* t, kl_dtype dt, int ndim) {
    return t != nullptr && t->data != nullptr && t->dtype == dt && t->ndim == ndim;
}

// The forward's tensors and sizes, checked: KL_OK, or the code to return (N == 0: done).
struct FwdArgs {
    const bf16 *q, *k, *v;
    const float *g, *h0;
    const int* cu;  // nullptr: dense
    bf16* o;
    float* ht;
    int64_t B, T, H, K, V, N;
    float scale;
    cudaStream_t stream;
};

inline int fwd_args(const kl_args* a, bool varlen, FwdArgs& f) {
    const kl_tensor *q = kl_input(a, "q"), *k = kl_input(a, "k"), *v = kl_input(a, "v"), *g = kl_input(a, "g"),
                    *h0 = kl_input(a, "h0"), *o = kl_output(a, "o"), *ht = kl_output(a, "ht");
    const kl_tensor* cu = varlen ? kl_input(a, "cu_seqlens") : nullptr;
    if (!is(q, KL_BF16, 4) || !is(k, KL_BF16, 4) || !is(v, KL_BF16, 4) || !is(g, KL_F32, 3) || !is(h0, KL_F32, 4) ||
        !is(o, KL_BF16, 4) || !is(ht, KL_F32, 4))
        return KL_ERR_BAD_ARGS;
    if (varlen && (cu == nullptr || cu->data == nullptr || cu->dtype != KL_I32 || cu->ndim != 1))
        return KL_ERR_BAD_ARGS;
    const int64_t B = q->shape[0], T = q->shape[1], H = q->shape[2], K = q->shape[3], V = v->shape[3];
    if (K != 64 && K != 128 && K != 256) return KL_ERR_UNSUPPORTED;
    if (V != 64 && V != 128 && V != 256) return KL_ERR_UNSUPPORTED;
    const int64_t N = varlen ? cu->shape[0] - 1 : B;
    if (varlen && B != 1) return KL_ERR_BAD_ARGS;
    for (int d = 0; d < 3; ++d)
        if (k->shape[d] != q->shape[d] || v->shape[d] != q->shape[d] || o->shape[d] != q->shape[d] ||
            g->shape[d] != q->shape[d])
            return KL_ERR_BAD_ARGS;
    if (k->shape[3] != K || o->shape[3] != V || h0->shape[0] != N || h0->shape[1] != H || h0->shape[2] != K ||
        h0->shape[3] != V || ht->shape[0] != N || ht->shape[1] != H || ht->shape[2] != K || ht->shape[3] != V)
        return KL_ERR_BAD_ARGS;
    if (N <= 0 || H <= 0 || H > 65535 || N > 65535) return N == 0 ? KL_OK : KL_ERR_UNSUPPORTED;
    f.q = static_cast<const bf16*>(q->data);
    f.k = static_cast<const bf16*>(k->data);
    f.v = static_cast<const bf16*>(v->data);
    f.g = static_cast<const float*>(g->data);
    f.h0 = static_cast<const float*>(h0->data);
    f.cu = varlen ? static_cast<const int*>(cu->data) : nullptr;
    f.o = static_cast<bf16*>(o->data);
    f.ht = static_cast<float*>(ht->data);
    f.B = B, f.T = T, f.H = H, f.K = K, f.V = V, f.N = N;
    f.scale = static_cast<float>(kl_param_f64(a, "scale", 1.0 / std::sqrt(static_cast<double>(K))));
    f.stream = static_cast<cudaStream_t>(a->stream);
    return KL_OK;
}

inline int fwd(const kl_args* a, bool varlen) {
    FwdArgs f{};
    if (const int rc = fwd_args(a, varlen, f); rc != KL_OK || f.N == 0) return rc;
    // T = 0 (or an empty varlen sequence) needs no special case: the CTA walks no chunk and stores h0 as ht.
    const int Ti = static_cast<int>(f.T), Hi = static_cast<int>(f.H), Vi = static_cast<int>(f.V), Ni = static_cast<int>(f.N);
    // V tile: 64 columns, unless 64-column tiles would leave SMs idle; then 32 (twice the CTAs, A
    // recomputed per tile). K = 64 and 128 fit two CTAs an SM at BV = 32, K = 256 one.
    const int64_t ctas64 = (f.V / 64) * f.H * f.N;
    const int64_t slots = static_cast<int64_t>(sm_count()) * (f.K == 256 ? 1 : 2);
    int bv = 2 * ctas64 <= slots ? 32 : 64;
    if (g_force_bv == 32 || g_force_bv == 64) bv = g_force_bv;
#define SGLA_LAUNCH(KK, BB, SS) \
    launch<KK, BB, SS>(f.q, f.k, f.v, f.g, f.h0, f.cu, f.o, f.ht, Ti, Hi, Vi, Ni, f.scale, f.stream)
    switch (f.K) {
        case 64:
            return bv == 32 ? SGLA_LAUNCH(64, 32, 2) : SGLA_LAUNCH(64, 64, 2);
        case 128:
            // BV = 64 with two stages (125 KB) fits one CTA an SM, with one stage (81 KB) two:
            // on the large grids that take BV = 64, the second CTA hides the loads better.
            return bv == 32 ? SGLA_LAUNCH(128, 32, 2) : SGLA_LAUNCH(128, 64, 1);
        default:
            return bv == 32 ? SGLA_LAUNCH(256, 32, 2) : SGLA_LAUNCH(256, 64, 2);
    }
#undef SGLA_LAUNCH
}

}  // namespace sgla_v1
