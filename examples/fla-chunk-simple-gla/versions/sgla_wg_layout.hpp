// sgla_wg_layout.hpp: the shared-memory tiles and warpgroup MMAs (CuTe) of the wgmma versions (v4's
// output pass, v5's segment walks), apart from the kernels so that a host compiler can check what
// the kernels assume of them (tests/examples/sgla_wg_layout_test.cpp): every tile a bijection onto
// its space; 8 consecutive elements along a tile's contiguous axis (one 16-byte cp.async)
// contiguous in shared memory under the 128-byte swizzle; the swizzled tiles on 1024-byte
// boundaries; the 64 x 64 accumulators of the MMAs laid out alike, and the K x 64 state's held
// once each.
#pragma once

#include <cute/tensor.hpp>

namespace sgla_wg {

using namespace cute;

using BF = cutlass::bfloat16_t;  // CuTe's bf16 (the bits of __nv_bfloat16)
constexpr int kChunk = 64;       // tokens per chunk (sgla_fwd.cuh's BT)
constexpr int kWgThreads = 128;  // one warpgroup
constexpr int BVT = 64;          // columns of V per CTA

template <int K>
struct WgLayout {
    using QK = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<BF>{}, Shape<Int<kChunk>, Int<K>>{}));     // (row, k)
    using Hc = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<BF>{}, Shape<Int<BVT>, Int<K>>{}));       // (v, k)
    using Vt = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<BF>{}, Shape<Int<BVT>, Int<kChunk>>{}));  // (v, token)
    using At = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<BF>{}, Shape<Int<kChunk>, Int<kChunk>>{})); // (row, token)
    static constexpr size_t kQK = static_cast<size_t>(kChunk) * K * 2;
    static constexpr size_t oQ = 0, oK = kQK, oH = 2 * kQK, oV = oH + static_cast<size_t>(BVT) * K * 2;
    static constexpr size_t oA = oV + BVT * kChunk * 2, oGates = oA + kChunk * kChunk * 2;
    static constexpr size_t kBytes = oGates + 2 * kChunk * 4;  // G, scale exp(G)
    static_assert(static_cast<size_t>(kChunk) * (BVT + 8) * 2 <= 2 * kQK, "output staging over q and k");
    static_assert(oK % 1024 == 0 && oH % 1024 == 0 && oV % 1024 == 0 && oA % 1024 == 0,
                  "swizzled tiles on 1024-byte boundaries");
};

constexpr int kLDO = BVT + 8;  // the rows of a 64 x 64 output block staged for 16-byte stores

// v5's segment walk: q, k (K-major, for S = q k^T), k again as (k, token) (MN-major A of the state
// update k'^T v), the state in bf16 as (v, k) (B of q S), v as (v, token) twice (B of A' v; scaled
// by exp(gl - G) for the update), A'. kOut = false (the segment's own contribution, no output)
// needs only k as (k, token), the scaled v and the gates.
template <int K, bool kOut>
struct SegLayout {
    using QK = typename WgLayout<K>::QK;
    using KT = decltype(tile_to_shape(GMMA::Layout_MN_SW128_Atom<BF>{}, Shape<Int<K>, Int<kChunk>>{}));  // (k, token)
    using St = typename WgLayout<K>::Hc;                                                                   // (v, k)
    using Vt = typename WgLayout<K>::Vt;
    using At = typename WgLayout<K>::At;
    static constexpr size_t kQK = WgLayout<K>::kQK;  // = K x 64 x 2: q, k, (k, token), the state
    static constexpr size_t kV = BVT * kChunk * 2;
    static constexpr size_t oKT = 0, oV2 = kQK;
    static constexpr size_t oQ = oV2 + kV, oK = oQ + kQK, oSt = oK + kQK, oV = oSt + kQK, oA = oV + kV;
    static constexpr size_t oGates = kOut ? oA + kChunk * kChunk * 2 : oQ;
    static constexpr size_t kBytes = oGates + (3 * kChunk + 4) * 4;  // G, scale exp(G), exp(gl - G), gl
    static_assert(oV2 % 1024 == 0 && oQ % 1024 == 0 && oK % 1024 == 0 && oSt % 1024 == 0 && oV % 1024 == 0 &&
                      oA % 1024 == 0,
                  "swizzled tiles on 1024-byte boundaries");
    static_assert(!kOut || static_cast<size_t>(kChunk) * kLDO * 2 <= 2 * kQK, "output staging over q and k");
};

// S = q k^T (both K-major); q h_c and A' v (B MN-major: h_c and v lie [k][v] and [token][v]); the
// state update k'^T v (A MN-major too: k lies [token][k]), a K x 64 accumulator over K / 64 atoms.
using Mma = decltype(make_tiled_mma(SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::K>{}));
using MmaMN = decltype(make_tiled_mma(SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::MN>{}));
using MmaT = decltype(make_tiled_mma(SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::MN, GMMA::Major::MN>{}));

}  // namespace sgla_wg
