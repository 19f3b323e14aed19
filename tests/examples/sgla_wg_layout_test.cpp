// What examples/fla-chunk-simple-gla's wgmma versions (v4, v5) assume of their CuTe tiles and
// warpgroup MMAs (versions/sgla_wg_layout.hpp), checked on the host where no GPU can run the
// kernels: each tile a bijection onto its shared-memory space; a 16-byte cp.async group (8
// consecutive bf16 along the tile's contiguous axis, starting at a multiple of 8) contiguous and
// 16-byte aligned after the 128-byte swizzle, which is how the kernels fill the tiles; the
// accumulators of S = q k^T and of O = q h_c + A' v laid out alike (the kernels mask S and scale O
// through one coordinate map), each of the 64 x 64 elements held by exactly one of the 128
// threads; and v5's K x 64 state accumulator over K / 64 atoms, each element held once.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "sgla_wg_layout.hpp"

namespace {

using namespace sgla_wg;

// along_rows: the contiguous axis is the second coordinate (K-major tiles indexed (row, k)); else
// the first (MN-major tiles indexed (v, k)).
template <class Layout>
void expect_tile(const Layout& l, int rows, int cols, bool along_rows, const char* name) {
    std::vector<int> hits(static_cast<std::size_t>(rows * cols), 0);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const int off = l(r, c);
            ASSERT_GE(off, 0) << name;
            ASSERT_LT(off, rows * cols) << name;
            ++hits[static_cast<std::size_t>(off)];
        }
    for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << name << ": offset " << i;
    int broken = 0;
    for (int r = 0; r < rows; r += along_rows ? 1 : 8)
        for (int c = 0; c < cols; c += along_rows ? 8 : 1) {
            const int first = l(r, c);
            if (first % 8 != 0) ++broken;
            for (int i = 1; i < 8; ++i)
                if (l(along_rows ? r : r + i, along_rows ? c + i : c) != first + i) ++broken;
        }
    EXPECT_EQ(broken, 0) << name << ": 16-byte groups split or misaligned by the swizzle";
}

template <int K>
void expect_tiles() {
    using L = WgLayout<K>;
    expect_tile(typename L::QK{}, kChunk, K, true, "q, k");
    expect_tile(typename L::Hc{}, BVT, K, false, "h_c");
    expect_tile(typename L::Vt{}, BVT, kChunk, false, "v");
    expect_tile(typename L::At{}, kChunk, kChunk, true, "A'");
    EXPECT_LE(L::kBytes, 227u * 1024u);
    expect_tile(typename SegLayout<K, true>::KT{}, K, kChunk, false, "k as (k, token)");
    EXPECT_LE((SegLayout<K, true>::kBytes), 227u * 1024u);
    EXPECT_LT((SegLayout<K, false>::kBytes), (SegLayout<K, true>::kBytes));
}

template <int K>
void expect_state_accumulator() {
    MmaT t;
    auto coords = make_identity_tensor(Shape<Int<K>, Int<BVT>>{});
    std::vector<int> hits(static_cast<std::size_t>(K * BVT), 0);
    for (int thread = 0; thread < kWgThreads; ++thread) {
        auto c = t.get_thread_slice(thread).partition_C(coords);
        ASSERT_EQ(size(c), K * BVT / kWgThreads);
        for (int e = 0; e < size(c); ++e) ++hits[static_cast<std::size_t>(get<0>(c(e)) * BVT + get<1>(c(e)))];
    }
    for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i], 1) << "K " << K << ", element " << i;
}

}  // namespace

TEST(SglaWgLayoutTest, TilesAreBijectionsWithContiguous16ByteGroups) {
    expect_tiles<64>();
    expect_tiles<128>();
    expect_tiles<256>();
}

TEST(SglaWgLayoutTest, BothMmasShareOneAccumulatorMapCoveringEveryElementOnce) {
    Mma s;
    MmaMN o;
    auto coords = make_identity_tensor(Shape<Int<kChunk>, Int<BVT>>{});
    std::set<std::pair<int, int>> seen;
    int elements = 0;
    for (int t = 0; t < kWgThreads; ++t) {
        auto cs = s.get_thread_slice(t).partition_C(coords);
        auto co = o.get_thread_slice(t).partition_C(coords);
        ASSERT_EQ(size(cs), size(co));
        for (int e = 0; e < size(cs); ++e) {
            const std::pair<int, int> a{get<0>(cs(e)), get<1>(cs(e))}, b{get<0>(co(e)), get<1>(co(e))};
            ASSERT_EQ(a, b) << "thread " << t << " element " << e;
            seen.insert(a);
            ++elements;
        }
    }
    EXPECT_EQ(elements, kChunk * BVT);
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(kChunk * BVT));
}

TEST(SglaWgLayoutTest, TheStateAccumulatorHoldsEachOfItsKBy64ElementsOnce) {
    expect_state_accumulator<64>();
    expect_state_accumulator<128>();
    expect_state_accumulator<256>();
}
