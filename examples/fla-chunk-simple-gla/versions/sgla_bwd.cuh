// sgla_bwd.cuh: the backward of FLA's chunk_simple_gla in CUDA, dense and varlen, in three kernels on
// the worker's stream (and the state walk a chunk-parallel forward reuses). Included by
// versions/v2_cuda.cu and versions/v3_cuda.cu.
//
// Per sequence and head, with 64-token chunks, G_i the inclusive cumsum of g within a chunk of
// L <= 64 valid tokens, gl = G_{L-1}, h_c the state entering chunk c and D_c the gradient of the
// loss with respect to the state leaving it (D_{last} = dht):
//   1. states (walk, forward)   h_0 = h0, h_{c+1} = exp(gl) h_c + sum_j exp(gl - G_j) k_j^T v_j;
//                               every h_c to scratch.
//   2. dh (walk, reverse)       D_{c-1} = exp(gl) D_c + sum_i scale exp(G_i) q_i^T do_i; every D_c to
//                               scratch; dh0 = D_{-1}.
//   3. chunk (one CTA per chunk and head, all chunks at once):
//        A'_ij = scale exp(G_i - G_j) q_i.k_j     M_ij = scale exp(G_i - G_j) do_i.v_j    (j <= i < L)
//        dq = M k + diag(scale exp(G)) do h_c^T
//        dk = M^T q + diag(exp(gl - G)) v D_c^T
//        dv = A'^T do + diag(exp(gl - G)) k D_c
//        w_i = q_i.dq_i - k_i.dk_i (fp32, before dq and dk are rounded), and then dg in the chunk:
//        dg_i = sum_{i <= t < L} w_t + exp(gl) <D_c, h_c> + sum_j k_j.dk_j^inter,
//        dk^inter = diag(exp(gl - G)) v D_c^T, dk's term through the state leaving the chunk.
// dg is the gradient of the chunk-local cumsum G scanned back within the chunk, plus the gradient of
// gl through h_{c+1} = exp(gl) h_c + sum_j exp(gl - G_j) k_j^T v_j. Its second part is computed from
// the same rounded k_j.dk_j^inter as w, so the two cancel exactly where they should: summing w over
// the rest of the sequence instead (dg_i = sum_{t >= i} w_t + <dht, S_T>, the same number in exact
// arithmetic) leaves that cancellation to bf16 states and misses dg by 1-50 % (strong decay worst).
// (ref.py states the recurrence these come from; tests/examples/sgla_chunked_model.py holds
// these passes, in an fp64 numpy model with these chunk slots, to the recurrence: dense and varlen
// with empty and one-token sequences, strong decay; and, with the states and operands rounded to
// bf16 as here, holds dg to the gate's tolerance where the sequence-long scan misses it.)
//
// Overflow: every exp takes a non-positive argument, the mask applied before the exp, as in the
// forward (sgla_fwd.cuh, "Overflow safety"): exp(G_i), exp(gl - G_j) and exp(G_i - G_j), j <= i.
//
// Scratch (cudaMallocAsync on the stream, freed on it at the end): h_c and D_c, K x V per chunk
// slot and head, stored as bf16 (the operands pass 3 multiplies with: the fp32 states are rounded
// once, on the way out of the walks). Chunk slots: dense, sequence n's chunks are
// n NT .. n NT + NT - 1 (NT = ceil(T / 64)); varlen, they start at cu[n] / 64 + n, which leaves no
// two sequences a common slot (a sequence of len tokens spans at most floor(len / 64) + 1 of them)
// and needs floor(BT / 64) + N + 1 slots, with no read of cu_seqlens on the host. The device's
// default memory pool keeps what is freed (release threshold raised once), as torch's caching
// allocator does for FLA's intermediates.
//
// Precision: products on bf16 tensor cores with fp32 accumulation; h_c, D_c, A' and M are rounded
// to bf16 as operands (FLA does the same); the walks' states, S_T and every sum stay fp32.
#pragma once


#include <cstdint>

#include "sgla_fwd.cuh"

