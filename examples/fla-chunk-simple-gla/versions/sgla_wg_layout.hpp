// sgla_wg_layout.hpp: v4's shared-memory tiles and warpgroup MMAs (CuTe), apart from the kernel so
// that a host compiler can check what the kernel assumes of them (tests/examples/
// sgla_wg_layout_test.cpp): every tile a bijection onto its space; 8 consecutive elements along a
// tile's contiguous axis (one 16-byte cp.async) contiguous in shared memory under the 128-byte
// swizzle; the swizzled tiles on 1024-byte boundaries; and the two MMAs' accumulators laid out
// alike, each 64 x 64 element held by exactly one thread.
#pragma once

#include <cute/tensor.hpp>

namespace sgla_v4 {

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
    static constexpr int LDO = BVT + 8;                        // the output's staging rows, over q and k
    static_assert(static_cast<size_t>(kChunk) * LDO * 2 <= 2 * kQK, "output staging");
    static_assert(oK % 1024 == 0 && oH % 1024 == 0 && oV % 1024 == 0 && oA % 1024 == 0,
                  "swizzled tiles on 1024-byte boundaries");
};

// S = q k^T (both K-major); q h_c and A' v (B MN-major: h_c and v lie [k][v] and [token][v]).
using Mma = decltype(make_tiled_mma(SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::K>{}));
using MmaMN = decltype(make_tiled_mma(SM90_64x64x16_F32BF16BF16_SS<GMMA::Major::K, GMMA::Major::MN>{}));

}  // namespace sgla_v4
