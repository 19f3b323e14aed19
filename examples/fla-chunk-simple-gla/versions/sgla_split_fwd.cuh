// sgla_split_fwd.cuh: the forward split as FLA splits it, for versions that differ only in their
// output pass (v3: wmma; v4: wgmma through CuTe). Included by versions/v3_cuda.cu and v4_cuda.cu.
//
//   1. states: the backward's forward walk (sgla_bwd.cuh, walk_kernel<K, BV, false>) stores the
//      state entering every chunk (bf16, stream-ordered scratch) and ht;
//   2. output: Out::launch<K>(args, states, slots, NT), every chunk at once:
//          o = diag(scale exp(G)) q h_c + A' v,   A'_ij = scale exp(G_i - G_j) q_i.k_j  (j <= i < L).
// Chunk slots, scratch pool and mask-before-exp as in sgla_bwd.cuh.
#pragma once

#include "sgla_bwd.cuh"

namespace sgla_split {

using namespace sgla_v1;
using namespace sgla_v2;

// Launches an output kernel, whose parameters are v3's out_kernel's, on the forward's stream (the
// caller has opted it in to its shared memory).
template <typename Kern>
int launch_out_kernel(Kern kernel, dim3 grid, int threads, size_t bytes, const FwdArgs& f, const bf16* hs, int NT) {
    kernel<<<grid, threads, bytes, f.stream>>>(f.q, f.k, f.v, f.g, f.cu, hs, f.o, static_cast<int>(f.T),
                                               static_cast<int>(f.H), static_cast<int>(f.V), static_cast<int>(f.N),
                                               NT, f.scale);
    return cudaGetLastError() == cudaSuccess ? KL_OK : KL_ERR_LAUNCH;
}

// Out: a type with `template <int K> static int launch(const FwdArgs&, const bf16* states,
// int64_t slots, int NT)`, returning KL_OK or an error code.
template <typename Out>
int fwd(const kl_args* a, bool varlen) {
    FwdArgs f{};
    if (const int rc = fwd_args(a, varlen, f); rc != KL_OK || f.N == 0) return rc;
    const int64_t NT = (f.T + BT - 1) / BT;
    const int64_t nslots = chunk_slots(varlen, f.B, f.T, f.N);
    if (nslots > 0x7fffffff) return KL_ERR_UNSUPPORTED;
    const int64_t per = f.H * f.K * f.V;
    keep_pool_memory();
    void* buf = nullptr;
    // At least one byte: T = 0 walks no chunk (ht = h0) and launches no output CTA.
    const size_t bytes = static_cast<size_t>(nslots > 0 ? nslots : 1) * static_cast<size_t>(per) * sizeof(bf16);
    if (cudaMallocAsync(&buf, bytes, f.stream) != cudaSuccess) return KL_ERR_LAUNCH;
    auto* hs = static_cast<bf16*>(buf);
    const int Ti = static_cast<int>(f.T), Hi = static_cast<int>(f.H), Vi = static_cast<int>(f.V),
              Ni = static_cast<int>(f.N), NTi = static_cast<int>(NT);
    const int64_t ctas64 = (f.V / 64) * f.H * f.N;
    const int bv = 2 * ctas64 <= static_cast<int64_t>(sm_count()) * (f.K == 256 ? 1 : 2) ? 32 : 64;
    int rc = KL_OK;
    switch (f.K) {
        case 64:
            rc = walk<64, false>(bv, f.k, f.v, f.g, f.h0, f.cu, hs, f.ht, Ti, Hi, Vi, Ni, NTi, f.scale, f.stream);
            if (rc == KL_OK) rc = Out::template launch<64>(f, hs, nslots, NTi);
            break;
        case 128:
            rc = walk<128, false>(bv, f.k, f.v, f.g, f.h0, f.cu, hs, f.ht, Ti, Hi, Vi, Ni, NTi, f.scale, f.stream);
            if (rc == KL_OK) rc = Out::template launch<128>(f, hs, nslots, NTi);
            break;
        default:
            rc = walk<256, false>(bv, f.k, f.v, f.g, f.h0, f.cu, hs, f.ht, Ti, Hi, Vi, Ni, NTi, f.scale, f.stream);
            if (rc == KL_OK) rc = Out::template launch<256>(f, hs, nslots, NTi);
            break;
    }
    if (cudaFreeAsync(buf, f.stream) != cudaSuccess && rc == KL_OK) rc = KL_ERR_LAUNCH;
    return rc;
}

}  // namespace sgla_split