namespace sgla_v2 {

using namespace sgla_v1;

// ---- passes 1 and 2: a walk over a sequence's chunks, the K x BV state tile in fp32 fragments ----

template <int K, int BV>
struct WalkLayout {
    static constexpr int LDK = K + 8;
    static constexpr int LDV = BV + 8;
    static constexpr size_t kX = align128(static_cast<size_t>(BT) * LDK * 2);
    static constexpr size_t kY = align128(static_cast<size_t>(BT) * LDV * 2);
    static constexpr size_t kG = align128(BT * 4);
    static constexpr size_t kStage = kX + kY + kG;       // x (k or q), the y tile (v or do), g
    static constexpr size_t oScr = 2 * kStage;           // two stages, then a 16 x 16 fp32 scratch per warp
    static constexpr size_t oGates = oScr + kWarps * 256 * 4;
    static constexpr size_t kBytes = oGates + align128((BT + 4) * 4);
};

// Where a sequence's chunks start among the slots, and its token range.
struct SeqRange {
    int64_t bos, eos, slot0;
};
__device__ __forceinline__ SeqRange seq_range(const int* cu, int n, int T, int NT) {
    if (cu != nullptr) {
        const int64_t b = cu[n], e = cu[n + 1];
        return {b, e, b / BT + n};
    }
    const int64_t b = static_cast<int64_t>(n) * T;
    return {b, b + T, static_cast<int64_t>(n) * NT};
}

// The sum of x over the warp's lanes, in every lane.
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

// acc <- diag(rows) acc for a 16 x 16 block (rows: its 16 factors), through the warp's scratch.
__device__ __forceinline__ void scale_block_rows(FragAcc& acc, float* scr, const float* rows, int lane) {
    wmma::store_matrix_sync(scr, acc, 16, wmma::mem_row_major);
    __syncwarp();
#pragma unroll
    for (int e = lane; e < 256; e += 32) scr[e] *= rows[e / 16];
    __syncwarp();
    wmma::load_matrix_sync(acc, scr, 16, wmma::mem_row_major);
    __syncwarp();
}

// Stores a finished 16 x 16 block — chunk rows ri*16 .., columns col0 .. col0 + 15 of a [tokens,
// H, width] bf16 tensor, head h — for the rows < Lc, through the warp's scratch (left holding the
// block in fp32 for the caller; the caller ends with __syncwarp before reusing it).
__device__ __forceinline__ void store_block_bf16(const FragAcc& acc, float* scr, int ri, int Lc, int64_t t0, int H,
                                                 int h, int width, size_t col0, bf16* out, int lane) {
    wmma::store_matrix_sync(scr, acc, 16, wmma::mem_row_major);
    __syncwarp();
#pragma unroll
    for (int p = lane; p < 128; p += 32) {  // 16 rows x 8 bf16 pairs
        const int r = p / 8, cc = (p % 8) * 2;
        const int i = ri * 16 + r;
        if (i < Lc) {
            const size_t off = (static_cast<size_t>(t0 + i) * H + h) * width + col0 + cc;
            *reinterpret_cast<bf162*>(out + off) = __floats2bfloat162_rn(scr[r * 16 + cc], scr[r * 16 + cc + 1]);
        }
    }
}

// The span of W tokens a slot holds (W = 64: a chunk; v5: a segment of chunks): its first token
// t0 and its tokens L <= W; false for a slot no span uses. Dense: sequence slot / NS (NS = ceil(T /
// W) slots a sequence). Varlen: the last n with cu[n] / W + n <= slot.
template <int W>
__device__ __forceinline__ bool span_of_slot(const int* cu, int slot, int N, int T, int NS, int64_t& t0, int& L) {
    int n;
    int64_t bos, eos, base;
    if (cu != nullptr) {
        int lo = 0, hi = N - 1;
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (cu[mid] / W + mid <= slot) lo = mid;
            else hi = mid - 1;
        }
        n = lo;
        bos = cu[n], eos = cu[n + 1], base = cu[n] / W + n;
    } else {
        n = slot / NS;
        bos = static_cast<int64_t>(n) * T, eos = bos + T, base = static_cast<int64_t>(n) * NS;
    }
    t0 = bos + (slot - base) * static_cast<int64_t>(W);
    if (t0 >= eos) return false;
    L = eos - t0 < W ? static_cast<int>(eos - t0) : W;
    return true;
}

// The chunk a slot holds: its first token t0 and valid rows Lc (span_of_slot with 64 tokens).
__device__ __forceinline__ bool chunk_of_slot(const int* cu, int slot, int N, int T, int NT, int64_t& t0, int& Lc) {
    return span_of_slot<BT>(cu, slot, N, T, NT, t0, Lc);
}

