// Unit under test: core/thread_pool — every task exactly once, nested and concurrent submits run
// inline, exceptions come back, the chunking rule, and the chunked byte helpers at chunk edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/thread_pool.hpp"

using kloop::thread_pool;

TEST(ThreadPoolTest, EveryIndexRunsExactlyOnce) {
    for (unsigned threads : {1u, 2u, 4u, 7u}) {
        thread_pool pool(threads);
        EXPECT_EQ(pool.get_thread_count(), threads);
        for (std::size_t n : {0u, 1u, 2u, 3u, 100u, 1000u}) {
            std::vector<std::atomic<int>> hits(n);
            pool.parallel_for(n, [&](std::size_t i) { hits[i].fetch_add(1); });
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n;
        }
    }
}

TEST(ThreadPoolTest, ThreadCountIsClamped) {
    EXPECT_EQ(thread_pool(0).get_thread_count(), 1u);
    EXPECT_EQ(thread_pool(1000).get_thread_count(), thread_pool::k_max_threads);
    EXPECT_GE(kloop::default_thread_count(), 1u);
    EXPECT_LE(kloop::default_thread_count(), thread_pool::k_max_threads);
}

TEST(ThreadPoolTest, ManyJobsInARowOnOnePool) {
    thread_pool pool(4);
    std::atomic<long> total{0};
    for (int job = 0; job < 500; ++job) pool.parallel_for(17, [&](std::size_t i) { total += static_cast<long>(i); });
    EXPECT_EQ(total.load(), 500L * (16 * 17 / 2));
}

TEST(ThreadPoolTest, NestedParallelForRunsInline) {
    thread_pool pool(4);
    std::vector<std::atomic<int>> hits(8 * 8);
    pool.parallel_for(8, [&](std::size_t i) {
        pool.parallel_for(8, [&](std::size_t j) { hits[i * 8 + j].fetch_add(1); });
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPoolTest, ConcurrentSubmittersBothComplete) {
    thread_pool pool(3);
    std::vector<std::atomic<int>> a(5000);
    std::vector<std::atomic<int>> b(5000);
    std::thread other([&] {
        for (int r = 0; r < 20; ++r) pool.parallel_for(a.size(), [&](std::size_t i) { a[i].fetch_add(1); });
    });
    for (int r = 0; r < 20; ++r) pool.parallel_for(b.size(), [&](std::size_t i) { b[i].fetch_add(1); });
    other.join();
    for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].load(), 20);
        ASSERT_EQ(b[i].load(), 20);
    }
}

TEST(ThreadPoolTest, ExceptionIsRethrownAndPoolStaysUsable) {
    thread_pool pool(4);
    EXPECT_THROW(pool.parallel_for(100,
                                   [](std::size_t i) {
                                       if (i == 37) throw std::runtime_error("task 37");
                                   }),
                 std::runtime_error);
    std::atomic<int> n{0};
    pool.parallel_for(10, [&](std::size_t) { ++n; });
    EXPECT_EQ(n.load(), 10);
}

TEST(ThreadPoolTest, ChunksCoverTheRangeWithFixedBoundaries) {
    constexpr std::int64_t c = kloop::k_chunk_elems;
    EXPECT_EQ(kloop::chunk_count(0), 0);
    EXPECT_EQ(kloop::chunk_count(1), 1);
    EXPECT_EQ(kloop::chunk_count(c - 1), 1);
    EXPECT_EQ(kloop::chunk_count(c), 1);
    EXPECT_EQ(kloop::chunk_count(c + 1), 2);
    for (unsigned threads : {1u, 3u}) {
        thread_pool pool(threads);
        const std::int64_t n = 3 * c + 5;
        std::vector<std::int64_t> owner(static_cast<std::size_t>(n), -1);
        kloop::parallel_for_chunks(pool, n, [&](std::int64_t chunk, std::int64_t begin, std::int64_t end) {
            EXPECT_EQ(begin, chunk * c);
            EXPECT_EQ(end, std::min(n, begin + c));
            for (std::int64_t i = begin; i < end; ++i) owner[static_cast<std::size_t>(i)] = chunk;
        });
        for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(owner[static_cast<std::size_t>(i)], i / c);
    }
}

TEST(ThreadPoolTest, FirstDifferenceAtChunkEdges) {
    constexpr std::size_t cb = kloop::k_chunk_bytes;
    const std::size_t bytes = 3 * cb + 11;
    std::vector<unsigned char> a(bytes, 7);
    for (std::size_t at : {std::size_t{0}, cb - 1, cb, cb + 1, 2 * cb + 5, bytes - 1}) {
        std::vector<unsigned char> b = a;
        b[at] = 8;
        if (at + cb < bytes) b[at + cb] = 9;  // a later difference in another chunk too
        EXPECT_EQ(kloop::parallel_first_difference(a.data(), b.data(), bytes), at);
    }
    EXPECT_EQ(kloop::parallel_first_difference(a.data(), a.data(), bytes), bytes);
    EXPECT_EQ(kloop::parallel_first_difference(a.data(), a.data(), 0), 0u);
}

TEST(ThreadPoolTest, CopyFillAndPatternMatchSerialResults) {
    const std::size_t bytes = 2 * kloop::k_chunk_bytes + 6;  // a multiple of 2, not of 4 or 64
    std::vector<unsigned char> src(bytes);
    for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    std::vector<unsigned char> dst(bytes, 0);
    kloop::parallel_memcpy(dst.data(), src.data(), bytes);
    EXPECT_EQ(dst, src);
    kloop::parallel_memset(dst.data(), 0xAB, bytes);
    EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](unsigned char v) { return v == 0xAB; }));
    const std::uint16_t pattern = 0x7FC0;
    kloop::parallel_pattern_fill(dst.data(), &pattern, 2, bytes);
    for (std::size_t i = 0; i < bytes; i += 2) {
        std::uint16_t v;
        std::memcpy(&v, dst.data() + i, 2);
        ASSERT_EQ(v, pattern) << i;
    }
    const std::uint64_t wide = 0x7FF8000000000000ull;
    std::vector<unsigned char> w(8 * 300001);
    kloop::parallel_pattern_fill(w.data(), &wide, 8, w.size());
    for (std::size_t i = 0; i < w.size(); i += 8) {
        std::uint64_t v;
        std::memcpy(&v, w.data() + i, 8);
        ASSERT_EQ(v, wide) << i;
    }
}
