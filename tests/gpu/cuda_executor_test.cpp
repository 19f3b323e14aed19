// Unit under test: backend/cuda/cuda_executor's copies — deferred uploads and fills land in the
// order they were made and are complete after settle() and before any later operation; a
// gathered download returns every span. Label `gpu` (the binary skips without a GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "backend/cuda/cuda_executor.hpp"

using kloop::backend::cuda::cuda_executor;
using kloop::runner::executor_base;

TEST(CudaExecutorCopyTest, DeferredWritesLandInOrderAndAreSeenByTheNextDownload) {
    cuda_executor ex(0);
    constexpr std::size_t n = 1 << 16;
    auto* dev = static_cast<unsigned char*>(ex.allocate(n));
    std::vector<unsigned char> src(n);
    std::iota(src.begin(), src.end(), 0);
    ex.fill_deferred(dev, 0x11, n);
    ex.upload_deferred(dev + 100, src.data() + 100, 50);
    // The source changes at once: the executor staged its own copy.
    std::fill(src.begin() + 100, src.begin() + 150, 0);
    ex.fill_deferred(dev + 120, 0x22, 10);  // after the upload: overwrites part of it
    std::vector<unsigned char> back(n);
    ex.download(back.data(), dev, n);
    for (std::size_t i = 0; i < n; ++i) {
        unsigned char want = 0x11;
        if (i >= 100 && i < 150) want = static_cast<unsigned char>(i);
        if (i >= 120 && i < 130) want = 0x22;
        ASSERT_EQ(back[i], want) << "byte " << i;
    }
    ex.release(dev);
}

TEST(CudaExecutorCopyTest, DeferredUploadsPastTheStagingSizeAllLand) {
    cuda_executor ex(0);
    // 16 MiB in 600 KiB pieces: more than the staging holds, so it is settled and reused.
    constexpr std::size_t piece = 600 << 10, pieces = 28;
    auto* dev = static_cast<unsigned char*>(ex.allocate(piece * pieces));
    std::vector<unsigned char> src(piece);
    for (std::size_t k = 0; k < pieces; ++k) {
        std::fill(src.begin(), src.end(), static_cast<unsigned char>(k + 1));
        ex.upload_deferred(dev + k * piece, src.data(), piece);
    }
    ex.settle();
    std::vector<unsigned char> back(piece * pieces);
    ex.download(back.data(), dev, back.size());
    for (std::size_t k = 0; k < pieces; ++k)
        for (std::size_t i = 0; i < piece; i += 4093) ASSERT_EQ(back[k * piece + i], k + 1) << "piece " << k;
    ex.release(dev);
}

TEST(CudaExecutorCopyTest, AGatheredDownloadReturnsEverySpan) {
    cuda_executor ex(0);
    constexpr std::size_t n = 1 << 20;
    auto* dev = static_cast<unsigned char*>(ex.allocate(n));
    std::vector<unsigned char> src(n);
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
    ex.upload(dev, src.data(), n);
    // Odd sizes and offsets, one span larger than the rest, one of zero bytes.
    const std::vector<std::pair<std::size_t, std::size_t>> where = {{0, 1}, {5, 255}, {4096, 257}, {1000, 0}, {n - 70000, 70000}};
    std::vector<std::vector<unsigned char>> got;
    std::vector<executor_base::download_span> spans;
    for (const auto& [off, bytes] : where) got.emplace_back(bytes + 1, 0xEE);
    for (std::size_t k = 0; k < where.size(); ++k) spans.push_back({got[k].data(), dev + where[k].first, where[k].second});
    ex.download_many(spans);
    for (std::size_t k = 0; k < where.size(); ++k) {
        for (std::size_t i = 0; i < where[k].second; ++i) ASSERT_EQ(got[k][i], src[where[k].first + i]) << "span " << k << " byte " << i;
        EXPECT_EQ(got[k][where[k].second], 0xEE) << "span " << k << ": a byte past its end was written";
    }
    ex.release(dev);
}

TEST(CudaExecutorCopyTest, TheFirstDifferenceIsFoundExactlyWhereverItIs) {
    cuda_executor ex(0);
    constexpr std::size_t n = (1 << 20) + 13;  // a tail past the last 16-byte vector
    auto* a = static_cast<unsigned char*>(ex.allocate(n + 16));
    auto* b = static_cast<unsigned char*>(ex.allocate(n + 16));
    auto* result = static_cast<std::uint64_t*>(ex.allocate(sizeof(std::uint64_t)));
    std::vector<unsigned char> src(n + 16);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 1);
    auto first_difference = [&](std::size_t shift, std::size_t bytes) {
        ex.first_difference_deferred(a + shift, b + shift, bytes, result);
        std::uint64_t r = 0;
        ex.download(&r, result, sizeof r);
        return r;
    };
    ex.upload(a, src.data(), src.size());
    ex.upload(b, src.data(), src.size());
    EXPECT_EQ(first_difference(0, n), ~std::uint64_t{0}) << "equal buffers";
    // Two differences: the lower one wins, in a vector, in the tail, and with unaligned pointers.
    for (const std::size_t at : {std::size_t{0}, std::size_t{17}, std::size_t{700001}, n - 1}) {
        ex.upload(b, src.data(), src.size());
        const unsigned char flip[1] = {static_cast<unsigned char>(src[at] ^ 0x40)};
        ex.upload(b + at, flip, 1);
        if (at + 5000 < n) ex.upload(b + at + 5000, flip, 1);
        EXPECT_EQ(first_difference(0, n), at);
        if (at >= 3) {
            EXPECT_EQ(first_difference(3, n - 3), at - 3) << "unaligned";
        }
    }
    ex.release(a);
    ex.release(b);
    ex.release(result);
}