// Grid (V / BV, H, N). kReverse = false: x = k, y = v, init = h0, slots = h_c, fin = S_T, chunks
// in order, row factor exp(gl - G_j). kReverse = true: x = q, y = do, init = dht, slots = D_c,
// fin = dh0, chunks last to first, row factor scale exp(G_i). Either way the tile stored to a
// chunk's slot is the state before that chunk's update: S <- exp(gl) S + (r x)^T y.
template <int K, int BV, bool kReverse>
__global__ void __launch_bounds__(kThreads, K == 256 ? 1 : 2)
    walk_kernel(const bf16* __restrict__ x, const bf16* __restrict__ y, const float* __restrict__ g,
                const float* __restrict__ init, const int* __restrict__ cu, bf16* __restrict__ slots,
                float* __restrict__ fin, int T, int H, int V, int NT, float scale) {
    using L = WalkLayout<K, BV>;
    constexpr int LDK = L::LDK, LDV = L::LDV;
    constexpr int NVC = BV / 16;         // 16-column blocks of the tile
    constexpr int kRW = kWarps / NVC;    // warps per column block
    constexpr int kHF = (K / 16) / kRW;  // state blocks per warp
    static_assert(BV == 64 || BV == 32, "V tile");
    extern __shared__ __align__(1024) unsigned char smem[];

    const int vt = blockIdx.x, h = blockIdx.y, n = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int ovc = warp % NVC, orb = warp / NVC;
    const SeqRange sr = seq_range(cu, n, T, NT);
    const int64_t bos = sr.bos, eos = sr.eos;
    const int nchunks = eos > bos ? static_cast<int>((eos - bos + BT - 1) / BT) : 0;

    float* scr = reinterpret_cast<float*>(smem + L::oScr) + warp * 256;
    float* rs = reinterpret_cast<float*>(smem + L::oGates);  // the row factors of the chunk
    float* eLast = rs + BT;                                  // exp(gl)
    auto stage_x = [&](int st) { return reinterpret_cast<bf16*>(smem + st * L::kStage); };
    auto stage_y = [&](int st) { return reinterpret_cast<bf16*>(smem + st * L::kStage + L::kX); };
    auto stage_g = [&](int st) { return reinterpret_cast<float*>(smem + st * L::kStage + L::kX + L::kY); };

    auto load_chunk = [&](int c, int st) {  // rows >= L zero-filled, never read from memory
        const int64_t t0 = bos + static_cast<int64_t>(c) * BT;
        const int Lc = eos - t0 < BT ? static_cast<int>(eos - t0) : BT;
        load_rows<K>(stage_x(st), LDK, x, t0, Lc, H, h, K, 0);
        load_rows<BV>(stage_y(st), LDV, y, t0, Lc, H, h, V, static_cast<size_t>(vt) * BV);
        load_gates(stage_g(st), g, t0, Lc, H, h);
    };

    FragAcc hacc[kHF];
    const size_t tile = static_cast<size_t>(vt) * BV;
    const size_t state_off = (static_cast<size_t>(n) * H + h) * K * V + tile;
#pragma unroll
    for (int i = 0; i < kHF; ++i)
        wmma::load_matrix_sync(hacc[i], init + state_off + static_cast<size_t>(orb + kRW * i) * 16 * V + ovc * 16, V,
                               wmma::mem_row_major);

    if (nchunks > 0) {
        load_chunk(kReverse ? nchunks - 1 : 0, 0);
        cp_async_commit();
    }
    for (int it = 0; it < nchunks; ++it) {
        const int c = kReverse ? nchunks - 1 - it : it;
        const int st = it & 1;
        if (it + 1 < nchunks) {
            load_chunk(kReverse ? c - 1 : c + 1, (it + 1) & 1);  // that stage was freed by barrier (4) of it - 1
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        // The state before this chunk's update, to its slot as bf16 (what pass 3 multiplies with).
        const size_t slot_off = (static_cast<size_t>(sr.slot0 + c) * H + h) * K * V + tile;
#pragma unroll
        for (int i = 0; i < kHF; ++i) {
            wmma::store_matrix_sync(scr, hacc[i], 16, wmma::mem_row_major);
            __syncwarp();
            bf16* dst = slots + slot_off + static_cast<size_t>(orb + kRW * i) * 16 * V + ovc * 16;
#pragma unroll
            for (int e = 0; e < 4; ++e) {  // 16 rows x 8 pairs; lane: pair lane % 8 of row lane / 8 + 4 e
                const int r = lane / 8 + 4 * e, cc = (lane % 8) * 2;
                *reinterpret_cast<bf162*>(dst + static_cast<size_t>(r) * V + cc) =
                    __floats2bfloat162_rn(scr[r * 16 + cc], scr[r * 16 + cc + 1]);
            }
            __syncwarp();
        }
        __syncthreads();  // (1) chunk c's x, y, g are in shared memory

        const int64_t t0 = bos + static_cast<int64_t>(c) * BT;
        const int Lc = eos - t0 < BT ? static_cast<int>(eos - t0) : BT;
        if (warp == 0) {  // inclusive scan of g (rows >= L are 0), then the row factors
            const float* gs = stage_g(st);
            float a = gs[lane], b = gs[lane + 32];
            const float gl = scan_gates(a, b, lane, Lc);
            if (kReverse) {
                rs[lane] = lane < Lc ? scale * expf(fminf(a, 0.f)) : 0.f;
                rs[lane + 32] = lane + 32 < Lc ? scale * expf(fminf(b, 0.f)) : 0.f;
            } else {
                rs[lane] = lane < Lc ? expf(fminf(gl - a, 0.f)) : 0.f;
                rs[lane + 32] = lane + 32 < Lc ? expf(fminf(gl - b, 0.f)) : 0.f;
            }
            if (lane == 0) eLast[0] = expf(fminf(gl, 0.f));
        }
        __syncthreads();  // (2) the factors are visible

        bf16* xs = stage_x(st);
        scale_rows_in_place<K>(xs, LDK, rs);  // x' = diag(r) x
        __syncthreads();  // (3) x' complete

        const float d = eLast[0];
#pragma unroll
        for (int i = 0; i < kHF; ++i)
#pragma unroll
            for (int t = 0; t < hacc[i].num_elements; ++t) hacc[i].x[t] *= d;
        const bf16* ys = stage_y(st);
#pragma unroll 1
        for (int kk = 0; kk < BT / 16; ++kk) {
            FragBRow by;
            wmma::load_matrix_sync(by, ys + kk * 16 * LDV + ovc * 16, LDV);
#pragma unroll
            for (int i = 0; i < kHF; ++i) {
                FragACol ax;  // A(kd, j) = x'[j][kd]
                wmma::load_matrix_sync(ax, xs + kk * 16 * LDK + (orb + kRW * i) * 16, LDK);
                wmma::mma_sync(hacc[i], ax, by, hacc[i]);
            }
        }
        __syncthreads();  // (4) this stage and the factors are free
    }
    if (fin == nullptr) return;  // the backward's forward walk: S_T is not needed
#pragma unroll
    for (int i = 0; i < kHF; ++i)
        wmma::store_matrix_sync(fin + state_off + static_cast<size_t>(orb + kRW * i) * 16 * V + ovc * 16, hacc[i], V,
                                wmma::mem_row_major);
}

// ---- pass 3: one CTA per chunk slot and head ----

template <int K, int V>
struct ChunkLayout {
    static constexpr int LDK = K + 8;   // q, k rows
    static constexpr int LDV = V + 8;   // v, do rows; a 64 x V slice of h_c or D_c in step 3
    static constexpr int LDA = BT + 8;  // A', M rows; a K x 64 tile of D_c in step 1
    static constexpr size_t kQ = align128(static_cast<size_t>(BT) * LDK * 2);
    static constexpr size_t kV = align128(static_cast<size_t>(BT) * LDV * 2);
    static constexpr size_t kA = align128(static_cast<size_t>(BT) * LDA * 2);
    static constexpr size_t kT1 = align128(static_cast<size_t>(K) * LDA * 2);
    static constexpr size_t kT3 = align128(static_cast<size_t>(BT) * LDV * 2);
    static constexpr size_t kT = kT1 > kT3 ? kT1 : kT3;
    static constexpr size_t oK = kQ, oV = 2 * kQ, oDo = 2 * kQ + kV, oA = 2 * kQ + 2 * kV, oM = oA + kA;
    static constexpr size_t oT = oM + kA;
    static constexpr size_t oScr = oT + kT;
    // G, scale exp(G), exp(gl - G), w; then sum_j k_j.dk_j^inter and the warps' parts of <D_c, h_c>
    static constexpr size_t oGates = oScr + kWarps * 256 * 4;
    static constexpr size_t kBytes = oGates + align128((4 * BT + 1 + kWarps) * 4);
};

// Grid (slots, H). Writes dq, dk, dv and dg for the chunk's rows.
template <int K, int V>
__global__ void __launch_bounds__(kThreads, 1)
    chunk_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                 const float* __restrict__ g, const bf16* __restrict__ dout, const int* __restrict__ cu,
                 const bf16* __restrict__ hs_all, const bf16* __restrict__ ds_all, bf16* __restrict__ dq,
                 bf16* __restrict__ dk, bf16* __restrict__ dv, float* __restrict__ dg, int T, int H, int N, int NT,
                 float scale) {
    using L = ChunkLayout<K, V>;
    constexpr int LDK = L::LDK, LDV = L::LDV, LDA = L::LDA;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int slot = blockIdx.x, h = blockIdx.y;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // 64 x 64 outputs: this warp's blocks are (rb0, cb) and (rb0 + 2, cb).
    const int cb = warp % 4, rb0 = warp / 4;

    int64_t t0;
    int Lc;
    if (!chunk_of_slot(cu, slot, N, T, NT, t0, Lc)) return;  // a slot no chunk uses

    bf16* qs = reinterpret_cast<bf16*>(smem);
    bf16* ks = reinterpret_cast<bf16*>(smem + L::oK);
    bf16* vs = reinterpret_cast<bf16*>(smem + L::oV);
    bf16* dos = reinterpret_cast<bf16*>(smem + L::oDo);
    bf16* As = reinterpret_cast<bf16*>(smem + L::oA);
    bf16* Ms = reinterpret_cast<bf16*>(smem + L::oM);
    bf16* Ts = reinterpret_cast<bf16*>(smem + L::oT);
    float* scr = reinterpret_cast<float*>(smem + L::oScr) + warp * 256;
    float* Gs = reinterpret_cast<float*>(smem + L::oGates);
    float* eG = Gs + BT;     // scale exp(G_i)
    float* eT = eG + BT;     // exp(gl - G_j), 0 for j >= L
    float* ws = eT + BT;     // w_i, summed with shared atomics
    float* kdk = ws + BT;    // sum_j k_j.dk_j^inter, likewise
    float* dot = kdk + 1;    // each warp's part of <D_c, h_c>

    load_rows<K>(qs, LDK, q, t0, Lc, H, h, K, 0);
    load_rows<K>(ks, LDK, k, t0, Lc, H, h, K, 0);
    load_rows<V>(vs, LDV, v, t0, Lc, H, h, V, 0);
    load_rows<V>(dos, LDV, dout, t0, Lc, H, h, V, 0);
    load_gates(Gs, g, t0, Lc, H, h);
    if (threadIdx.x < BT) ws[threadIdx.x] = 0.f;
    if (threadIdx.x == 0) kdk[0] = 0.f;
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();  // (1) q, k, v, do, g loaded

    if (warp == 0) (void)chunk_gates(Gs, Gs, eG, eT, scale, lane, Lc);

    // A = q k^T and dP = do v^T on and below the diagonal (blocks above it are zero after the mask).
    FragAcc accA[2], accP[2];
    lower_blocks_abt<K>(accA, qs, ks, LDK, rb0, cb);
    lower_blocks_abt<V>(accP, dos, vs, LDV, rb0, cb);
    __syncthreads();  // (2) the gates are visible

    // Mask before exp (A' and M), the blocks above the diagonal written as zeros.
    mask_decay_store(accA, scr, Gs, scale, Lc, rb0, cb, lane, As, LDA, true);
    mask_decay_store(accP, scr, Gs, scale, Lc, rb0, cb, lane, Ms, LDA, true);

    auto scale_rows = [&](FragAcc& acc, const float* rows) { scale_block_rows(acc, scr, rows, lane); };
    // This lane's part of x_i . block_i for the fp32 block in the warp's scratch (rows ri*16 ..,
    // columns col0 ..; x: the q or k rows): row lane / 2, the half lane % 2 of its 16 columns.
    auto row_dot_part = [&](const bf16* x, int ri, int col0) {
        const int r = lane / 2, half = (lane % 2) * 8;
        float part = 0.f;
#pragma unroll
        for (int c = 0; c < 8; ++c)
            part += scr[r * 16 + half + c] * __bfloat162float(x[(ri * 16 + r) * LDK + col0 + half + c]);
        return part;
    };
    // Stores a finished block as bf16 (store_block_bf16); with `x` (the q or k rows) adds
    // sign * x_i . out_i to w_i from the fp32 values.
    auto store_block = [&](const FragAcc& acc, int ri, bf16* out, int width, int col0, const bf16* x, float sign) {
        store_block_bf16(acc, scr, ri, Lc, t0, H, h, width, static_cast<size_t>(col0), out, lane);
        if (x != nullptr) {
            float part = row_dot_part(x, ri, col0);
            part += __shfl_xor_sync(0xffffffffu, part, 1);
            if (lane % 2 == 0) atomicAdd(ws + ri * 16 + lane / 2, sign * part);
        }
        __syncwarp();
    };
    __syncthreads();  // (3) A' and M complete

    // Step 1, dv per 64-column tile of V: dv = diag(exp(gl - G)) (k D_c[:, tile]) + A'^T do[:, tile].
    const size_t state = (static_cast<size_t>(slot) * H + h) * K * V;
#pragma unroll 1
    for (int vt = 0; vt < V / 64; ++vt) {
#pragma unroll 1
        for (int idx = threadIdx.x; idx < K * 8; idx += kThreads) {  // K rows x 8 16-byte segments
            const int r = idx / 8, c8 = (idx % 8) * 8;
            cp_async16(Ts + r * LDA + c8, ds_all + state + static_cast<size_t>(r) * V + vt * 64 + c8, true);
        }
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();  // (4) the D tile is in shared memory
#pragma unroll
        for (int f = 0; f < 2; ++f) {
            const int ri = rb0 + 2 * f;
            FragAcc acc;
            wmma::fill_fragment(acc, 0.f);
#pragma unroll 2
            for (int kk = 0; kk < K / 16; ++kk) {
                FragARow ak;
                wmma::load_matrix_sync(ak, ks + ri * 16 * LDK + kk * 16, LDK);
                FragBRow bd;
                wmma::load_matrix_sync(bd, Ts + kk * 16 * LDA + cb * 16, LDA);
                wmma::mma_sync(acc, ak, bd, acc);
            }
            scale_rows(acc, eT + ri * 16);
            for (int tb = ri; tb < 4; ++tb) {  // A'^T(j, i) = A'[i][j], nonzero for i >= j
                FragACol at;
                wmma::load_matrix_sync(at, As + tb * 16 * LDA + ri * 16, LDA);
                FragBRow bdo;
                wmma::load_matrix_sync(bdo, dos + tb * 16 * LDV + vt * 64 + cb * 16, LDV);
                wmma::mma_sync(acc, at, bdo, acc);
            }
            store_block(acc, ri, dv, V, vt * 64 + cb * 16, nullptr, 0.f);
        }
        __syncthreads();  // (5) the D tile is free
    }

    // Step 3, per 64-row tile of K: dq = diag(scale exp(G)) (do h_c[tile, :]^T) + M k[:, tile],
    // then dk = diag(exp(gl - G)) (v D_c[tile, :]^T) + M^T q[:, tile].
#pragma unroll 1
    for (int kt = 0; kt < K / 64; ++kt) {
#pragma unroll 1
        for (int pass = 0; pass < 2; ++pass) {
            const bf16* src = pass == 0 ? hs_all : ds_all;
#pragma unroll 1
            for (int idx = threadIdx.x; idx < 64 * (V / 8); idx += kThreads) {  // 64 rows x V / 8 segments
                const int r = idx / (V / 8), c8 = (idx % (V / 8)) * 8;
                cp_async16(Ts + r * LDV + c8, src + state + static_cast<size_t>(kt * 64 + r) * V + c8, true);
            }
            cp_async_commit();
            cp_async_wait<0>();
            __syncthreads();  // (6) the slice is in shared memory
            const bf16* left = pass == 0 ? dos : vs;      // rows: do (dq) or v (dk)
            const float* rows = pass == 0 ? eG : eT;
#pragma unroll
            for (int f = 0; f < 2; ++f) {
                const int ri = rb0 + 2 * f;
                FragAcc acc;
                wmma::fill_fragment(acc, 0.f);
#pragma unroll 2
                for (int kk = 0; kk < V / 16; ++kk) {
                    FragARow al;
                    wmma::load_matrix_sync(al, left + ri * 16 * LDV + kk * 16, LDV);
                    FragBCol bs;  // B(vd, kr) = slice[kr][vd]
                    wmma::load_matrix_sync(bs, Ts + cb * 16 * LDV + kk * 16, LDV);
                    wmma::mma_sync(acc, al, bs, acc);
                }
                scale_rows(acc, rows + ri * 16);
                if (pass == 1) {  // the warp's scratch holds dk^inter for the block in fp32: k . it
                    const float part = warp_sum(row_dot_part(ks, ri, kt * 64 + cb * 16));
                    if (lane == 0) atomicAdd(kdk, part);
                    __syncwarp();
                }
                if (pass == 0) {
                    for (int jb = 0; jb <= ri; ++jb) {  // M is zero right of the diagonal block
                        FragARow am;
                        wmma::load_matrix_sync(am, Ms + ri * 16 * LDA + jb * 16, LDA);
                        FragBRow bk;
                        wmma::load_matrix_sync(bk, ks + jb * 16 * LDK + kt * 64 + cb * 16, LDK);
                        wmma::mma_sync(acc, am, bk, acc);
                    }
                    store_block(acc, ri, dq, K, kt * 64 + cb * 16, qs, 1.f);
                } else {
                    for (int ib = ri; ib < 4; ++ib) {  // M^T(j, i) = M[i][j], nonzero for i >= j
                        FragACol amt;
                        wmma::load_matrix_sync(amt, Ms + ib * 16 * LDA + ri * 16, LDA);
                        FragBRow bq;
                        wmma::load_matrix_sync(bq, qs + ib * 16 * LDK + kt * 64 + cb * 16, LDK);
                        wmma::mma_sync(acc, amt, bq, acc);
                    }
                    store_block(acc, ri, dk, K, kt * 64 + cb * 16, ks, -1.f);
                }
            }
            __syncthreads();  // (7) the slice is free; every atomic on w of this pass done
        }
    }

    // dg: <D_c, h_c> over the two bf16 slices, 8 elements a load.
    float part = 0.f;
    const uint4* hv = reinterpret_cast<const uint4*>(hs_all + state);
    const uint4* dv8 = reinterpret_cast<const uint4*>(ds_all + state);
#pragma unroll 4
    for (int i = threadIdx.x; i < K * V / 8; i += kThreads) {
        const uint4 a = hv[i], b = dv8[i];
        const bf162* pa = reinterpret_cast<const bf162*>(&a);
        const bf162* pb = reinterpret_cast<const bf162*>(&b);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float2 fa = __bfloat1622float2(pa[e]), fb = __bfloat1622float2(pb[e]);
            part += fa.x * fb.x + fa.y * fb.y;
        }
    }
    part = warp_sum(part);
    if (lane == 0) dot[warp] = part;
    __syncthreads();  // (8) the warps' parts of the dot
    if (warp == 0) {
        const float d = warp_sum(lane < kWarps ? dot[lane] : 0.f);
        const float base = expf(fminf(Gs[Lc - 1], 0.f)) * d + kdk[0];
        // The reverse scan of w over the chunk's rows: lane holds rows lane and lane + 32.
        float a = lane < Lc ? ws[lane] : 0.f, b = lane + 32 < Lc ? ws[lane + 32] : 0.f;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const float ya = __shfl_down_sync(0xffffffffu, a, off);
            const float yb = __shfl_down_sync(0xffffffffu, b, off);
            if (lane + off < 32) {
                a += ya;
                b += yb;
            }
        }
        a += __shfl_sync(0xffffffffu, b, 0);
        if (lane < Lc) dg[static_cast<size_t>(t0 + lane) * H + h] = a + base;
        if (lane + 32 < Lc) dg[static_cast<size_t>(t0 + lane + 32) * H + h] = b + base;
    }
}

// ---- host ----

template <typename Kern>
bool allow_smem(Kern kernel, size_t bytes) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)) ==
           cudaSuccess;
}

template <int K, int BV, bool kReverse>
int launch_walk(const bf16* x, const bf16* y, const float* g, const float* init, const int* cu, bf16* slots,
                float* fin, int T, int H, int V, int N, int NT, float scale, cudaStream_t stream) {
    constexpr size_t bytes = WalkLayout<K, BV>::kBytes;
    static_assert(bytes <= 227 * 1024, "shared memory");
    static const bool ok = allow_smem(walk_kernel<K, BV, kReverse>, bytes);
    if (!ok) return KL_ERR_LAUNCH;
    walk_kernel<K, BV, kReverse><<<dim3(V / BV, H, N), kThreads, bytes, stream>>>(x, y, g, init, cu, slots, fin, T, H, V,
                                                                                  NT, scale);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

template <int K, bool kReverse>
int walk(int bv, const bf16* x, const bf16* y, const float* g, const float* init, const int* cu, bf16* slots,
         float* fin, int T, int H, int V, int N, int NT, float scale, cudaStream_t stream) {
    return bv == 32 ? launch_walk<K, 32, kReverse>(x, y, g, init, cu, slots, fin, T, H, V, N, NT, scale, stream)
                    : launch_walk<K, 64, kReverse>(x, y, g, init, cu, slots, fin, T, H, V, N, NT, scale, stream);
}

template <int K, int V>
int launch_chunk(const bf16* q, const bf16* k, const bf16* v, const float* g, const bf16* dout, const int* cu,
                 const bf16* hs, const bf16* ds, bf16* dq, bf16* dk, bf16* dv, float* dg, int T, int H, int N, int NT,
                 int64_t nslots, float scale, cudaStream_t stream) {
    constexpr size_t bytes = ChunkLayout<K, V>::kBytes;
    static_assert(bytes <= 227 * 1024, "shared memory");
    static const bool ok = allow_smem(chunk_kernel<K, V>, bytes);
    if (!ok) return KL_ERR_LAUNCH;
    if (nslots <= 0) return KL_OK;
    chunk_kernel<K, V><<<dim3(static_cast<unsigned>(nslots), H), kThreads, bytes, stream>>>(
        q, k, v, g, dout, cu, hs, ds, dq, dk, dv, dg, T, H, N, NT, scale);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

template <int K>
int chunk(int V, const bf16* q, const bf16* k, const bf16* v, const float* g, const bf16* dout, const int* cu,
          const bf16* hs, const bf16* ds, bf16* dq, bf16* dk, bf16* dv, float* dg, int T, int H, int N, int NT,
          int64_t nslots, float scale, cudaStream_t stream) {
    switch (V) {
        case 64: return launch_chunk<K, 64>(q, k, v, g, dout, cu, hs, ds, dq, dk, dv, dg, T, H, N, NT, nslots, scale, stream);
        case 128: return launch_chunk<K, 128>(q, k, v, g, dout, cu, hs, ds, dq, dk, dv, dg, T, H, N, NT, nslots, scale, stream);
        default: return launch_chunk<K, 256>(q, k, v, g, dout, cu, hs, ds, dq, dk, dv, dg, T, H, N, NT, nslots, scale, stream);
    }
}

// Chunk slots (see the top of this file): dense N * ceil(T / 64); varlen floor(B T / 64) + N + 1.
inline int64_t chunk_slots(bool varlen, int64_t B, int64_t T, int64_t N) {
    return varlen ? (B * T) / BT + N + 1 : N * ((T + BT - 1) / BT);
}

// The default pool keeps freed memory for the next call (once per process).
inline void keep_pool_memory() {
    static const bool done = [] {
        int dev = 0;
        cudaMemPool_t pool;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess) return false;
        uint64_t threshold = UINT64_MAX;
        return cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) == cudaSuccess;
    }();
    (void)done;
}

inline int bwd(const kl_args* a, bool varlen) {
    const kl_tensor *q = kl_input(a, "q"), *k = kl_input(a, "k"), *v = kl_input(a, "v"), *g = kl_input(a, "g"),
                    *h0 = kl_input(a, "h0"), *dout = kl_input(a, "do"), *dht = kl_input(a, "dht");
    const kl_tensor *dq = kl_output(a, "dq"), *dk = kl_output(a, "dk"), *dv = kl_output(a, "dv"),
                    *dg = kl_output(a, "dg"), *dh0 = kl_output(a, "dh0");
    const kl_tensor* cu = varlen ? kl_input(a, "cu_seqlens") : nullptr;
    if (!is(q, KL_BF16, 4) || !is(k, KL_BF16, 4) || !is(v, KL_BF16, 4) || !is(g, KL_F32, 3) || !is(h0, KL_F32, 4) ||
        !is(dout, KL_BF16, 4) || !is(dht, KL_F32, 4) || !is(dq, KL_BF16, 4) || !is(dk, KL_BF16, 4) ||
        !is(dv, KL_BF16, 4) || !is(dg, KL_F32, 3) || !is(dh0, KL_F32, 4))
        return KL_ERR_BAD_ARGS;
    if (varlen && (cu == nullptr || cu->data == nullptr || cu->dtype != KL_I32 || cu->ndim != 1))
        return KL_ERR_BAD_ARGS;
    const int64_t B = q->shape[0], T = q->shape[1], H = q->shape[2], K = q->shape[3], V = v->shape[3];
    if (K != 64 && K != 128 && K != 256) return KL_ERR_UNSUPPORTED;
    if (V != 64 && V != 128 && V != 256) return KL_ERR_UNSUPPORTED;
    const int64_t N = varlen ? cu->shape[0] - 1 : B;
    if (varlen && B != 1) return KL_ERR_BAD_ARGS;
    for (const kl_tensor* t : {k, v, dout, dq, dk, dv})
        for (int d = 0; d < 3; ++d)
            if (t->shape[d] != q->shape[d]) return KL_ERR_BAD_ARGS;
    for (int d = 0; d < 3; ++d)
        if (g->shape[d] != q->shape[d] || dg->shape[d] != q->shape[d]) return KL_ERR_BAD_ARGS;
    if (k->shape[3] != K || dq->shape[3] != K || dk->shape[3] != K || dout->shape[3] != V || dv->shape[3] != V)
        return KL_ERR_BAD_ARGS;
    for (const kl_tensor* t : {h0, dht, dh0})
        if (t->shape[0] != N || t->shape[1] != H || t->shape[2] != K || t->shape[3] != V) return KL_ERR_BAD_ARGS;
    if (N <= 0 || H <= 0 || H > 65535 || N > 65535) return N == 0 ? KL_OK : KL_ERR_UNSUPPORTED;
    const float scale = static_cast<float>(kl_param_f64(a, "scale", 1.0 / std::sqrt(static_cast<double>(K))));
    const auto stream = static_cast<cudaStream_t>(a->stream);

    const int64_t NT = (T + BT - 1) / BT;
    const int64_t nslots = chunk_slots(varlen, B, T, N);
    const int64_t per = H * K * V;
    if (nslots > 0x7fffffff) return KL_ERR_UNSUPPORTED;
    keep_pool_memory();
    void* buf = nullptr;
    // The chunk slots' h_c, then their D_c (bf16).
    const size_t bytes = 2 * static_cast<size_t>(nslots) * per * sizeof(bf16);
    if (cudaMallocAsync(&buf, bytes, stream) != cudaSuccess) return KL_ERR_LAUNCH;
    bf16* hs = static_cast<bf16*>(buf);
    bf16* ds = hs + nslots * per;

    const auto* qp = static_cast<const bf16*>(q->data);
    const auto* kp = static_cast<const bf16*>(k->data);
    const auto* vp = static_cast<const bf16*>(v->data);
    const auto* gp = static_cast<const float*>(g->data);
    const auto* dop = static_cast<const bf16*>(dout->data);
    const auto* h0p = static_cast<const float*>(h0->data);
    const auto* dhtp = static_cast<const float*>(dht->data);
    const int* cup = varlen ? static_cast<const int*>(cu->data) : nullptr;
    auto* dqp = static_cast<bf16*>(dq->data);
    auto* dkp = static_cast<bf16*>(dk->data);
    auto* dvp = static_cast<bf16*>(dv->data);
    auto* dgp = static_cast<float*>(dg->data);
    auto* dh0p = static_cast<float*>(dh0->data);
    const int Ti = static_cast<int>(T), Hi = static_cast<int>(H), Vi = static_cast<int>(V), Ni = static_cast<int>(N),
              NTi = static_cast<int>(NT);
    // The walks' V tile: 64 columns, or 32 where 64 would leave SMs idle (as the forward's).
    const int64_t ctas64 = (V / 64) * H * N;
    const int bv = 2 * ctas64 <= static_cast<int64_t>(sm_count()) * (K == 256 ? 1 : 2) ? 32 : 64;

    int rc = KL_OK;
    auto step = [&](int r) {
        if (rc == KL_OK) rc = r;
    };
    switch (K) {
        case 64:
            step(walk<64, false>(bv, kp, vp, gp, h0p, cup, hs, nullptr, Ti, Hi, Vi, Ni, NTi, scale, stream));
            step(walk<64, true>(bv, qp, dop, gp, dhtp, cup, ds, dh0p, Ti, Hi, Vi, Ni, NTi, scale, stream));
            if (rc == KL_OK)
                step(chunk<64>(Vi, qp, kp, vp, gp, dop, cup, hs, ds, dqp, dkp, dvp, dgp, Ti, Hi, Ni, NTi, nslots, scale, stream));
            break;
        case 128:
            step(walk<128, false>(bv, kp, vp, gp, h0p, cup, hs, nullptr, Ti, Hi, Vi, Ni, NTi, scale, stream));
            step(walk<128, true>(bv, qp, dop, gp, dhtp, cup, ds, dh0p, Ti, Hi, Vi, Ni, NTi, scale, stream));
            if (rc == KL_OK)
                step(chunk<128>(Vi, qp, kp, vp, gp, dop, cup, hs, ds, dqp, dkp, dvp, dgp, Ti, Hi, Ni, NTi, nslots, scale, stream));
            break;
        default:
            step(walk<256, false>(bv, kp, vp, gp, h0p, cup, hs, nullptr, Ti, Hi, Vi, Ni, NTi, scale, stream));
            step(walk<256, true>(bv, qp, dop, gp, dhtp, cup, ds, dh0p, Ti, Hi, Vi, Ni, NTi, scale, stream));
            if (rc == KL_OK)
                step(chunk<256>(Vi, qp, kp, vp, gp, dop, cup, hs, ds, dqp, dkp, dvp, dgp, Ti, Hi, Ni, NTi, nslots, scale, stream));
            break;
    }
    if (cudaFreeAsync(buf, stream) != cudaSuccess && rc == KL_OK) rc = KL_ERR_LAUNCH;
    return rc;
}

}  // namespace sgla_v2
